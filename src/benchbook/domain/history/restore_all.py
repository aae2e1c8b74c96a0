"""Restore-all (OpenAPI: ``GET|POST /audit/restore-all``; docs/deletes.md *Restoring*): deleted
records and collections come back, parents first.

The set: everything deleted (collections, schemas, fields, records) whose delete matches
``batch`` (the id of a bulk delete's batch), ``filter`` (the history filter tree over the
delete entries) and ``q`` (text in what the delete stored). Collections and schemas come back
first, then fields, then records parent-first; a record under something deleted that is not in
the set stays deleted and is counted as ``blocked``, as is a field whose name was taken and a
record whose uniqueness key was taken meanwhile. References the records' deletes cleared
(``references=clear``) are put back (``records.referrers.put_back``). The whole restore is one
event in history.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Row, select
from sqlalchemy.orm import Session

from benchbook.domain import collector
from benchbook.domain.catalog import collections as collection_rules
from benchbook.domain.catalog import fields as field_rules
from benchbook.domain.catalog import schemas as schema_rules
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.history import entries as audit
from benchbook.domain.history import text_match
from benchbook.domain.history.filters import compile_history_filter
from benchbook.domain.progress import Progress, silent
from benchbook.domain.records import referrers as referring
from benchbook.domain.records.rows import ROW_COLUMNS, record_rows, restore_records
from benchbook.domain.records.uniqueness import clashing_record
from benchbook.domain.records.writes import update_record
from benchbook.persistence.tables import AuditEntry, Collection, Field, Record, Schema

LOOK_LIMIT = 500_000


@dataclass
class Selection:
    """The deleted things a restore-all would bring back."""

    collections: list[Collection] = field(default_factory=list)
    schemas: list[Schema] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    records: list[Row[Any]] = field(default_factory=list)  # records.record_rows without data
    truncated: bool = False


def _entry_conditions(session: Session, batch: str | None, tree: Any, q: str | None) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = [AuditEntry.action == "delete"]
    if batch:
        conds.append(AuditEntry.batch_id == batch.strip().upper())
    if q and q.strip():
        conds.append(text_match.stored_text_matches(session, q, batch_labels=False))
    if tree:
        conds.append(compile_history_filter(session, tree))
    return conds


def select_deleted(session: Session, *, batch: str | None = None, tree: Any = None, q: str | None = None) -> Selection:
    """Find the set (see module docstring). Raises ``Invalid`` for a bad filter."""
    out = Selection()
    filtered = bool(batch or tree or (q and q.strip()))
    entries = _entry_conditions(session, batch, tree, q)
    for model, kind, target in ((Collection, "dataset", "collections"), (Schema, "schema", "schemas"),
                                (Field, "field", "fields"), (Record, "record", "records")):
        # records as plain rows (records.record_rows): there may be very many
        query = (select(*ROW_COLUMNS) if model is Record else select(model)).where(model.deleted_at.is_not(None))
        if filtered:
            ids = select(AuditEntry.entity_id).where(AuditEntry.entity_type == kind, *entries)
            query = query.where(model.id.in_(ids))
        result = session.execute(query.order_by(model.deleted_at, model.id).limit(LOOK_LIMIT + 1))
        rows = list(result) if model is Record else list(result.scalars())
        if len(rows) > LOOK_LIMIT:
            out.truncated = True
            rows = rows[:LOOK_LIMIT]
        setattr(out, target, rows)
    return out


@dataclass
class _Outcome:
    restored: int = 0
    records: int = 0
    blocked: int = 0
    collections_records: int = 0


def _simulate(session: Session, sel: Selection) -> tuple[list[Row[Any]], int, int]:
    """Order the set's records parent-first and tell which would be blocked (their schema or
    collection deleted and not in the set, or a deleted ancestor that does not come back).
    Returns (records to restore in order, blocked records, records returning with collections).
    Queries: the records the set's collections bring back, the deleted collections and schemas,
    then the candidates' ancestors a generation at a time."""
    returning = _returning_with_collections(session, sel)
    dead_collections, dead_schemas = _dead_owners(session, sel)
    candidates = {r.id: r for r in sel.records if r.id not in returning}
    parents = _ancestors(session, candidates.values())
    live_after = returning | set(candidates)
    ordered, blocked = [], 0
    for rec in candidates.values():
        depth, is_blocked = _depth_and_blocked(rec, parents, live_after)
        if is_blocked or rec.dataset_id in dead_collections or rec.schema_id in dead_schemas:
            blocked += 1
        else:
            ordered.append((depth, rec.id, rec))
    ordered.sort(key=lambda t: (t[0], t[1]))
    return [r for _, _, r in ordered], blocked, len(returning)


def _returning_with_collections(session: Session, sel: Selection) -> set[str]:
    """Ids of the records that come back with the set's collections: those their deletes took
    (the set's records among them, and any other the database holds)."""
    coll_ids = {c.id for c in sel.collections}
    coll_ops = {c.delete_op for c in sel.collections if c.delete_op}
    returning = {r.id for r in sel.records if r.dataset_id in coll_ids and r.delete_op in coll_ops}
    if coll_ops:
        returning |= set(session.scalars(select(Record.id).where(Record.dataset_id.in_(coll_ids),
                                                                 Record.delete_op.in_(coll_ops))))
    return returning


def _dead_owners(session: Session, sel: Selection) -> tuple[set[str], set[str]]:
    """``(collection ids, schema ids)`` deleted and not in the set: they stay deleted, and so
    do the records in them."""
    coll_ids = {c.id for c in sel.collections}
    schema_ids = {s.id for s in sel.schemas}
    dead_collections = set(session.scalars(select(Collection.id).where(Collection.deleted_at.is_not(None)))) - coll_ids
    dead_schemas = set(session.scalars(select(Schema.id).where(Schema.deleted_at.is_not(None)))) - schema_ids
    return dead_collections, dead_schemas


def _ancestors(session: Session, records: Iterable[Row[Any]]) -> dict[str, tuple[str | None, bool]]:
    """The ancestors of ``records``, read a generation at a time: record id → (its parent's
    id or None, whether it is deleted)."""
    parents: dict[str, tuple[str | None, bool]] = {}
    frontier = {r.parent_id for r in records if r.parent_id}
    while frontier:
        rows = session.execute(select(Record.id, Record.parent_id, Record.deleted_at).where(
            Record.id.in_(list(frontier)))).all()
        for rid, pid, deleted_at in rows:
            parents[rid] = (pid, deleted_at is not None)
        frontier = {pid for _, pid, _ in rows if pid and pid not in parents}
    return parents


def _depth_and_blocked(rec: Row[Any], parents: dict[str, tuple[str | None, bool]],
                       live_after: set[str]) -> tuple[int, bool]:
    """``(how many ancestors rec has, whether one of them is deleted and not in live_after)``,
    walking ``parents`` (:func:`_ancestors`)."""
    depth, blocked, pid = 0, False, rec.parent_id
    while pid:
        depth += 1
        up, deleted = parents.get(pid, (None, False))
        if deleted and pid not in live_after:
            blocked = True
        pid = up
    return depth, blocked


def plan(session: Session, *, batch: str | None = None, tree: Any = None, q: str | None = None) -> dict[str, Any]:
    """RestoreAllPlanResponse (changes nothing)."""
    sel = select_deleted(session, batch=batch, tree=tree, q=q)
    records, blocked, with_collections = _simulate(session, sel)
    field_blocked = sum(1 for f in sel.fields if _field_blocked(session, f, {s.id for s in sel.schemas}))
    things = len(sel.collections) + len(sel.schemas) + len(sel.fields) + len(sel.records)
    return {"collections": len(sel.collections), "schemas": len(sel.schemas), "fields": len(sel.fields),
            "records": len(sel.records), "things": things, "restores": len(records) + with_collections,
            "blocked": blocked + field_blocked, "truncated": sel.truncated}


def _field_blocked(session: Session, f: Field, returning_schemas: set[str]) -> bool:
    schema = session.get(Schema, f.schema_id)
    if schema is None or (schema.deleted_at is not None and schema.id not in returning_schemas):
        return True
    return session.scalar(select(Field.id).where(Field.schema_id == f.schema_id, Field.name == f.name,
                                                 Field.deleted_at.is_(None))) is not None


@collector.paused()
def restore_all(ctx: Ctx, *, batch: str | None = None, tree: Any = None, q: str | None = None,
                progress: Progress = silent) -> dict[str, Any]:
    """Apply the restore-all as one server batch; RestoreAllResultResponse ``{restored, records, blocked}``.
    Reports ``progress("restoring records", done, total)``: the records restored or skipped of the
    deleted records it brings back one by one (those a restored collection brings back are not counted)."""
    s = ctx.session
    sel = select_deleted(s, batch=batch, tree=tree, q=q)
    out = _Outcome()
    with audit.server_batch(ctx, "restore", "restore all"):
        for c in sel.collections:
            try:
                with s.begin_nested():
                    count = len(s.scalars(select(Record.id).where(Record.dataset_id == c.id,
                                                                  Record.delete_op == c.delete_op)).all())
                    collection_rules.restore_collection(ctx, c.id)
                out.restored += 1
                out.records += count
            except BenchbookError:
                out.blocked += 1
        for schema in sorted(sel.schemas, key=lambda x: len(_chain(s, x))):
            try:
                with s.begin_nested():
                    schema_rules.restore_schema(ctx, schema.id)
                out.restored += 1
            except BenchbookError:
                out.blocked += 1
        for f in sel.fields:
            try:
                with s.begin_nested():
                    owner = s.get(Schema, f.schema_id)
                    assert owner is not None
                    field_rules.restore_field(ctx, owner.name, f.id)
                out.restored += 1
            except BenchbookError:
                out.blocked += 1
        s.flush()
        s.expire_all()  # the restores above may have changed records with bulk UPDATEs
        if sel.collections:  # a restored collection brought back the records its delete took
            sel.records = _still_deleted(s, [r.id for r in sel.records])
            sel.collections = []
        ordered, blocked, _ = _simulate(s, sel)
        out.blocked += blocked
        cleared = referring.cleared_by(s, ordered)  # before the restore forgets their delete_op
        restored = _restore_records(ctx, ordered, progress)
        referring.put_back(ctx, cleared, update_record)  # the references their deletes cleared
        out.blocked += len(ordered) - restored
        out.restored += restored
        out.records += restored
    return {"restored": out.restored, "records": out.records, "blocked": out.blocked}


STEP = 500
"""Records restored per statement (and per progress report) by :func:`_restore_records`."""


def _still_deleted(session: Session, ids: list[str]) -> list[Row[Any]]:
    """The records of ``ids`` that are still deleted, as plain rows in the order of ``ids``
    (one query per 500)."""
    found: dict[str, Row[Any]] = {}
    for start in range(0, len(ids), 500):
        found.update((r.id, r) for r in record_rows(session, Record.id.in_(ids[start:start + 500]),
                                                   Record.deleted_at.is_not(None), data=False))
    return [found[i] for i in ids if i in found]


def _restore_records(ctx: Ctx, ordered: list[Row[Any]], progress: Progress = silent) -> int:
    """Restore ``ordered`` (parent-first) set-based, :data:`STEP` at a time; a record of a schema
    with uniqueness keys is checked against what is live at its turn and skipped when its key was
    taken. Returns how many came back; reports each step to ``progress`` (done of ``len(ordered)``)."""
    s = ctx.session
    cache = SchemaCache(s)
    pending: list[Row[Any]] = []
    restored = 0
    progress("restoring records", 0, len(ordered))
    for done, rec in enumerate(ordered, 1):
        meta = cache.meta(rec.schema_id)
        if not meta.schema.unique_keys:
            pending.append(rec)
            if len(pending) >= STEP:
                restore_records(ctx, pending, cache=cache)
                restored += len(pending)
                pending = []
                progress("restoring records", done, len(ordered))
            continue
        restore_records(ctx, pending, cache=cache)  # what is live decides the clash: bring them first
        restored += len(pending)
        pending = []
        types = {f.id: f.type for f in meta.fields}
        record = s.get(Record, rec.id)
        assert record is not None
        if any(clashing_record(s, record, key, types) for key in meta.schema.unique_keys):
            continue
        restore_records(ctx, [record], cache=cache)
        restored += 1
        if done % STEP == 0:
            progress("restoring records", done, len(ordered))
    restore_records(ctx, pending, cache=cache)
    progress("restoring records", len(ordered), len(ordered))
    return restored + len(pending)


def _chain(session: Session, schema: Schema) -> list[str]:
    chain, current = [], schema
    while current.parent_id:
        chain.append(current.parent_id)
        parent = session.get(Schema, current.parent_id)
        if parent is None:
            break
        current = parent
    return chain
