"""Record rules: create, update, delete (soft, with the subtree on ``force``), restore, purge.

Every write keeps ``record_links`` in step and writes one audit entry per record changed
(spec *Audit*): values in entries are keyed by field id.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Row, delete, func, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.collections import find_collection, schema_names
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta, find_schema
from benchbook.domain.catalog.naming import natural_name, placeholders
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, NotFound, error_entry
from benchbook.domain.history import entries as audit
from benchbook.domain.ids import new_id, resolve_prefix
from benchbook.domain.records.uniqueness import check_unique
from benchbook.domain.records.values import FILE_TYPES, REFERENCE_TYPES, as_list, coerce_data
from benchbook.persistence.tables import Collection, Record, RecordLink, utcnow


def find_record(session: Session, record_id: str, *, live: bool | None = True) -> Record:
    """The record with id (or unique prefix) ``record_id``; ``live`` True → live only, None → any.
    Raises ``NotFound`` or ``Invalid`` (ambiguous prefix)."""
    conds: list[ColumnElement[bool]] = [Record.deleted_at.is_(None)] if live else []
    rid = resolve_prefix(session, Record, record_id, what="record", where=conds)
    rec = session.get(Record, rid)
    assert rec is not None
    return rec


def shown_values(meta: SchemaMeta, data: dict[str, Any], tz: str | None) -> dict[str, Any]:
    """Stored values (by field id) as shown (by field name, datetimes in the display zone)."""
    from benchbook.domain.catalog.dtypes import display_value
    return {f.name: display_value(f.type, f.restrictions or {}, data[f.id], tz=tz)
            for f in meta.fields if f.id in data}


def _name(meta: SchemaMeta, data: dict[str, Any], tz: str | None) -> str | None:
    """The record's natural name; only the values the name can use are worked out (the
    template's placeholders, else the string fields)."""
    from benchbook.domain.catalog.dtypes import display_value
    template = meta.schema.display_template
    used = set(placeholders(template)) if template else {f.name for f in meta.fields if f.type == "string"}
    shown = {f.name: display_value(f.type, f.restrictions or {}, data[f.id], tz=tz)
             for f in meta.fields if f.name in used and f.id in data}
    return natural_name(template, shown, {f.name: f.type for f in meta.fields})


def snapshot(rec: Record | Row[Any], meta: SchemaMeta, collection: Collection | None = None) -> dict[str, Any]:
    """The whole record as kept in history (``old_data`` of a delete, ``new_data`` of a create)."""
    return {**identity(rec, meta, collection), "data": dict(rec.data)}


def identity(rec: Record | Row[Any], meta: SchemaMeta, collection: Collection | None = None) -> dict[str, Any]:
    """What identifies a record in history: id, schema, where it sits, its name."""
    return {"id": rec.id, "schema_name": meta.schema.name, "dataset_id": rec.dataset_id,
            "collection": collection.name if collection else None, "parent_record_id": rec.parent_id,
            "natural_name": rec.natural_name}


def value_changes(meta: SchemaMeta, before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """AuditChange entries, schema order, for every field id whose value differs."""
    specs = meta.change_fields
    out = [{"field": fid, "label": label, "dtype": dtype, "before": old, "after": new, "deleted": deleted}
           for fid, label, dtype, deleted in specs if (old := before.get(fid)) != (new := after.get(fid))]
    unknown = (before.keys() | after.keys()) - meta.change_ids
    out += [{"field": k, "label": None, "dtype": None, "before": before.get(k), "after": after.get(k),
             "deleted": True} for k in sorted(unknown) if before.get(k) != after.get(k)]
    return out


def _sync_links(session: Session, rec: Record, meta: SchemaMeta) -> None:
    session.execute(delete(RecordLink).where(RecordLink.source_id == rec.id))
    for f in meta.fields:
        if f.type in REFERENCE_TYPES or f.type in FILE_TYPES:
            kind = "record" if f.type in REFERENCE_TYPES else "file"
            for target in dict.fromkeys(as_list(rec.data.get(f.id))):
                session.add(RecordLink(source_id=rec.id, field_id=f.id, target_id=target, kind=kind))


def _check_parent(session: Session, meta: SchemaMeta, collection: Collection, parent_id: str | None,
                  loc: list[str | int]) -> Record | None:
    parent_schema = meta.parent
    if parent_schema is None:
        if parent_id:
            raise Invalid(f"schema {meta.schema.name!r} is top-level: its records have no parent",
                          [error_entry(loc, "top-level schema takes no parent", "parent", parent_id)])
        return None
    if not parent_id:
        raise Invalid(f"a {meta.schema.name!r} record needs a parent {parent_schema.name!r} record",
                      [error_entry(loc, "parent record required", "missing", None)])
    try:
        parent = find_record(session, parent_id)
    except NotFound:
        parent = None
    check_parent_row(meta, collection, parent_id, parent, loc)
    assert parent is not None
    return parent


def check_parent_row(meta: SchemaMeta, collection: Collection, given: str, parent: Any, loc: list[str | int]) -> None:
    """Raise ``Invalid`` unless ``parent`` (anything with ``id``, ``schema_id`` and
    ``dataset_id``; None when no live record has the ``given`` id) can be the parent of a
    record of ``meta`` in ``collection``."""
    assert meta.parent is not None
    if parent is None:
        raise Invalid(f"parent record {given} does not exist or is deleted",
                      [error_entry(loc, "unknown parent record", "parent", given)])
    if parent.schema_id != meta.parent.id:
        raise Invalid(f"parent record {parent.id} is not a {meta.parent.name!r} record",
                      [error_entry(loc, f"parent must be a {meta.parent.name!r} record", "parent", given)])
    if parent.dataset_id != collection.id:
        raise Invalid(f"parent record {parent.id} is in another collection",
                      [error_entry(loc, "parent must be in the same collection", "parent", given)])


def create_record(ctx: Ctx, dataset_name: str, body: dict[str, Any], *,
                  cache: SchemaCache | None = None) -> Record:
    """Create a record from a RecordCreate ``body`` in collection ``dataset_name``.

    Raises ``NotFound`` (collection), ``Invalid`` (unknown schema, schema not in the collection,
    wrong parent, bad values), ``Conflict`` (uniqueness key taken).
    """
    s = ctx.session
    cache = cache or SchemaCache(s)
    collection = find_collection(s, dataset_name)
    try:
        schema = find_schema(s, body["schema_name"])
    except NotFound:
        raise Invalid(f"unknown schema {body['schema_name']!r}",
                      [error_entry(["body", "schema_name"], "unknown schema", "unknown_schema",
                                   body["schema_name"])]) from None
    if schema.name not in schema_names(s, collection.id):
        raise Invalid(f"collection {collection.name!r} is not for schema {schema.name!r}",
                      [error_entry(["body", "schema_name"], "schema not in this collection", "schema",
                                   schema.name)])
    meta = cache.meta(schema.id)
    parent = _check_parent(s, meta, collection, body.get("parent_record_id"), ["body", "parent_record_id"])
    data = coerce_data(s, meta, collection, body.get("data") or {})
    now = utcnow()
    rec = Record(id=new_id(), dataset_id=collection.id, schema_id=schema.id,
                 parent_id=parent.id if parent else None, data=data,
                 natural_name=_name(meta, data, collection.timezone), created_at=now, updated_at=now)
    s.add(rec)
    s.flush()
    check_unique(s, rec, schema, meta.fields)
    _sync_links(s, rec, meta)
    audit.write(ctx, "create", "record", rec.id, changes=value_changes(meta, {}, data),
                new=snapshot(rec, meta, collection), dataset_id=collection.id, schema_id=schema.id)
    return rec


def update_record(ctx: Ctx, record_id: str, body: dict[str, Any]) -> Record:
    """PATCH: ``data`` merged (a key set to null clears it); ``parent_record_id``, when present,
    moves the record. No entry is written when nothing changed."""
    s = ctx.session
    rec = find_record(s, record_id)
    meta = SchemaCache(s).meta(rec.schema_id)
    collection = s.get(Collection, rec.dataset_id)
    assert collection is not None
    before = dict(rec.data)
    old_parent = rec.parent_id
    if "parent_record_id" in body:
        parent = _check_parent(s, meta, collection, body["parent_record_id"], ["body", "parent_record_id"])
        rec.parent_id = parent.id if parent else None
    data = coerce_data(s, meta, collection, body.get("data") or {}, current=before)
    changes = value_changes(meta, before, data)
    if old_parent != rec.parent_id:
        changes.insert(0, {"field": "parent_record_id", "label": "parent", "dtype": "reference",
                           "before": old_parent, "after": rec.parent_id, "deleted": None})
    if not changes:
        return rec
    rec.data = data
    rec.natural_name = _name(meta, data, collection.timezone)
    rec.updated_at = utcnow()
    s.flush()
    check_unique(s, rec, meta.schema, meta.fields)
    _sync_links(s, rec, meta)
    changed_ids = {c["field"] for c in changes}
    ident = identity(rec, meta, collection)
    changed_ids.discard("parent_record_id")
    old = {**ident, "parent_record_id": old_parent, "data": {k: before.get(k) for k in changed_ids}}
    new = {**ident, "data": {k: data.get(k) for k in changed_ids}}
    audit.write(ctx, "update", "record", rec.id, changes=changes, old=old, new=new, dataset_id=rec.dataset_id,
                schema_id=rec.schema_id)
    return rec


ROW_COLUMNS = (Record.id, Record.dataset_id, Record.schema_id, Record.parent_id, Record.natural_name,
               Record.delete_op, Record.deleted_at)
"""What history and the set-based writes read of a record (``bulk.py``), without its values."""


def record_rows(session: Session, *conds: Any, data: bool = True) -> list[Row[Any]]:
    """Records matching ``conds`` as plain rows (attributes ``id``, ``dataset_id``, ``schema_id``,
    ``parent_id``, ``natural_name``, ``delete_op``, ``deleted_at`` and, with ``data``, ``data``):
    for changing many records at once, loading no ORM objects (several times faster)."""
    columns = (*ROW_COLUMNS, Record.data) if data else ROW_COLUMNS
    return list(session.execute(select(*columns).where(*conds)))


def live_descendants(session: Session, ids: list[str]) -> list[Row[Any]]:
    """Live records below any of ``ids`` at any depth (breadth first, parents before children),
    as :func:`record_rows`."""
    out: list[Row[Any]] = []
    frontier = list(ids)
    while frontier:
        kids = []
        for start in range(0, len(frontier), 500):
            kids += record_rows(session, Record.parent_id.in_(frontier[start:start + 500]),
                                Record.deleted_at.is_(None))
        out += kids
        frontier = [k.id for k in kids]
    return out


def soft_delete_records(ctx: Ctx, records: Sequence[Record | Row[Any]], *, op: str) -> None:
    """Mark ``records`` deleted by operation ``op``, each with a ``delete`` entry listing the
    values lost (set-based: :func:`benchbook.domain.records.bulk.mark_deleted`)."""
    from benchbook.domain.records.bulk import mark_deleted  # bulk builds on this module
    mark_deleted(ctx, records, op=op)


def delete_records(ctx: Ctx, records: Sequence[Record | Row[Any]], *, force: bool,
                   always_batch: bool = False) -> tuple[int, str | None]:
    """Soft-delete ``records`` (and, with ``force``, every live record below them) as one
    operation: a ``delete`` batch when several go (or ``always_batch``, for deletes of many).
    Raises ``Conflict`` when live children not in the set block and ``force`` is off.
    Returns (how many were deleted, batch id or None for a single record without batch)."""
    chosen = {r.id for r in records}
    below = [r for r in live_descendants(ctx.session, list(chosen)) if r.id not in chosen]
    if below and not force:
        blocking = {r.parent_id for r in below if r.parent_id in chosen}
        raise Conflict(f"{len(blocking)} record(s) have live children ({len(below)} record(s) below them); "
                       "pass force=true to delete them too")
    everything = [*records, *below]
    if len(everything) == 1 and not always_batch:
        soft_delete_records(ctx, everything, op=new_id())
        return 1, None
    with audit.server_batch(ctx, "delete", f"{len(everything)} records") as batch_id:
        soft_delete_records(ctx, everything, op=batch_id)
    return len(everything), batch_id


def restore_records(ctx: Ctx, records: Sequence[Record | Row[Any]], *, cache: SchemaCache | None = None) -> None:
    """Bring ``records`` back to life, each with a ``restore`` entry (lists no values);
    set-based: :func:`benchbook.domain.records.bulk.mark_restored`."""
    from benchbook.domain.records.bulk import mark_restored
    mark_restored(ctx, records, cache or SchemaCache(ctx.session))


def purge_records(ctx: Ctx, records: list[Record]) -> None:
    """Remove ``records`` for good (children first), each with a ``purge`` entry listing the values lost;
    set-based: :func:`benchbook.domain.records.bulk.remove_records`."""
    if not records:
        return
    from benchbook.domain.records.bulk import remove_records
    remove_records(ctx, records)


def count_live(session: Session, collection_id: str) -> int:
    """Live records in a collection."""
    return session.scalar(select(func.count()).select_from(Record).where(
        Record.dataset_id == collection_id, Record.deleted_at.is_(None))) or 0
