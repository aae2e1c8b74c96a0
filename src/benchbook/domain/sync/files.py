"""Files by sha256 between a device and the authority (docs/sync.md *Files*).

A file value is its content's sha256, so content moves once and is checked on arrival: before a
push the device asks which of the files its entries cite the authority lacks
(``POST /sync/files/missing``) and uploads only those; after a pull it fetches the files its
records link to and it lacks. Content that arrives is written to a temporary file in the files
folder that hashes as it is written (:class:`benchbook.domain.files.Spool`) and replaces nothing
until its hash is the one named: a mismatch is a 422 and nothing is stored.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain import files as store
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.errors import BenchbookError, Invalid, error_entry
from benchbook.domain.file_shapes import FileResponse
from benchbook.domain.records.values import FILE_TYPES, as_list
from benchbook.persistence.tables import RecordLink, StoredFile

MAX_ASKED = 1000
"""sha256s per ``POST /sync/files/missing``."""


def cited(session: Session, entries: list[dict[str, Any]]) -> set[str]:
    """The sha256s the file and file-list values of record ``entries`` (wire entries) hold."""
    cache, out = SchemaCache(session), set[str]()
    for entry in entries:
        data = (entry.get("new_data") or {}).get("data") or {}
        if entry.get("entity_type") != "record" or not data or not entry.get("schema_id"):
            continue
        try:
            meta = cache.meta(entry["schema_id"])
        except BenchbookError:
            continue
        for field_id, value in data.items():
            field = meta.by_id.get(field_id)
            if field is not None and field.type in FILE_TYPES:
                out.update(str(v) for v in as_list(value))
    return out


def missing(session: Session, files_dir: Path, shas: list[str] | set[str]) -> list[str]:
    """Those of ``shas`` this project lacks (no row, or no content on disk), sorted."""
    wanted = sorted({s.lower() for s in shas})
    held = set(session.scalars(select(StoredFile.sha256).where(StoredFile.sha256.in_(wanted)))) if wanted else set()
    return [s for s in wanted if s not in held or not store.content_path(files_dir, s).is_file()]


def linked_but_absent(session: Session, files_dir: Path) -> list[str]:
    """The sha256s this project's records link to and it lacks: what a device fetches."""
    linked = set(session.scalars(select(RecordLink.target_id).where(RecordLink.kind == "file").distinct()))
    return missing(session, files_dir, linked) if linked else []


def accept(session: Session, files_dir: Path, sha256: str, spool: Any, filename: str) -> FileResponse:
    """Keep uploaded content (a :class:`~benchbook.domain.files.Spool` of ``files_dir``) named
    ``sha256``: ``{sha256, filename, size}``. Raises ``Invalid`` (422), the spool removed, when
    its hash is another."""
    if spool.sha256 != sha256.lower():
        spool.close()
        raise Invalid(f"the content's sha256 is {spool.sha256}, not {sha256.lower()}: nothing was stored",
                      [error_entry(["path", "sha256"], "content does not match", "sha256_mismatch", sha256)])
    return store.file_response(store.store(session, files_dir, spool, filename))
