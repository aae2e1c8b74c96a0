"""Bringing deleted records back, and purging them (docs/deletes.md *Restoring*; OpenAPI:
``POST /records/{record_id}/restore``, ``RestorePlanResponse``).

A record comes back with what was deleted together with it *below* it (same ``delete_op``),
never with what was deleted on its own earlier. A record under a deleted parent is blocked
until the parent returns: ``with_parents`` brings each deleted ancestor back by itself,
``only_this`` brings back the record and its deleted ancestors only (``parents_needed + 1``).
A record whose uniqueness key was taken meanwhile cannot return (``conflict``, 409).
References its delete cleared (``references=clear``) are put back by a restore
(:mod:`benchbook.domain.records.referrers`); the plan counts them and the live records that
point at what comes back.
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.catalog.shapes import RestoreBlocker, RestorePlanResponse
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid
from benchbook.domain.history import entries as audit
from benchbook.domain.records import referrers as referring
from benchbook.domain.records.rows import find_record, purge_records, restore_records
from benchbook.domain.records.uniqueness import clashing_record
from benchbook.domain.records.writes import update_record
from benchbook.persistence.tables import Collection, Record, RecordLink, Schema


def deleted_ancestors(session: Session, rec: Record) -> list[Record]:
    """Deleted records above ``rec``, topmost first."""
    chain: list[Record] = []
    current = rec
    while current.parent_id:
        parent = session.get(Record, current.parent_id)
        if parent is None:
            break
        if parent.deleted_at is not None:
            chain.append(parent)
        current = parent
    chain.reverse()
    return chain


def deleted_with(session: Session, rec: Record) -> list[Record]:
    """``rec`` and the records below it deleted by the same operation, parents first."""
    out = [rec]
    frontier = [rec.id]
    while frontier:
        kids = list(session.scalars(select(Record).where(Record.parent_id.in_(frontier),
                                                         Record.delete_op == rec.delete_op,
                                                         Record.deleted_at.is_not(None))))
        out += kids
        frontier = [k.id for k in kids]
    return out


def _conflict(session: Session, cache: SchemaCache, records: list[Record]) -> dict[str, Any] | None:
    for rec in records:
        meta = cache.meta(rec.schema_id)
        types = {f.id: f.type for f in meta.fields}
        names = {f.id: f.name for f in meta.fields}
        for key in meta.schema.unique_keys:
            other = clashing_record(session, rec, key, types)
            if other is not None:
                return {"record_id": rec.id, "taken_by": other.id, "taken_by_name": other.natural_name,
                        "key": [names.get(k, k) for k in key],
                        "message": f"record {other.id} now holds the values of unique key "
                                   f"({', '.join(names.get(k, k) for k in key)})"}
    return None


def _container_blocker(session: Session, rec: Record) -> tuple[str, RestoreBlocker] | None:
    coll = session.get(Collection, rec.dataset_id)
    if coll is not None and coll.deleted_at is not None:
        return (f"its collection {coll.name!r} is deleted; restore it first",
                {"kind": "collection", "id": coll.id, "name": coll.name})
    schema = session.get(Schema, rec.schema_id)
    if schema is not None and schema.deleted_at is not None:
        return (f"its schema {schema.name!r} is deleted; restore it first",
                {"kind": "schema", "id": schema.id, "name": schema.name})
    return None


def record_restore_plan(session: Session, record_id: str) -> RestorePlanResponse:
    """RestorePlanResponse for a record (``records``: what comes back with a plain restore)."""
    rec = find_record(session, record_id, live=None)
    coll = session.get(Collection, rec.dataset_id)
    base: RestorePlanResponse = {"kind": "record", "id": rec.id, "name": rec.natural_name, "records": 0,
                                 "can_restore": False, "collection": coll.name if coll else None,
                                 "collection_id": rec.dataset_id,
                                 "deleted_at": rec.deleted_at.isoformat() if rec.deleted_at else None,
                                 "schema_name": None, "blocked": None, "blocked_by": None, "conflict": None,
                                 "parents_needed": None}
    if rec.deleted_at is None:
        base["blocked"] = "the record is not deleted"
        return base
    coming = deleted_with(session, rec)
    base["records"] = len(coming)
    base["referrers"] = referring.referrer_counts(session, [r.id for r in coming])
    base["cleared_references"] = len(referring.cleared_by(session, coming))
    container = _container_blocker(session, rec)
    above = deleted_ancestors(session, rec)
    base["conflict"] = _conflict(session, SchemaCache(session), coming)
    if container:
        base["blocked"], base["blocked_by"] = container
    elif above:
        top = above[0]
        base["blocked"] = (f"{len(above)} deleted record(s) above it; restore with with_parents or only_this, "
                           "or restore them first")
        base["blocked_by"] = {"kind": "record", "id": top.id, "name": top.natural_name}
        base["parents_needed"] = len(above)
    base["can_restore"] = base["blocked"] is None and base["conflict"] is None
    return base


def restore_record(ctx: Ctx, record_id: str, *, with_parents: bool = False, only_this: bool = False) -> Record:
    """Restore a deleted record (see module docstring). Raises ``NotFound``, ``Invalid`` (422:
    blocked by a deleted collection, schema or parent without ``with_parents``/``only_this``),
    ``Conflict`` (409: the record is not deleted, as for every kind of thing, or a uniqueness
    key was taken meanwhile)."""
    s = ctx.session
    rec = find_record(s, record_id, live=None)
    if rec.deleted_at is None:
        raise Conflict(f"record {rec.id} is not deleted: there is nothing to restore")
    container = _container_blocker(s, rec)
    if container:
        raise Invalid(f"cannot restore record {rec.id}: {container[0]}")
    above = deleted_ancestors(s, rec)
    if above and not (with_parents or only_this):
        raise Invalid(f"cannot restore record {rec.id}: {len(above)} deleted record(s) above it; "
                      "pass with_parents=true or only_this=true")
    coming = [*above, rec] if only_this else [*above, *deleted_with(s, rec)]
    conflict = _conflict(s, SchemaCache(s), coming)
    if conflict:
        raise Conflict(f"cannot restore record {conflict['record_id']}: {conflict['message']}; change or "
                       "delete that record first")
    cleared = referring.cleared_by(s, coming)  # read before the restore forgets the delete_op
    batch = audit.server_batch(ctx, "restore", f"restore {rec.natural_name or rec.id}")
    with batch if len(coming) > 1 or cleared else nullcontext():
        restore_records(ctx, coming)
        referring.put_back(ctx, cleared, update_record)
    return rec


def restore_above(ctx: Ctx, record_id: str) -> list[Record]:
    """Restore the deleted records above a live record (each by itself), topmost first.
    Raises ``Conflict`` when nothing above it is deleted (as restoring what is not deleted is)."""
    s = ctx.session
    rec = find_record(s, record_id)
    above = deleted_ancestors(s, rec)
    if not above:
        raise Conflict(f"nothing above record {rec.id} is deleted")
    conflict = _conflict(s, SchemaCache(s), above)
    if conflict:
        raise Conflict(f"cannot restore record {conflict['record_id']}: {conflict['message']}")
    cleared = referring.cleared_by(s, above)
    with audit.server_batch(ctx, "restore", f"restore above {rec.natural_name or rec.id}"):
        restore_records(ctx, above)
        referring.put_back(ctx, cleared, update_record)
    return above


def purge_record(ctx: Ctx, record_id: str) -> int:
    """Remove a deleted record and everything below it for good. Raises ``Conflict`` when the
    record is live (delete it first). Returns how many records were purged."""
    s = ctx.session
    rec = find_record(s, record_id, live=None)
    if rec.deleted_at is None:
        raise Conflict(f"record {rec.id} is live: delete it before purging it")
    everything = [rec]
    frontier = [rec.id]
    while frontier:
        kids = list(s.scalars(select(Record).where(Record.parent_id.in_(frontier))))
        everything += kids
        frontier = [k.id for k in kids]
    if len(everything) > 1:
        with audit.server_batch(ctx, "purge", f"purge {rec.natural_name or rec.id}"):
            purge_records(ctx, list(reversed(everything)))
    else:
        purge_records(ctx, everything)
    return len(everything)


def orphans(session: Session, limit: int, offset: int) -> tuple[list[Record], int]:
    """Live records whose parent is deleted (out of sight until it returns).

    The deleted records are looked up through ``ix_records_listing`` (collection, schema,
    deleted_at, id) one (collection, schema) pair at a time: the ``IN`` lists of every
    collection and schema hold for every record (foreign keys) and turn a read of the whole
    index (58 ms at 1,000,000 records) into a seek per pair (under 1 ms)."""
    deleted = select(Record.id).where(Record.dataset_id.in_(select(Collection.id)),
                                      Record.schema_id.in_(select(Schema.id)), Record.deleted_at.is_not(None))
    conds = [Record.deleted_at.is_(None), Record.parent_id.in_(deleted)]
    total = session.scalar(select(func.count()).select_from(Record).where(*conds)) or 0
    rows = list(session.scalars(select(Record).where(*conds).order_by(Record.id).limit(limit).offset(offset)))
    return rows, total


def referrers(session: Session, record_id: str) -> list[Record]:
    """Live records whose live reference fields point at the record (the ones a delete of it
    counts, :mod:`benchbook.domain.records.referrers`), by id."""
    rec = find_record(session, record_id, live=None)
    sources = referring.live_links_to([rec.id]).with_only_columns(RecordLink.source_id)
    return list(session.scalars(select(Record).where(Record.id.in_(sources), Record.id != rec.id)
                                .order_by(Record.id)))
