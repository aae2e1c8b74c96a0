"""A feed page applied on a device (docs/sync.md *Pulling*).

The authority has already weighed every entry in its feed against the rules, so a device
applies them as they are, each to its own entity: the entry is stored as the authority keeps it
(same id, ``seq`` and ``device``) and its effect is made on the record directly (values,
parent, deleted or not, its links and name). A delete of many arrives as one entry per record,
so nothing cascades here. An entry the device already holds is its own change coming back
accepted: it only takes the authority's number.

The device's own changes not yet accepted stay as they are made: a pulled edit of another
field leaves them alone; a pulled edit of the same field shows the authority's value, and the
push that follows meets it as a ``conflict`` row (the device's value kept in ``yours``).
Changes applied here start no workflow (a change runs its workflows where it was made).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.records.derived import follow_names, inherited_name_values
from benchbook.domain.records.rows import insert_entries, record_name
from benchbook.domain.records.writes import keep_links
from benchbook.domain.sync import wire
from benchbook.persistence.tables import AuditEntry, Record, RecordLink

CATALOG_TYPES = ("schema", "field", "dataset", "view")


def apply_page(session: Session, entries: list[dict[str, Any]]) -> int:
    """Apply the wire ``entries`` of a feed page (in ``seq`` order) in the caller's transaction;
    returns how many were new here (the rest were this device's own, now numbered)."""
    ids = [e["id"] for e in entries]
    held = set(session.scalars(select(AuditEntry.id).where(AuditEntry.id.in_(ids)))) if ids else set()
    touched: list[str] = []
    new = 0
    for entry in entries:
        if entry["id"] in held:
            session.execute(update(AuditEntry).where(AuditEntry.id == entry["id"]).values(seq=entry["seq"]))
            continue
        wire.ensure_batch(session, entry.get("batch"))
        insert_entries(session, [_entry_row(entry)])
        new += 1
        if entry["entity_type"] == "record":
            _record(session, entry)
            touched.append(entry["entity_id"])
    if touched:
        session.flush()
        follow_names(session, SchemaCache(session), touched)
    return new


def _entry_row(entry: dict[str, Any]) -> dict[str, Any]:
    batch = entry.get("batch") or None
    return {"id": entry["id"], "action": entry["action"], "entity_type": entry["entity_type"],
            "entity_id": entry["entity_id"], "timestamp": wire.parse_time(entry["timestamp"]),
            "actor": entry.get("actor"), "changes": entry.get("changes") or [], "old_data": entry.get("old_data"),
            "new_data": entry.get("new_data"), "batch_id": batch["id"] if batch else None, "request_id": None,
            "dataset_id": entry.get("dataset_id"), "schema_id": entry.get("schema_id"), "seq": entry["seq"],
            "device": entry.get("device")}


def _record(session: Session, entry: dict[str, Any]) -> None:
    """Make a record entry's effect on its record."""
    action, record_id = entry["action"], entry["entity_id"]
    at = wire.parse_time(entry["timestamp"])
    rec = session.get(Record, record_id)
    new = entry.get("new_data") or {}
    if action == "create":
        if rec is None:
            rec = Record(id=record_id, dataset_id=entry["dataset_id"], schema_id=entry["schema_id"],
                         parent_id=new.get("parent_record_id"), data=dict(new.get("data") or {}),
                         created_at=at, updated_at=at)
            session.add(rec)
            _named(session, rec)
            session.flush()
            keep_links(session, rec, SchemaCache(session).meta(rec.schema_id), new=True)
        return
    if rec is None:  # purged here already, or never here: nothing to change
        return
    if action == "update":
        data = dict(rec.data)
        for key, value in (new.get("data") or {}).items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        rec.data = data
        if "parent_record_id" in new:
            rec.parent_id = new["parent_record_id"]
        rec.updated_at = at
        _named(session, rec)
        session.flush()
        keep_links(session, rec, SchemaCache(session).meta(rec.schema_id))
    elif action == "delete":
        batch = entry.get("batch") or {}
        rec.deleted_at, rec.delete_op = at, batch.get("id") or entry["id"]
    elif action == "restore":
        rec.deleted_at, rec.delete_op, rec.updated_at = None, None, at
    elif action == "purge":
        session.flush()
        session.execute(delete(RecordLink).where(RecordLink.source_id == rec.id))
        session.delete(rec)
    session.flush()


def _named(session: Session, rec: Record) -> None:
    """Give ``rec`` its natural name as this project's rules make it (the same catalog as the
    authority's, so the same name)."""
    cache = SchemaCache(session)
    collection = cache.collection(rec.dataset_id)
    inherited = inherited_name_values(session, cache, [rec], {collection.id: collection.timezone})
    rec.natural_name = record_name(cache.meta(rec.schema_id), rec.data, collection.timezone, inherited.get(rec.id))
