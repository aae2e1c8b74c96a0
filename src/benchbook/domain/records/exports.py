"""The record exports: ``GET /collections/{name}/export.csv`` and ``POST /file-access/zip``'s
``records.csv`` (docs/decisions.md *CSV*: the column layout).

A reference or reference_list cell shows each target by its **label**, its natural name (issue
35 item 2), where that label imports back to the same record: the import resolves a typed value
by key or name (:mod:`benchbook.domain.records.references`), so a label is written only when
resolving it in the exported collection gives that target again; a target without a name, a
deleted one, one whose name another record within reach shares (or has as its key), and in a
reference_list a name holding a comma (the list's separator) are written as the id. The ids
themselves are a column choice: ``carrier.id`` (the derived column ``ref_field.id``), as
``carrier.natural_name`` is always the name.
"""
from __future__ import annotations

import csv
import io
import tempfile
import zipfile
from collections.abc import Collection as Sized
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import IO, Any

from sqlalchemy.orm import Session

from benchbook.domain.catalog.dtypes import REFERENCE_TYPES
from benchbook.domain.catalog.lookup import SchemaCache, find_collection
from benchbook.domain.errors import NotFound, error_entry, missing
from benchbook.domain.files import find_file
from benchbook.domain.records.derived import check_columns
from benchbook.domain.records.labels import targets
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.references import ReferenceResolver
from benchbook.domain.records.shapes import RecordResponse
from benchbook.domain.records.shaping import RecordShaper
from benchbook.domain.records.values import FILE_TYPES
from benchbook.persistence.tables import Collection, Field, Record

EXPORT_BASE = ["id", "schema_name", "parent_record_id", "natural_name"]
BATCH = 500
"""Records shaped and written together (one query each for their labels and their checks)."""


class ReferenceCells:
    """Reference cells of one export of ``collection`` as labels that import back (module
    docstring)."""

    def __init__(self, session: Session, cache: SchemaCache, collection: Collection) -> None:
        self.cache = cache
        self.resolver = ReferenceResolver(session, collection, cache)
        self.safe: dict[tuple[str, str], bool] = {}  # (field id, target id) → its label imports back

    def prepare(self, items: Sequence[RecordResponse], records: Sequence[Record]) -> None:
        """Check, for the shaped ``items`` of ``records`` about to be written, which labels
        import back: one resolution per reference field for the labels not seen yet."""
        asked: dict[str, tuple[Field, dict[str, set[str]]]] = {}
        for item, rec in zip(items, records, strict=True):
            labels = item.get("reference_labels") or {}
            for f in self.cache.meta(rec.schema_id).fields:
                if f.type not in REFERENCE_TYPES:
                    continue
                for target in targets(rec.data.get(f.id)):
                    label = labels.get(target)
                    if (f.id, target) in self.safe:
                        continue
                    if not label or (f.type == "reference_list" and "," in label):
                        self.safe[(f.id, target)] = False
                        continue
                    asked.setdefault(f.id, (f, {}))[1].setdefault(label, set()).add(target)
        for f, by_label in asked.values():
            answers = self.resolver.resolve(f, list(by_label))
            for label, wanted in by_label.items():
                for target in wanted:
                    self.safe[(f.id, target)] = answers.get(label) == target

    def cell(self, field: Field, value: Any, labels: dict[str, str | None]) -> Any:
        """The value of ``field`` to write: each target by its label where it imports back
        (:meth:`prepare` saw it), else by its id."""
        if value is None:
            return value
        shown = [labels.get(t) if self.safe.get((field.id, t)) else t for t in targets(value)]
        return shown if isinstance(value, list) else shown[0]


def export_rows(session: Session, collection_name: str, query: RecordQuery, *,
                columns: list[str] | None = None) -> Iterator[str]:
    """The CSV export (``GET /collections/{name}/export.csv``), streamed as text chunks.

    Default columns: ``id``, ``schema_name``, ``parent_record_id``, ``natural_name``, then each
    listed schema's fields in schema order (a field name shared by two schemas is one column).
    ``columns`` chooses them, in order, as :func:`export_columns` reads them (own fields, base
    columns, inherited fields and ``ref_field.target_field``). Lists join with ``, ``;
    references are labels where they import back (module docstring). Raises ``NotFound`` /
    ``Invalid`` (loc ``query.columns.i``) when the first chunk is taken."""
    collection = find_collection(session, collection_name)
    cache = SchemaCache(session)
    chosen, derived = export_columns(session, cache, collection.id, query, columns, loc=["query", "columns"])
    if columns is None:
        derived = []  # the default file holds each record's own values only, so it imports back as it is
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(chosen)
    shaper = RecordShaper(session, cache)
    cells = ReferenceCells(session, cache, collection)
    statement = query.select(session, collection).execution_options(yield_per=BATCH)
    batch: list[Record] = []

    def flush() -> str:
        write_rows(writer, shaper, batch, chosen, derived, cells=cells)
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    yield flush()
    for rec in session.scalars(statement):
        batch.append(rec)
        if len(batch) >= BATCH:
            yield flush()
    yield flush()


def export_columns(session: Session, cache: SchemaCache, collection_id: str, query: RecordQuery,
                   columns: list[str] | None, *, loc: list[str]) -> tuple[list[str], list[str]]:
    """``(chosen, derived)``: the export's columns in order and those of them read as derived
    columns. Default: :data:`EXPORT_BASE` then the listed schemas' own fields. A chosen column
    that some listed schema lacks as its own field is asked for as derived (an inherited value
    for those records; own values are read from ``data`` either way) and checked by
    :func:`check_columns`, which raises ``Invalid`` at ``loc + [position]`` for an unknown one."""
    metas = query.listed_metas(cache, collection_id)
    own = list(dict.fromkeys(f.name for m in metas for f in m.fields))
    chosen = list(dict.fromkeys(columns)) if columns else EXPORT_BASE + own
    derived = [c for c in chosen if c not in EXPORT_BASE and not all(c in m.by_name for m in metas)]
    if derived:
        check_columns(cache, metas, derived, loc=loc, positions=[chosen.index(c) for c in derived])
    return chosen, derived


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


ZIP_CSV = "records.csv"
ZIP_MISSING = "missing-files.txt"


def export_zip(session: Session, files_dir: Path, collection_name: str, query: RecordQuery, *,
               columns: list[str] | None = None, files: bool = True) -> IO[bytes]:
    """``POST /file-access/zip``: a temporary file (at position 0; the caller closes it, which
    removes it) holding a zip of ``records.csv`` and the records' files.

    The CSV has ``columns`` in order (default: :func:`export_rows`' columns): the base columns
    (:data:`EXPORT_BASE`), fields of the listed schemas, and derived columns (inherited fields,
    ``ref_field.target_field``; :mod:`benchbook.domain.records.derived`); references are labels
    where they import back (module docstring). With ``files`` each
    file a ``file``/``file_list`` column names is stored once as ``files/<sha256>/<file name>``;
    one the store no longer holds is listed in ``missing-files.txt``. Everything is named in the
    request's body, so a collection, column, schema or field that does not exist is a ``Conflict``
    (:func:`missing`, ``loc`` under ``body``), before anything is written."""
    try:
        collection = find_collection(session, collection_name)
        cache = SchemaCache(session)
        chosen, derived = export_columns(session, cache, collection.id, query, columns, loc=["body", "columns"])
        metas = query.listed_metas(cache, collection.id)
        statement = query.select(session, collection).execution_options(yield_per=BATCH)
    except NotFound as exc:
        raise missing(exc.detail, [{**e, "loc": ["body", *e["loc"][1:]]} for e in exc.errors]
                      or [error_entry(["body", "collection"], exc.detail, "not_found", collection_name)]) from None
    file_columns = {f.name for m in metas for f in m.fields if f.type in FILE_TYPES and f.name in chosen}
    shaper = RecordShaper(session, cache)
    cells = ReferenceCells(session, cache, collection)
    out = tempfile.TemporaryFile()  # noqa: SIM115 (returned open: the caller streams and closes it)
    shas: list[str] = []
    try:
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            with archive.open(ZIP_CSV, "w") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
                writer = csv.writer(text)
                writer.writerow(chosen)
                batch: list[Record] = []
                for rec in session.scalars(statement):
                    batch.append(rec)
                    if len(batch) >= BATCH:
                        write_rows(writer, shaper, batch, chosen, derived, file_columns, shas, cells=cells)
                write_rows(writer, shaper, batch, chosen, derived, file_columns, shas, cells=cells)
            if files:
                _zip_files(session, files_dir, archive, shas)
        out.seek(0)
        return out
    except BaseException:
        out.close()
        raise


def write_rows(writer: Any, shaper: RecordShaper, batch: list[Record], chosen: list[str], derived: list[str],
               file_columns: Sized[str] = (), shas: list[str] | None = None, *,
               cells: ReferenceCells | None = None) -> None:
    """Write ``batch`` as CSV rows of ``chosen`` and empty it; with ``shas``, note the sha256s
    its ``file_columns`` name; with ``cells``, reference values as :class:`ReferenceCells`
    writes them (else as ids)."""
    items = shaper.shape(batch, columns=derived or None)
    if cells is not None:
        cells.prepare(items, batch)
    for item, rec in zip(items, batch, strict=True):
        data, extra = item["data"], item.get("derived") or {}
        by_name = shaper.cache.meta(rec.schema_id).by_name
        labels = item.get("reference_labels") or {}
        base = {"id": item["id"], "schema_name": item["schema_name"],
                "parent_record_id": item["parent_record_id"], "natural_name": item["natural_name"]}
        row = []
        for column in chosen:
            value = base[column] if column in base else data[column] if column in data else extra.get(column)
            if shas is not None and column in file_columns and value:
                shas.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
            field = by_name.get(column) if column in data else None
            if cells is not None and field is not None and field.type in REFERENCE_TYPES:
                value = cells.cell(field, value, labels)
            row.append(_cell(value))
        writer.writerow(row)
    batch.clear()


def _zip_files(session: Session, files_dir: Path, archive: zipfile.ZipFile, shas: list[str]) -> None:
    missing = []
    for sha in dict.fromkeys(shas):
        try:
            stored, path = find_file(session, files_dir, sha)
        except NotFound:
            missing.append(sha)
            continue
        name = PurePosixPath(str(stored.filename or "").replace("\\", "/")).name or "file"
        archive.write(path, f"files/{sha}/{name}")
    if missing:
        archive.writestr(ZIP_MISSING, "".join(f"{sha}\n" for sha in missing))
