"""A device's first copy of its authority, by snapshot (docs/sync.md *A first copy*).

Applying the whole feed entry by entry is what a device does to keep level; for a first copy
of a large project it is slow (every entry whole, its effect made record by record). So a
device that holds nothing yet copies the authority's rows instead, in three steps, each page in
one transaction with how far the copy got (``sync_state``: ``copy_stage``, ``copy_head``,
``copy_after``, migration 0028), so a copy stopped midway goes on from there on the next sync:

1. ``records``: the records as they stand (``GET /sync/snapshot/records``, parents first),
   inserted as they are (:func:`add_records`: values, name, parent, deleted or not; links made
   from the values as every write makes them). The first page's ``head`` is the copy's
   ``copy_head`` H: every record is read as it stands at H or later.
2. ``history``: the entries numbered up to H (``GET /sync/snapshot/history``) inserted as the
   authority stores them (:func:`add_history`), with their ``seq``, ``device`` and batches, the
   cursor moving with them. A create or delete entry stored without its values is read back
   from its record (``history.own_values``), which holds exactly those values: the authority's
   database copies them into the entry before it changes the record, and the history is read
   after the records, so an entry read without them belongs to a record unchanged since.
3. The feed after H, applied as usual (``replica.apply_page``): it brings each record read in a
   later state than H to the same end (an entry sets values, it does not add to them).

Afterwards the device holds what applying the whole feed would have given it: the same
records, names, links and history entries (tests/sync/test_sync_copy.py compares the two).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, exists, insert, select, update
from sqlalchemy.orm import Session

from benchbook.domain import collector
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.records.rows import chunks, insert_entries
from benchbook.domain.records.values import FILE_TYPES, REFERENCE_TYPES, as_list
from benchbook.domain.sync import state
from benchbook.domain.sync.wire import parse_time
from benchbook.persistence.rows_insert import insert_rows
from benchbook.persistence.tables import AuditBatch, AuditEntry, Collection, Record, RecordLink, Schema

RECORDS, HISTORY = "records", "history"
"""The stages of a copy under way (``sync_state.copy_stage``)."""
PAGE = 5000
"""Rows asked for per snapshot page."""
_RECORDS: Table = Record.__table__  # type: ignore[assignment]
_LINKS: Table = RecordLink.__table__  # type: ignore[assignment]
_BATCHES: Table = AuditBatch.__table__  # type: ignore[assignment]
_ENTRIES: Table = AuditEntry.__table__  # type: ignore[assignment]
_RECORD_TIMES = ("created_at", "updated_at", "deleted_at")
_RECORD_COLUMNS = tuple(_RECORDS.c.keys())
_ENTRY_COLUMNS = tuple(c.key for c in _ENTRIES.c if c.key != "sync")
"""What a page's rows are read for (a key the authority sends that this version lacks is left
out; one it lacks is null: ``request_id``, the authority's own log's)."""
_SET_SEQ = update(_ENTRIES).where(_ENTRIES.c.id == bindparam("entry_id")).values(seq=bindparam("n"))


class _Times:
    """``wire.parse_time`` of a page's times (None stays None), each text read once: rows made
    together (an import) share their times, and the bulk writer then stores a shared value once
    (``rows_insert.insert_rows``)."""

    def __init__(self) -> None:
        self._seen: dict[str, datetime] = {}

    def __call__(self, text: str | None) -> datetime | None:
        if text is None:
            return None
        if text not in self._seen:
            self._seen[text] = parse_time(text)
        return self._seen[text]


def wanted(session: Session) -> bool:
    """Whether this device copies by snapshot: a copy is under way, or it follows an authority
    and holds no history at all yet (nothing read, nothing made)."""
    row = state.following(session)
    if row is None:
        return False
    return row.copy_stage is not None or (row.cursor == 0 and not session.scalar(select(exists().select_from(
        AuditEntry))))


def lacks_catalog(session: Session, rows: list[dict[str, Any]]) -> bool:
    """Whether records ``rows`` name a schema or collection this project does not hold (made at
    the authority after the catalog was copied): copy the catalog again first."""
    schemas = {r["schema_id"] for r in rows}
    collections = {r["dataset_id"] for r in rows}
    held_schemas = set(session.scalars(select(Schema.id).where(Schema.id.in_(schemas)))) if schemas else set()
    held_collections = (set(session.scalars(select(Collection.id).where(Collection.id.in_(collections))))
                        if collections else set())
    return held_schemas != schemas or held_collections != collections


@collector.paused()
def add_records(session: Session, rows: list[dict[str, Any]]) -> int:
    """Insert the records ``rows`` of a ``records`` snapshot page (every column, times as ISO
    text) that this project does not hold yet, with their links; returns how many went in.
    Parents come first (the page's order), so every parent is in before its children."""
    held: set[str] = set()
    for part in chunks([r["id"] for r in rows]):
        held.update(session.scalars(select(Record.id).where(Record.id.in_(part))))
    at = _Times()
    new: list[dict[str, Any]] = [{k: at(r.get(k)) if k in _RECORD_TIMES else r.get(k) for k in _RECORD_COLUMNS}
           for r in rows if r["id"] not in held]
    if not new:
        return 0
    conn = session.connection()
    insert_rows(conn, _RECORDS, new)
    cache = SchemaCache(session)
    links = []
    for r in new:
        for f in cache.meta(r["schema_id"]).fields:
            if f.type in REFERENCE_TYPES or f.type in FILE_TYPES:
                kind = "record" if f.type in REFERENCE_TYPES else "file"
                links += [{"source_id": r["id"], "field_id": f.id, "target_id": target, "kind": kind}
                          for target in dict.fromkeys(as_list(r["data"].get(f.id)))]
    if links:
        conn.execute(insert(_LINKS), links)
    return len(new)


@collector.paused()
def add_history(session: Session, entries: list[dict[str, Any]], batches: list[dict[str, Any]]) -> int:
    """Insert the ``entries`` of a ``history`` snapshot page (stored columns, times as ISO text)
    as they are, and the ``batches`` they belong to that this project lacks; an entry this
    project holds already (its own, accepted) only takes its number. Returns how many went in."""
    held: set[str] = set()
    for part in chunks([e["id"] for e in entries]):
        held.update(session.scalars(select(AuditEntry.id).where(AuditEntry.id.in_(part))))
    known: set[str] = set()
    for part in chunks([b["id"] for b in batches]):
        known.update(session.scalars(select(AuditBatch.id).where(AuditBatch.id.in_(part))))
    at = _Times()
    missing = [{**b, "created_at": at(b["created_at"])} for b in batches if b["id"] not in known]
    if missing:
        session.execute(insert(_BATCHES), missing)
    if held:
        session.connection().execute(_SET_SEQ, [{"entry_id": e["id"], "n": e["seq"]} for e in entries if e["id"] in held])
    new = [{k: at(e.get(k)) if k == "timestamp" else e.get(k) for k in _ENTRY_COLUMNS}
           for e in entries if e["id"] not in held]
    insert_entries(session, new)
    return len(new)
