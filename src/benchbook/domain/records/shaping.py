"""Records as the API shows them (RecordResponse), built for a whole page in a fixed number
of queries: schema metadata is cached, reference labels, collections and child counts are
fetched once per page."""
from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.records.derived import derive
from benchbook.domain.records.values import REFERENCE_TYPES, as_list, shown_values
from benchbook.persistence.tables import Collection, Record, Schema


def ref(rec: Record, schema_name: str) -> dict[str, Any]:
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

    def _references(self, records: list[Record]) -> dict[str, tuple[str | None, str]]:
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

    def _child_schemas(self, schema_id: str) -> tuple[str, ...]:
        """Names of the live schemas whose parent is ``schema_id`` (:meth:`SchemaCache.child_names`)."""
        return self.cache.child_names(schema_id)

    def _child_counts(self, records: list[Record]) -> dict[str, dict[str, int]]:
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

    def shape(self, records: list[Record], *, child_counts: bool = False,
              columns: list[str] | None = None) -> list[dict[str, Any]]:
        """RecordResponse for each record, in order; ``derived`` holds the requested ``columns``
        that ``data`` cannot answer (see :mod:`benchbook.domain.records.derived`)."""
        refs = self._references(records)
        counts = self._child_counts(records) if child_counts else {}
        derived = (derive(self.session, self.cache, records, columns,
                          {r.dataset_id: self.collection(r.dataset_id).timezone for r in records})
                   if columns else {})
        out = []
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
            deleted_fields = [{"field_id": f.id, "name": f.name, "label": f.label, "type": f.type,
                               "value": rec.data[f.id]} for f in meta.deleted_fields if f.id in rec.data]
            out.append({
                "id": rec.id, "dataset_id": rec.dataset_id, "schema_name": meta.schema.name,
                "parent_record_id": rec.parent_id, "data": shown_values(meta, rec.data, coll.timezone),
                "natural_name": rec.natural_name, "created_at": rec.created_at.isoformat(),
                "updated_at": rec.updated_at.isoformat(), "collection": coll.name,
                "deleted_at": rec.deleted_at.isoformat() if rec.deleted_at else None,
                "deleted_fields": deleted_fields, "reference_labels": labels, "reference_collections": colls,
                "child_counts": counts.get(rec.id) if child_counts else None,
                "derived": derived.get(rec.id) if columns else None,
            })
        return out

    def _schema_name(self, schema_id: str) -> str:
        return self.cache.meta(schema_id).schema.name

    def single(self, rec: Record) -> dict[str, Any]:
        """RecordResponse of a single fetch: adds ``ancestors`` (root first) and, for a live
        record, ``deleted_above`` (deleted records above it, topmost first)."""
        body = self.shape([rec], child_counts=True)[0]
        chain: list[Record] = []
        current = rec
        while current.parent_id:
            parent = self.session.get(Record, current.parent_id)
            if parent is None:
                break
            chain.append(parent)
            current = parent
        chain.reverse()
        names = {r.schema_id: self._schema_name(r.schema_id) for r in chain}
        body["ancestors"] = [ref(r, names[r.schema_id]) for r in chain]
        body["deleted_above"] = ([ref(r, names[r.schema_id]) for r in chain if r.deleted_at is not None]
                                 if rec.deleted_at is None else None)
        return body
