"""A pushed entry applied at the authority (docs/sync.md *Merging*).

Every entry goes through the same domain rules as an API write (types, restrictions, uniqueness
keys, live parent, collection and schema), under an :class:`~benchbook.domain.context.Origin`
(its entry keeps the device's id, actor and time, stamped with the device's name), inside a
savepoint of its own: a refusal undoes that entry alone.

An edit is merged field by field, three ways, with the entry's before value as the base: the
authority's value equal to the base takes the device's; equal to the device's needs nothing;
anything else is a ``conflict`` row and the authority keeps its value. A move
(``parent_record_id``) merges as one more value. An edit that meets a delete, either way, is an
``edit_vs_delete`` row and applies nothing: the edit is never silently lost.

Answers: ``{id, status, seq, rows}``, ``status`` one of :data:`STATUSES`. An entry that changed
something has its answer stored (``sync_answers``) in the same transaction: a resend gets the
same answer and changes nothing twice. One that changed nothing (rejected, deferred, a conflict
on every field) is weighed again when sent again, which is what ``retry`` is for.
"""
from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.records import writes
from benchbook.domain.records.rows import (
    chunks,
    live_descendants,
    purge_records,
    restore_records,
    soft_delete_records,
)
from benchbook.domain.sync import catalog, creates, feed, wire
from benchbook.domain.sync.rows import PARENT, row
from benchbook.persistence.tables import AuditEntry, Collection, Record, SyncAnswer, utcnow

STATUSES = ("applied", "merged", "duplicate", "conflict", "rejected", "deferred")


def push(ctx: Ctx, device: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    """PushResult ``{results: [{id, status, seq, rows}], head}`` for ``entries`` (wire entries,
    in the order the device made them), applied in ``ctx``'s transaction, stamped ``device``.
    What is known already (the answers stored, the entries held, the records named) is read
    once for the whole push, the catalog once (again after a catalog entry); a run of creates of
    one collection goes through the bulk path together (:mod:`.creates`); the new answers are
    stored with one statement. ``results`` follows ``entries``, one per entry (an id sent twice
    gets the same answer twice); a refused entry is a ``rejected`` answer, not an error."""
    s = ctx.session
    ids = [e["id"] for e in entries]
    stored, held = _known(s, ids)
    present = _present(s, entries)
    deleting = {e["entity_id"] for e in entries if e.get("entity_type") == "record" and e.get("action") == "delete"}
    fresh = _apply_all(ctx, device, _unseen(entries, set(stored) | held), present, deleting)
    answers = [stored.get(i) or fresh.get(i) or {"id": i, "status": "duplicate", "seq": None, "rows": []}
               for i in ids]
    head = feed.number(s)
    _store(s, device, fresh)
    return {"results": answers, "head": head}


def _known(session: Session, ids: list[str]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """``(stored, held)`` for the entry ids ``ids``: the answers stored for them (entry id →
    answer) and those held here as entries already, read a chunk at a time."""
    stored: dict[str, dict[str, Any]] = {}
    held: set[str] = set()
    for part in chunks(ids):
        stored.update((a.entry_id, dict(a.answer)) for a in session.scalars(select(SyncAnswer).where(
            SyncAnswer.entry_id.in_(part))))
        held.update(session.scalars(select(AuditEntry.id).where(AuditEntry.id.in_(part))))
    return stored, held


def _present(session: Session, entries: list[dict[str, Any]]) -> set[str]:
    """Ids of the records the entries name that are here, read into the session (each
    ``get`` of one later is free)."""
    present: set[str] = set()
    for part in chunks(sorted({e["entity_id"] for e in entries if e.get("entity_type") == "record"})):
        present.update(r.id for r in session.scalars(select(Record).where(Record.id.in_(part))))
    return present


def _unseen(entries: list[dict[str, Any]], seen: set[str]) -> list[dict[str, Any]]:
    """The entries whose id is not in ``seen``, in order, each id once (one sent twice in one
    push is answered once). ``seen`` takes their ids."""
    todo = []
    for entry in entries:
        if entry["id"] not in seen:
            seen.add(entry["id"])
            todo.append(entry)
    return todo


def _apply_all(ctx: Ctx, device: str, todo: list[dict[str, Any]], present: set[str],
               deleting: set[str]) -> dict[str, dict[str, Any]]:
    """Apply ``todo`` (entries not seen before, in order) a run at a time (:func:`.creates.runs`):
    a run of several creates through the bulk path, any other entry alone, the catalog read
    again after a catalog entry. Returns entry id → answer (``seq`` still None). ``present``
    takes the records the entries made."""
    s = ctx.session
    fresh: dict[str, dict[str, Any]] = {}
    cache = SchemaCache(s)
    for group in creates.runs(todo, present):
        if len(group) > 1:
            answered = creates.apply_run(ctx, device, group, cache,
                                         partial(_one, ctx, device, deleting=deleting, cache=cache))
        else:
            answered = [_one(ctx, device, group[0], deleting, cache)]
            if group[0].get("entity_type") != "record":  # the catalog may have changed
                cache = SchemaCache(s)
        ctx.changes.clear()  # a change that arrives by sync starts no workflow here
        present.update(e["entity_id"] for e in group if e.get("entity_type") == "record")
        fresh.update((a["id"], a) for a in answered)
    return fresh


def _store(session: Session, device: str, fresh: dict[str, dict[str, Any]]) -> None:
    """Number the new answers that wrote something (``applied``, ``merged``, ``conflict``) with
    their entry's ``seq`` (in place: the push's results hold the same dicts) and store them,
    stamped ``device``, in one statement; a ``conflict`` whose entry was not kept is not stored."""
    wrote = [a for a in fresh.values() if a["status"] in ("applied", "merged", "conflict")]
    seqs: dict[str, int | None] = {}
    for part in chunks([a["id"] for a in wrote]):
        seqs.update(session.execute(select(AuditEntry.id, AuditEntry.seq).where(AuditEntry.id.in_(part))).all())
    keep = []
    for answer in wrote:
        answer["seq"] = seqs.get(answer["id"])
        if answer["seq"] is not None or answer["status"] != "conflict":
            keep.append({"entry_id": answer["id"], "device": device, "answer": answer, "created_at": utcnow()})
    if keep:
        session.execute(insert(SyncAnswer), keep)


def _one(ctx: Ctx, device: str, entry: dict[str, Any], deleting: set[str], cache: SchemaCache) -> dict[str, Any]:
    """The answer to one entry not seen before, its changes made inside a savepoint."""
    s = ctx.session
    ctx.apply_as(wire.origin(entry, device=device))
    savepoint = s.begin_nested()
    try:
        wire.ensure_batch(s, entry.get("batch"))
        if entry.get("entity_type") == "record":
            status, rows = _record(ctx, entry, deleting, cache)
        else:
            status, rows = catalog.apply(ctx, entry)
    except BenchbookError as exc:
        savepoint.rollback()
        status, rows = "rejected", [row("rejected", attempted=entry.get("action", ""), message=exc.detail,
                                        changes=_typed(cache, entry) if entry.get("entity_type") == "record"
                                        else entry.get("changes") or None)]
    else:
        if status in ("rejected", "deferred") or (status == "conflict" and not _wrote(s, entry["id"])):
            savepoint.rollback()
        else:
            savepoint.commit()
    finally:
        ctx.apply_as(None)
        ctx.changes.clear()  # a change that arrives by sync starts no workflow here
    return {"id": entry["id"], "status": status, "seq": None, "rows": rows}


def _wrote(session: Session, entry_id: str) -> bool:
    session.flush()
    return session.scalar(select(AuditEntry.id).where(AuditEntry.id == entry_id)) is not None


def _typed(cache: SchemaCache, entry: dict[str, Any]) -> list[dict[str, Any]] | None:
    """What a refused record entry held, as changes (field id, label, before, after)."""
    old = (entry.get("old_data") or {}).get("data") or {}
    new = (entry.get("new_data") or {}).get("data") or {}
    return _changes(_meta(cache, entry.get("schema_id")), old, new) or None


def _changes(meta: SchemaMeta | None, before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{field, label, before, after}]`` for each field id whose value differs between
    ``before`` and ``after`` (field id → value), in the order the keys first appear."""
    return [{"field": k, "label": _label(meta, k), "before": before.get(k), "after": after.get(k)}
            for k in dict.fromkeys([*before, *after]) if before.get(k) != after.get(k)]


def _meta(cache: SchemaCache, schema_id: str | None) -> SchemaMeta | None:
    try:
        return cache.meta(schema_id) if schema_id else None
    except BenchbookError:
        return None


def _label(meta: SchemaMeta | None, field_id: str) -> str:
    if field_id == PARENT:
        return "parent"
    field = meta.by_id.get(field_id) if meta else None
    return (field.label or field.name) if field else field_id


def _record(ctx: Ctx, entry: dict[str, Any], deleting: set[str],
            cache: SchemaCache) -> tuple[str, list[dict[str, Any]]]:
    s, action, record_id = ctx.session, entry["action"], entry["entity_id"]
    rec = s.get(Record, record_id)
    if action == "create":
        if rec is not None:
            return "merged", []
        new = entry.get("new_data") or {}
        collection = s.get(Collection, entry.get("dataset_id"))
        meta = cache.meta(entry["schema_id"])
        body = {"schema_name": meta.schema.name, "parent_record_id": new.get(PARENT),
                "data": creates.by_name(meta, new.get("data") or {})}
        writes.create_record(ctx, collection.name if collection else str(entry.get("dataset_id")), body,
                             cache=cache, record_id=record_id)
        return "applied", []
    if rec is None:  # its create was refused or is still on its way; purged here: nothing to edit
        if action in ("delete", "purge", "restore"):
            return "merged", []
        return "deferred", [row("rejected", attempted=action, message="the record is not at the authority: its "
                                "creation was refused or was purged there", changes=_typed(cache, entry))]
    if action == "update":
        return _update(ctx, rec, entry, cache)
    if action == "delete":
        return _delete(ctx, rec, entry, deleting, cache)
    if action == "restore":
        if rec.deleted_at is None:
            return "merged", []
        restore_records(ctx, [rec])
        return "applied", []
    if action == "purge":
        purge_records(ctx, [rec])
        return "applied", []
    return "rejected", [row("rejected", attempted=action, message=f"unknown action {action!r}")]


def _theirs_actor(session: Session, record_id: str) -> str | None:
    """Who made the authority's current version of the record: the actor (or device) of its
    latest entry."""
    latest = session.execute(select(AuditEntry.actor, AuditEntry.device).where(
        AuditEntry.entity_type == "record", AuditEntry.entity_id == record_id)
        .order_by(AuditEntry.timestamp.desc(), AuditEntry.id.desc()).limit(1)).first()
    return (latest.device or latest.actor) if latest else None


def _update(ctx: Ctx, rec: Record, entry: dict[str, Any], cache: SchemaCache) -> tuple[str, list[dict[str, Any]]]:
    s = ctx.session
    old, new = entry.get("old_data") or {}, entry.get("new_data") or {}
    meta = cache.meta(rec.schema_id)
    if rec.deleted_at is not None:
        return "conflict", [row("edit_vs_delete", attempted="update", changes=_typed(cache, entry),
                                message="the record was deleted at the authority; the edit is kept here",
                                theirs_actor=_theirs_actor(s, rec.id))]
    mine_data, base_data = new.get("data") or {}, old.get("data") or {}
    take: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    already = False
    pairs = [(k, base_data.get(k), mine_data.get(k), rec.data.get(k)) for k in mine_data]
    if old.get(PARENT) != new.get(PARENT):
        pairs.append((PARENT, old.get(PARENT), new.get(PARENT), rec.parent_id))
    for key, base, mine, current in pairs:
        if current == mine:
            already = True
        elif current == base:
            take[key] = mine
        else:
            rows.append(row("conflict", attempted="update", field=key, field_label=_label(meta, key), yours=mine,
                            theirs=current, base=base, theirs_actor=_theirs_actor(s, rec.id),
                            message="both sides changed this field; the authority's value is kept"))
    if take:
        body: dict[str, Any] = {"data": creates.by_name(meta, {k: v for k, v in take.items() if k != PARENT})}
        if PARENT in take:
            body[PARENT] = take[PARENT]
        writes.update_record(ctx, rec.id, body)
    if rows:
        return "conflict", rows
    return ("merged" if already or not take else "applied"), []


def _delete(ctx: Ctx, rec: Record, entry: dict[str, Any], deleting: set[str],
            cache: SchemaCache) -> tuple[str, list[dict[str, Any]]]:
    s = ctx.session
    if rec.deleted_at is not None:
        return "merged", []
    seen = (entry.get("old_data") or {}).get("data")
    meta = cache.meta(rec.schema_id)
    if seen is not None and {k: v for k, v in seen.items() if v is not None} != \
            {k: v for k, v in rec.data.items() if v is not None}:
        return "conflict", [row("edit_vs_delete", attempted="delete", changes=_changes(meta, seen, rec.data),
                                theirs_actor=_theirs_actor(s, rec.id),
                                message="the record was edited at the authority after this device last saw it; "
                                        "it is not deleted there")]
    added = [r for r in live_descendants(s, [rec.id]) if r.id not in deleting]
    if added:
        return "conflict", [row("edit_vs_delete", attempted="delete", theirs_actor=_theirs_actor(s, added[0].id),
                                message=f"{len(added)} record(s) were added under it at the authority; "
                                        "it is not deleted there")]
    batch = entry.get("batch") or {}
    soft_delete_records(ctx, [rec], op=batch.get("id") or entry["id"])
    return "applied", []
