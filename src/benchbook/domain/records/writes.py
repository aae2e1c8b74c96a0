"""Single-record rules: create, update, and delete (soft, with the subtree on ``force``).
Restoring and purging records are set-based and live in :mod:`.rows`.

Every write keeps ``record_links`` in step and writes one audit entry per record changed
(docs/architecture.md *How history is written*): values in entries are keyed by field id.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import Row, Table, bindparam, delete, func, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from benchbook.domain import collector
from benchbook.domain.catalog.lookup import (
    SchemaCache,
    SchemaMeta,
    schema_names,
)
from benchbook.domain.context import Ctx, RecordChange
from benchbook.domain.errors import Conflict, NotFound, error_entry, missing
from benchbook.domain.history import entries as audit
from benchbook.domain.ids import new_id
from benchbook.domain.progress import Progress, silent
from benchbook.domain.records import referrers
from benchbook.domain.records.derived import follow_names, record_names
from benchbook.domain.records.names import follow_references
from benchbook.domain.records.rows import (
    check_parent,
    create_entry,
    edit_identity,
    entry_row,
    find_record,
    insert_entries,
    live_descendants,
    lock_collection,
    lock_live,
    soft_delete_records,
    value_changes,
)
from benchbook.domain.records.uniqueness import check_unique
from benchbook.domain.records.values import FILE_TYPES, REFERENCE_TYPES, as_list, coerce_data
from benchbook.persistence.tables import Record, RecordLink, utcnow

_RECORDS: Table = Record.__table__  # type: ignore[assignment]
_UPDATE_RECORD = update(_RECORDS).where(_RECORDS.c.id == bindparam("record_id"))  # SET: the columns given


def keep_links(session: Session, rec: Record, meta: SchemaMeta, *, new: bool = False) -> None:
    """Mirror ``rec``'s reference and file values into ``record_links``: its old links are
    dropped unless it is ``new`` or its schema never had a field that links (live or deleted)."""
    if not new and any(f.type in REFERENCE_TYPES or f.type in FILE_TYPES for f in meta.by_id.values()):
        session.execute(delete(RecordLink).where(RecordLink.source_id == rec.id))
    for f in meta.fields:
        if f.type in REFERENCE_TYPES or f.type in FILE_TYPES:
            kind = "record" if f.type in REFERENCE_TYPES else "file"
            for target in dict.fromkeys(as_list(rec.data.get(f.id))):
                session.add(RecordLink(source_id=rec.id, field_id=f.id, target_id=target, kind=kind))


def create_record(ctx: Ctx, collection_name: str, body: dict[str, Any], *,
                  cache: SchemaCache | None = None, record_id: str | None = None) -> Record:
    """Create a record from a RecordCreate ``body`` in collection ``collection_name``; its id is
    new, or ``record_id`` (sync: the id the record was made with on a device).

    Raises ``NotFound`` (collection, schema, parent or field unknown), ``Invalid`` (bad values),
    ``Conflict`` (schema not in the collection, wrong parent, uniqueness key taken).
    """
    s = ctx.session
    cache = cache or SchemaCache(s)
    collection = cache.collection_named(collection_name)  # a read-only copy, as the schema below
    if not lock_collection(s, collection.id, share=True):  # deleted while this waited for it
        raise NotFound(f"collection {collection_name!r} not found")
    try:
        schema = cache.schema_named(body["schema_name"]).schema
    except NotFound:
        raise missing(f"unknown schema {body['schema_name']!r}",
                      [error_entry(["body", "schema_name"], "unknown schema", "unknown_schema",
                                   body["schema_name"])]) from None
    if schema.name not in schema_names(s, collection.id):
        raise Conflict(f"collection {collection.name!r} is not for schema {schema.name!r}",
                       [error_entry(["body", "schema_name"], "schema not in this collection", "schema",
                                    schema.name)])
    meta = cache.meta(schema.id)
    parent = check_parent(s, meta, collection, body.get("parent_record_id"), ["body", "parent_record_id"])
    data = coerce_data(s, meta, collection, body.get("data") or {})
    now = utcnow()
    rec = Record(id=record_id or new_id(), dataset_id=collection.id, schema_id=schema.id,
                 parent_id=parent.id if parent else None, data=data, created_at=now, updated_at=now)
    rec.natural_name = record_names(s, cache, [rec], {collection.id: collection.timezone})[rec.id]
    s.add(rec)
    s.flush()
    check_unique(s, rec, schema, meta.fields)
    keep_links(s, rec, meta, new=True)
    ctx.changes.append(RecordChange("created", rec.id, schema.id, collection.id, {}, dict(data)))
    insert_entries(s, [create_entry(ctx, rec, meta, collection, now)])  # a statement now: before any later change
    return rec


def update_record(ctx: Ctx, record_id: str, body: dict[str, Any]) -> Record:
    """PATCH: ``data`` merged (a key set to null clears it); ``parent_record_id``, when present,
    moves the record. No entry is written when nothing changed."""
    s = ctx.session
    rec = find_record(s, record_id)
    cache = SchemaCache(s)
    meta = cache.meta(rec.schema_id)
    collection = cache.collection(rec.dataset_id)
    before = dict(rec.data)
    old_parent = rec.parent_id
    if "parent_record_id" in body:
        parent = check_parent(s, meta, collection, body["parent_record_id"], ["body", "parent_record_id"])
        rec.parent_id = parent.id if parent else None
    data = coerce_data(s, meta, collection, body.get("data") or {}, current=before)
    changes = value_changes(meta, before, data)
    if old_parent != rec.parent_id:
        changes.insert(0, {"field": "parent_record_id", "label": "parent", "dtype": "reference",
                           "before": old_parent, "after": rec.parent_id, "deleted": None})
    if not changes:
        return rec
    old_name = rec.natural_name
    probe = _Probe(rec.id, rec.schema_id, rec.parent_id, rec.dataset_id, data)
    values = {"data": data, "natural_name": record_names(s, cache, [probe], {collection.id: collection.timezone})[rec.id],
              "updated_at": utcnow()}
    s.flush()  # a move (parent_record_id) set above
    # one UPDATE without the ORM's unit of work (a quarter of a bare update's time); the record
    # object is told its new values, and check_unique and follow_names read them back
    s.execute(_UPDATE_RECORD, {"record_id": rec.id, **values})
    for key, value in values.items():
        set_committed_value(rec, key, value)
    check_unique(s, rec, meta.schema, meta.fields)
    keep_links(s, rec, meta)
    below = follow_names(s, cache, [rec.id])  # descendants whose names use its fields (same transaction)
    changed_ids = {c["field"] for c in changes}
    ident = edit_identity(rec, meta, collection)
    changed_ids.discard("parent_record_id")
    old = {**ident, "parent_record_id": old_parent, "data": {k: before.get(k) for k in changed_ids}}
    new = {**ident, "data": {k: data.get(k) for k in changed_ids}}
    ctx.changes.append(RecordChange("updated", rec.id, rec.schema_id, rec.dataset_id, before, dict(data)))
    # its entry first (changes: derived on read), then the names that show it through a reference
    renamed = [rec.id] if rec.natural_name != old_name else []
    follow_references(ctx, cache, [*renamed, *below], lead=entry_row(ctx, "update", rec, changes=[], old=old, new=new))
    return rec


class _Probe(NamedTuple):
    """A record's place and values about to be written, as :func:`record_names` reads them."""

    id: str
    schema_id: str
    parent_id: str | None
    dataset_id: str
    data: dict[str, Any]


@collector.paused()
def delete_records(ctx: Ctx, records: Sequence[Record | Row[Any]], *, force: bool,
                   always_batch: bool = False, references: str | None = None,
                   loc: tuple[str, ...] | None = ("query", "references"),
                   progress: Progress = silent) -> tuple[int, str | None]:
    """Soft-delete ``records`` (and, with ``force``, every live record below them) as one
    operation: a ``delete`` batch when several go, when references are cleared, or
    ``always_batch`` (for deletes of many). Live records outside the set that reference what
    goes follow :mod:`.referrers`: ``references`` ``keep`` (what ``force`` means when not given)
    or ``clear`` (each referrer updated in the same batch), else 409.
    Raises ``Conflict`` when live children not in the set block and ``force`` is off, or when
    live records reference the set and ``references`` is not given (``loc``: where the request
    gives it, None when it offers only ``force``); ``Invalid`` for another ``references``.
    Returns (how many were deleted, batch id or None for a single record without batch).
    Reports ``progress("deleting records", done, total)`` (records below included) as they go."""
    s = ctx.session
    chosen = {r.id for r in records}
    lock_live(s, list(chosen), share=False)  # creates under them wait, then see them deleted
    below = [r for r in live_descendants(s, list(chosen), lock=True) if r.id not in chosen]
    if below and not force:
        blocking = {r.parent_id for r in below if r.parent_id in chosen}
        raise Conflict(f"{len(blocking)} record(s) have live children ({len(below)} record(s) below them); "
                       "pass force=true to delete them too")
    everything = [*records, *below]
    gone = {r.id for r in everything}
    links = referrers.links_to(s, gone, besides=gone)
    clearing = referrers.decide(s, links, force=force, references=references, loc=loc,
                                what=_what(s, everything, {link.target_id for link in links}))
    if len(everything) == 1 and not always_batch and not clearing:
        soft_delete_records(ctx, everything, op=new_id())
        return 1, None
    with audit.server_batch(ctx, "delete", f"{len(everything)} records") as batch_id:
        if clearing:
            referrers.clear(ctx, links, update_record)
        soft_delete_records(ctx, everything, op=batch_id, progress=progress)
    return len(everything), batch_id


def _what(session: Session, records: Sequence[Record | Row[Any]], referenced: set[str]) -> str:
    """How the 409 of :func:`delete_records` names the referenced records among ``records``."""
    if len(records) == 1:
        name = SchemaCache(session).meta(records[0].schema_id).schema.name
        label = f" {records[0].natural_name!r}" if records[0].natural_name else ""
        return f"this {name!r} record{label}"
    return f"{len(referenced)} of the {len(records)} records being deleted"


def count_live(session: Session, collection_id: str) -> int:
    """Live records in a collection."""
    return session.scalar(select(func.count()).select_from(Record).where(
        Record.dataset_id == collection_id, Record.deleted_at.is_(None))) or 0
