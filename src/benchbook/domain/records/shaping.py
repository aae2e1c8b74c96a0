"""Records as the API shows them (RecordResponse), built for a whole page in a fixed number
of queries: schema metadata is cached, reference labels, collections and child counts are
fetched once per page."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, bindparam, func, literal_column, select
from sqlalchemy.orm import Session, aliased

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.errors import NotFound
from benchbook.domain.records.derived import derive
from benchbook.domain.records.rows import Shaped, whole_record_id
from benchbook.domain.records.shapes import DeletedFieldValue, FileLabel, RecordRef, RecordResponse
from benchbook.domain.records.values import FILE_TYPES, REFERENCE_TYPES, as_list, shown_values
from benchbook.persistence.tables import Collection, Record, Schema, StoredFile

LINEAGE_MOST = 1000
"""How far up :func:`lineage` walks: parents follow the schemas' own chain, so only a damaged
database (a cycle of parents) could reach it."""


def _lineage_statement() -> Any:
    columns = ("id", "dataset_id", "schema_id", "parent_id", "data", "natural_name", "created_at",
               "updated_at", "deleted_at")
    records = Record.__table__
    start = (select(*(records.c[c] for c in columns), literal_column("0").label("depth"))
             .where(records.c.id == bindparam("record_id")).cte("lineage", recursive=True))
    up = aliased(records)
    step = (select(*(up.c[c] for c in columns), start.c.depth + literal_column("1"))
            .join(start, up.c.id == start.c.parent_id).where(start.c.depth < LINEAGE_MOST))
    walk = start.union_all(step)
    return select(*(walk.c[c] for c in columns)).order_by(walk.c.depth.desc())


_LINEAGE = _lineage_statement()


def lineage(session: Session, record_id: str) -> Sequence[Row[Any]]:
    """The record with the whole id ``record_id`` and its ancestors, root first (the record
    last), deleted or not, in one statement (a recursive walk up ``parent_id``); empty when no
    record has that id. Rows, not ORM records: read-only, with the columns
    :meth:`RecordShaper.shape` reads (``id``, ``dataset_id``, ``schema_id``, ``parent_id``,
    ``data``, ``natural_name``, ``created_at``, ``updated_at``, ``deleted_at``)."""
    return session.execute(_LINEAGE, {"record_id": record_id}).all()


def ref(rec: Shaped, schema_name: str) -> RecordRef:
    """A record reference ``{id, schema_name, natural_name}``."""
    return {"id": rec.id, "schema_name": schema_name, "natural_name": rec.natural_name}


class RecordShaper:
    """Shapes records for responses; one instance per request."""

    def __init__(self, session: Session, cache: SchemaCache | None = None) -> None:
        self.session = session
        self.cache = cache or SchemaCache(session)

    def collection(self, collection_id: str) -> Collection:
        """The collection row (a read-only copy, :meth:`SchemaCache.collection`)."""
        return self.cache.collection(collection_id)

    def _references(self, records: Sequence[Shaped]) -> dict[str, tuple[str | None, str]]:
        targets: set[str] = set()
        for rec in records:
            meta = self.cache.meta(rec.schema_id)
            for f in meta.fields:
                if f.type in REFERENCE_TYPES:
                    targets.update(as_list(rec.data.get(f.id)))
        if not targets:
            return {}
        rows = self.session.execute(select(Record.id, Record.natural_name, Collection.name)
                                    .join(Collection, Collection.id == Record.dataset_id)
                                    .where(Record.id.in_(targets))).all()
        return {r[0]: (r[1], r[2]) for r in rows}

    def _files(self, records: Sequence[Shaped]) -> dict[str, FileLabel]:
        """``{sha256: {filename, size, content_type}}`` of every file value of ``records`` the
        store holds, in one query (none when no record has a file value)."""
        hashes: set[str] = set()
        for rec in records:
            for f in self.cache.meta(rec.schema_id).fields:
                if f.type in FILE_TYPES:
                    hashes.update(str(v) for v in as_list(rec.data.get(f.id)))
        if not hashes:
            return {}
        rows = self.session.execute(select(StoredFile.sha256, StoredFile.filename, StoredFile.size, StoredFile.content_type)
                                    .where(StoredFile.sha256.in_(hashes)))
        return {sha: {"filename": name, "size": size, "content_type": kind} for sha, name, size, kind in rows}

    def _child_schemas(self, schema_id: str) -> tuple[str, ...]:
        """Names of the live schemas whose parent is ``schema_id`` (:meth:`SchemaCache.child_names`)."""
        return self.cache.child_names(schema_id)

    def _child_counts(self, records: Sequence[Shaped]) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for rec in records:
            counts[rec.id] = dict.fromkeys(self._child_schemas(rec.schema_id), 0)
        ids = [r.id for r in records if counts[r.id]]  # records of a schema without children have none
        if ids:
            rows = self.session.execute(
                select(Record.parent_id, Schema.name, func.count()).join(Schema, Schema.id == Record.schema_id)
                .where(Record.parent_id.in_(ids), Record.deleted_at.is_(None))
                .group_by(Record.parent_id, Schema.name)).all()
            for parent_id, schema_name, n in rows:
                counts[str(parent_id)][schema_name] = n
        return counts

    def shape(self, records: Sequence[Shaped], *, child_counts: bool = False,
              columns: list[str] | None = None) -> list[RecordResponse]:
        """RecordResponse for each record, in order; ``derived`` holds the requested ``columns``
        that ``data`` cannot answer (see :mod:`benchbook.domain.records.derived`);
        ``reference_labels`` names the records its references point at and ``file_labels`` the
        files its file values hold (``{sha256: {filename, size, content_type}}``), so a reader
        sees names, never ids or hashes."""
        refs = self._references(records)
        files = self._files(records)
        counts = self._child_counts(records) if child_counts else {}
        derived = (derive(self.session, self.cache, records, columns,
                          {r.dataset_id: self.collection(r.dataset_id).timezone for r in records})
                   if columns else {})
        out: list[RecordResponse] = []
        for rec in records:
            meta = self.cache.meta(rec.schema_id)
            coll = self.collection(rec.dataset_id)
            labels: dict[str, str | None] = {}
            colls: dict[str, str] = {}
            for f in meta.fields:
                if f.type in REFERENCE_TYPES:
                    for target in as_list(rec.data.get(f.id)):
                        name, coll_name = refs.get(target, (None, None))
                        labels[target] = name
                        if coll_name is not None and coll_name != coll.name:
                            colls[target] = coll_name
            file_labels = {str(v): files[str(v)] for f in meta.fields if f.type in FILE_TYPES
                           for v in as_list(rec.data.get(f.id)) if str(v) in files}
            deleted_fields: list[DeletedFieldValue] = [{"field_id": f.id, "name": f.name, "label": f.label, "type": f.type,
                               "value": rec.data[f.id]} for f in meta.deleted_fields if f.id in rec.data]
            out.append({
                "id": rec.id, "dataset_id": rec.dataset_id, "schema_name": meta.schema.name,
                "parent_record_id": rec.parent_id, "data": shown_values(meta, rec.data, coll.timezone),
                "natural_name": rec.natural_name, "created_at": rec.created_at.isoformat(),
                "updated_at": rec.updated_at.isoformat(), "collection": coll.name,
                "deleted_at": rec.deleted_at.isoformat() if rec.deleted_at else None,
                "deleted_fields": deleted_fields, "reference_labels": labels, "reference_collections": colls,
                "file_labels": file_labels, "child_counts": counts.get(rec.id) if child_counts else None,
                "derived": derived.get(rec.id) if columns else None,
            })
        return out

    def _schema_name(self, schema_id: str) -> str:
        return self.cache.meta(schema_id).schema.name

    def single(self, rec: Shaped, ancestors: Sequence[Shaped] | None = None) -> RecordResponse:
        """RecordResponse of a single fetch: adds ``ancestors`` (root first) and, for a live
        record, ``deleted_above`` (deleted records above it, topmost first). ``ancestors``:
        ``rec``'s, root first, when the caller has them (:func:`lineage`); else read in one
        statement."""
        body = self.shape([rec], child_counts=True)[0]
        if ancestors is None:
            ancestors = lineage(self.session, rec.parent_id) if rec.parent_id else ()
        refs = [(r, ref(r, self._schema_name(r.schema_id))) for r in ancestors]
        body["ancestors"] = [shown for _, shown in refs]
        body["deleted_above"] = ([shown for r, shown in refs if r.deleted_at is not None]
                                 if rec.deleted_at is None else None)
        return body


def single_record(session: Session, record_id: str) -> RecordResponse:
    """RecordResponse of ``GET /records/{record_id}`` (OpenAPI ``records.get_record``): the record
    with that id or unique id prefix, deleted or not, with its ancestors; a whole id costs one
    statement for the record and its ancestors, plus the catalog token and, for a record whose
    schema has child schemas, its child counts. Raises ``NotFound`` or ``Invalid`` (ambiguous
    prefix)."""
    whole, _ = whole_record_id(session, record_id, live=None)
    rows = lineage(session, whole)
    if not rows:
        raise NotFound(f"record {whole} not found")
    return RecordShaper(session).single(rows[-1], rows[:-1])
