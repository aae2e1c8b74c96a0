"""The content store: files kept once by sha256 under ``files/ab/abcdef…`` (DESIGN.md)."""
from __future__ import annotations

import hashlib
import mimetypes
import os
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict, NotFound
from benchbook.persistence.tables import Record, RecordLink, Schema, StoredFile

CHUNK = 1 << 20


def content_path(files_dir: Path, sha256: str) -> Path:
    """Where the content of ``sha256`` lives."""
    return files_dir / sha256[:2] / sha256


def store(session: Session, files_dir: Path, stream: BinaryIO, filename: str) -> StoredFile:
    """Hash ``stream`` while copying it to a temporary file, then move it into place (once per
    content) and record it. Returns the row (``sha256``, ``filename``, ``size``)."""
    files_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp = tempfile.mkstemp(dir=files_dir, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
        sha = digest.hexdigest()
        target = content_path(files_dir, sha)
        target.parent.mkdir(exist_ok=True)
        if target.exists():
            os.unlink(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    row = session.get(StoredFile, sha)
    if row is None:
        row = StoredFile(sha256=sha, filename=filename or sha, size=size,
                         content_type=mimetypes.guess_type(filename or "")[0])
        session.add(row)
    return row


def find_file(session: Session, files_dir: Path, sha256: str) -> tuple[StoredFile, Path]:
    """The stored file and its content path; raises ``NotFound``."""
    row = session.get(StoredFile, sha256.lower())
    path = content_path(files_dir, sha256.lower())
    if row is None or not path.is_file():
        raise NotFound(f"file {sha256} not found")
    return row, path


def file_response(row: StoredFile) -> dict[str, Any]:
    """FileResponse ``{sha256, filename, size}``."""
    return {"sha256": row.sha256, "filename": row.filename, "size": row.size}


def file_info(session: Session, files_dir: Path, sha256: str) -> dict[str, Any]:
    """FileInfoResponse: the file plus the live records whose file fields hold it."""
    row, _ = find_file(session, files_dir, sha256)
    users = session.execute(select(Record.id, Schema.name, Record.natural_name)
                            .join(RecordLink, RecordLink.source_id == Record.id)
                            .join(Schema, Schema.id == Record.schema_id)
                            .where(RecordLink.target_id == row.sha256, RecordLink.kind == "file",
                                   Record.deleted_at.is_(None)).distinct()).all()
    return {**file_response(row), "content_type": row.content_type,
            "records": [{"id": i, "schema_name": n, "natural_name": nn} for i, n, nn in users]}


def delete_file(session: Session, files_dir: Path, sha256: str) -> Path:
    """Forget a file no record (live or deleted) holds; returns its content path, which the caller
    removes once the transaction has committed. Raises ``NotFound``, ``Conflict``."""
    row, path = find_file(session, files_dir, sha256)
    users = session.scalar(select(func.count(func.distinct(RecordLink.source_id))).where(
        RecordLink.target_id == row.sha256, RecordLink.kind == "file")) or 0
    if users:
        raise Conflict(f"file {row.sha256} is still held by {users} record(s); purge them first")
    session.delete(row)
    return path
