"""A feed page applied on a device (docs/sync.md *Pulling*).

The authority has already weighed every entry in its feed against the rules, so a device
applies them as they are, each to its own entity: the entry is stored as the authority keeps it
(same id, ``seq`` and ``device``) and its effect is made on the record directly (values,
parent, deleted or not, its links and name). A delete of many arrives as one entry per record,
so nothing cascades here. An entry the device already holds is its own change coming back
accepted: it only takes the authority's number.

The device's own changes not yet sent stay as they are made: a pulled entry changes only the
fields (and the parent, and whether the record is deleted) that no unsent change of the device
touched (:func:`unsent_parts`). The push that follows weighs them at the authority; where it
keeps its own value (a ``conflict`` row) the device is then shown the authority's value
(:func:`show_theirs`), the row keeping the device's in ``yours``. Without that shield a pull
could put back a value the device is about to send as new, and the device would never learn
that the authority then took it.
Changes applied here start no workflow (a change runs its workflows where it was made).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.records.derived import follow_names, record_names
from benchbook.domain.records.labels import reference_placeholders
from benchbook.domain.records.names import FOLLOW_DEPTH
from benchbook.domain.records.rows import chunks, insert_entries
from benchbook.domain.records.writes import keep_links
from benchbook.domain.sync import outbox, wire
from benchbook.domain.sync.rows import PARENT
from benchbook.persistence.tables import AuditEntry, Record, RecordLink

CATALOG_TYPES = ("schema", "field", "dataset", "view")


def apply_page(session: Session, entries: list[dict[str, Any]]) -> int:
    """Apply the wire ``entries`` of a feed page (in ``seq`` order) in the caller's transaction;
    returns how many were new here (the rest were this device's own, now numbered). The page's
    entries are inserted with one statement, the records it creates added together, and the
    names of the records it touched made once at the end."""
    ids = [e["id"] for e in entries]
    held = set(session.scalars(select(AuditEntry.id).where(AuditEntry.id.in_(ids)))) if ids else set()
    record_ids = {e["entity_id"] for e in entries if e["entity_type"] == "record"}
    shielded = unsent_parts(session, record_ids)
    known: dict[str, Record] = {}  # the page's records as they stand: read once, made ones added
    for part in chunks(sorted(record_ids)):
        known.update((r.id, r) for r in session.scalars(select(Record).where(Record.id.in_(part))))
    touched: dict[str, Record] = {}
    rows: list[dict[str, Any]] = []
    cache = SchemaCache(session)
    for entry in entries:
        if entry["id"] in held:
            session.execute(update(AuditEntry).where(AuditEntry.id == entry["id"]).values(seq=entry["seq"]))
            continue
        wire.ensure_batch(session, entry.get("batch"))
        rows.append(_entry_row(entry))
        if entry["entity_type"] == "record":
            with session.no_autoflush:  # the page's new records go in together, at the next read
                rec = _record(session, cache, entry, shielded.get(entry["entity_id"], set()), known)
            if rec is not None:
                touched[rec.id] = known[rec.id] = rec
            else:
                touched.pop(entry["entity_id"], None)
                known.pop(entry["entity_id"], None)
    insert_entries(session, rows)
    if touched:
        _named(session, list(touched.values()))
        session.flush()
        follow_names(session, SchemaCache(session), list(touched))
    return len(rows)


def _entry_row(entry: dict[str, Any]) -> dict[str, Any]:
    batch = entry.get("batch") or None
    return {"id": entry["id"], "action": entry["action"], "entity_type": entry["entity_type"],
            "entity_id": entry["entity_id"], "timestamp": wire.parse_time(entry["timestamp"]),
            "actor": entry.get("actor"), "changes": entry.get("changes") or [], "old_data": entry.get("old_data"),
            "new_data": entry.get("new_data"), "batch_id": batch["id"] if batch else None, "request_id": None,
            "dataset_id": entry.get("dataset_id"), "schema_id": entry.get("schema_id"), "seq": entry["seq"],
            "device": entry.get("device")}


DELETED = "deleted"
"""The part of a record a delete or restore changes, among :func:`unsent_parts`' field ids."""


def unsent_parts(session: Session, record_ids: set[str]) -> dict[str, set[str]]:
    """Per record among ``record_ids``, what this device's unsent changes touched: field ids,
    ``parent_record_id`` (a move) and :data:`DELETED` (a delete or restore)."""
    if not record_ids:
        return {}
    out: dict[str, set[str]] = {}
    for part in chunks(sorted(record_ids)):
        for e in session.scalars(select(AuditEntry).where(
                outbox.unsent(), AuditEntry.entity_type == "record", AuditEntry.entity_id.in_(part))):
            parts = out.setdefault(e.entity_id, set())
            if e.action in ("delete", "restore"):
                parts.add(DELETED)
            elif e.action == "update":
                old, new = e.old_data or {}, e.new_data or {}
                parts.update(k for k in (new.get("data") or {}) if (old.get("data") or {}).get(k) != new["data"][k])
                if old.get(PARENT) != new.get(PARENT):
                    parts.add(PARENT)
    return out


def show_theirs(session: Session, record_id: str, field: str | None, theirs: Any) -> None:
    """Show the authority's value of ``field`` (a field id or ``parent_record_id``) on the
    record, as a push answered with a ``conflict`` row; no entry (history has the row)."""
    rec = session.get(Record, record_id)
    if rec is None or not field:
        return
    if field == PARENT:
        rec.parent_id = theirs
    else:
        data = dict(rec.data)
        if theirs is None:
            data.pop(field, None)
        else:
            data[field] = theirs
        rec.data = data
    _named(session, [rec])
    session.flush()
    keep_links(session, rec, SchemaCache(session).meta(rec.schema_id))
    follow_names(session, SchemaCache(session), [rec.id])


def show_live(session: Session, record_id: str) -> None:
    """Show the record live again, as the authority keeps it after refusing this device's
    delete of a record edited there (an ``edit_vs_delete`` row); no entry."""
    rec = session.get(Record, record_id)
    if rec is not None and rec.deleted_at is not None:
        rec.deleted_at, rec.delete_op = None, None
        session.flush()


def _record(session: Session, cache: SchemaCache, entry: dict[str, Any], shielded: set[str],
            known: dict[str, Record]) -> Record | None:
    """Make a record entry's effect on its record, except on the ``shielded`` parts (what the
    device's unsent changes touched: :func:`unsent_parts`). ``known``: the page's records here,
    by id (read once; a record made by the page is not flushed yet). Returns the record, None
    when it is gone or was never here; its name is made later (:func:`_named`)."""
    action, record_id = entry["action"], entry["entity_id"]
    at = wire.parse_time(entry["timestamp"])
    rec = known.get(record_id)
    new = entry.get("new_data") or {}
    if action == "create":
        if rec is None:
            rec = Record(id=record_id, dataset_id=entry["dataset_id"], schema_id=entry["schema_id"],
                         parent_id=new.get(PARENT), data=dict(new.get("data") or {}), created_at=at, updated_at=at)
            session.add(rec)
            keep_links(session, rec, cache.meta(rec.schema_id), new=True)
        return rec
    if rec is None:  # purged here already, or never here: nothing to change
        return None
    if action == "update":
        data = dict(rec.data)
        for key, value in (new.get("data") or {}).items():
            if key in shielded:
                continue
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        rec.data = data
        if PARENT in new and PARENT not in shielded:
            rec.parent_id = new[PARENT]
        rec.updated_at = at
        session.flush()
        keep_links(session, rec, cache.meta(rec.schema_id))
    elif action in ("delete", "restore") and DELETED in shielded:
        pass
    elif action == "delete":
        batch = entry.get("batch") or {}
        rec.deleted_at, rec.delete_op = at, batch.get("id") or entry["id"]
    elif action == "restore":
        rec.deleted_at, rec.delete_op, rec.updated_at = None, None, at
    elif action == "purge":
        session.flush()
        session.execute(delete(RecordLink).where(RecordLink.source_id == rec.id))
        session.delete(rec)
        return None
    return rec


def _named(session: Session, records: list[Record]) -> None:
    """Give ``records`` their natural names as this project's rules make them (the same catalog
    as the authority's, so the same names): one query per level of inherited fields for all, one
    per 500 reference targets a template shows by name. Records renamed at the authority because
    a target's name changed arrive as entries of their own (``records.names``)."""
    cache = SchemaCache(session)
    zones = {rec.dataset_id: cache.collection(rec.dataset_id).timezone for rec in records}
    for _ in range(FOLLOW_DEPTH):  # again while a name shown through a reference changed among them
        names = record_names(session, cache, records, zones)
        changed = [rec for rec in records if names[rec.id] != rec.natural_name]
        for rec in changed:
            rec.natural_name = names[rec.id]
        records = [rec for rec in records if reference_placeholders(cache.meta(rec.schema_id))]
        if not changed or not records:
            break
