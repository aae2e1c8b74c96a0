"""A batch's figures and the history's event count, kept in the transaction that writes the
entries (migrations 0010 and 0011).

``GET /audit/events`` shows a batch as one event: how many entries it holds (``entry_count``),
its newest entry's time (``last_at``, the event's ``timestamp``) and its parts (entries per
``"<action> <entity_type>"``); its ``total`` is the number of events, batches holding entries
plus entries made outside any batch (``audit_event_counts``). Reading those from the entries
costs a pass over every entry; so entries are noted here as they are written (every ORM entry
as its flush inserts it, :func:`_note_flushed`; a bulk insert by :func:`note_rows`, which
``records.rows.insert_entries`` calls) and, when the
outermost transaction commits, the figures are brought up to date in that same transaction
(:func:`_apply`). Entries are never deleted (a batch that ends up empty is, and it counts for
nothing), so the figures only grow.

Savepoints: an entry written outside any savepoint commits with the transaction, so it is
counted as noted, with no query; one written inside a savepoint counts only if it is still
there at the commit (a savepoint rolled back, a refused plugin write, takes it with it): checked
then, one primary-key lookup per ORM entry, one per bulk insert (one executemany stays or goes
whole). Notes are applied at the outermost commit only and dropped only when the outermost
transaction ends (a savepoint rolled back leaves the notes made outside it alone).

Concurrency: on PostgreSQL a batch's row is locked (``FOR NO KEY UPDATE``, which entries'
foreign-key checks do not wait on) before its figures are read and added to, in batch id order,
so two transactions adding to one batch (a client batch spread over parallel requests) do not
lose each other's counts; the event count is added to one of :data:`SLOTS` rows picked at
random, so writers seldom queue on it. SQLite has one writer at a time (``db.write_lock``).
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Table, bindparam, event, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session, SessionTransaction
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from benchbook.persistence.tables import AuditBatch, AuditEntry, AuditEventCount

NOTES = "benchbook.batch_figures"
CHUNK = 500
SLOTS = 16
_COUNTS: Table = AuditEventCount.__table__  # type: ignore[assignment]
_BATCHES: Table = AuditBatch.__table__  # type: ignore[assignment]


@dataclass
class _Note:
    """What this transaction wrote into one batch (or, under the key ``None``, outside any)."""

    ids: list[str] = field(default_factory=list)  # written inside a savepoint: counted if still there
    counted: Counter[tuple[str, str]] = field(default_factory=Counter)  # sure to commit with the transaction
    last: datetime | None = None
    # bulk inserts made inside a savepoint: (one of their ids, what they hold, their newest time); one
    # executemany commits or rolls back whole, so its first row tells for all of them
    groups: list[tuple[str, Counter[tuple[str, str]], datetime]] = field(default_factory=list)

    def count(self, action: str, entity_type: str, at: datetime) -> None:
        self.counted[(action, entity_type)] += 1
        if self.last is None or at > self.last:
            self.last = at


def _notes(session: Session) -> dict[str | None, _Note]:
    return session.info.setdefault(NOTES, {})  # type: ignore[no-any-return]


def note_entry(session: Session, entry: AuditEntry) -> None:
    """``entry`` (being inserted by ``session``'s flush) counts at the commit, for its batch or
    as a lone event; one written inside a savepoint only if it is still there then."""
    note = _notes(session).setdefault(entry.batch_id, _Note())
    if session.in_nested_transaction():
        note.ids.append(entry.id)
    else:
        note.count(entry.action, entry.entity_type, entry.timestamp)


@event.listens_for(Session, "after_flush")
def _note_flushed(session: Session, _context: Any) -> None:
    """Every ORM entry is noted as its flush inserts it (``session.new`` still lists what the
    flush inserted), in the savepoint it is flushed in: ``begin_nested`` flushes what was added
    before it, and what is added inside is flushed inside."""
    for obj in session.new:
        if isinstance(obj, AuditEntry):
            note_entry(session, obj)


def note_rows(session: Session, rows: list[dict[str, Any]]) -> None:
    """Entries inserted in bulk (column dicts with ``id``, ``batch_id``, ``action``,
    ``entity_type``, ``timestamp``) count at the commit."""
    notes = _notes(session)
    nested = session.in_nested_transaction()
    by_batch: dict[str | None, list[dict[str, Any]]] = {}
    for row in rows:
        by_batch.setdefault(row.get("batch_id"), []).append(row)
    for batch_id, mine in by_batch.items():
        note = notes.setdefault(batch_id, _Note())
        if nested:
            note.groups.append((mine[0]["id"], Counter((r["action"], r["entity_type"]) for r in mine),
                                max(r["timestamp"] for r in mine)))
        else:
            for row in mine:
                note.count(row["action"], row["entity_type"], row["timestamp"])


def _surviving(session: Session, note: _Note) -> tuple[Counter[tuple[str, str]], datetime | None]:
    """The entries of ``note`` that are there at the commit: per (action, entity_type), newest time."""
    counts = Counter(note.counted)
    last = note.last
    for probe, held, newest in note.groups:
        if session.scalar(select(AuditEntry.id).where(AuditEntry.id == probe)) is not None:
            counts.update(held)
            last = newest if last is None or newest > last else last
    for start in range(0, len(note.ids), CHUNK):
        for action, entity_type, n, newest in session.execute(
                select(AuditEntry.action, AuditEntry.entity_type, func.count(), func.max(AuditEntry.timestamp))
                .where(AuditEntry.id.in_(note.ids[start:start + CHUNK]))
                .group_by(AuditEntry.action, AuditEntry.entity_type)):
            counts[(action, entity_type)] += n
            last = newest if last is None or newest > last else last
    return counts, last


def _adding_events(insert: Any) -> Any:
    """The upsert adding ``:events`` to slot ``:slot``'s count (``insert``: a dialect's)."""
    stmt = insert(_COUNTS).values(slot=bindparam("slot"), events=bindparam("events"))
    return stmt.on_conflict_do_update(index_elements=[_COUNTS.c.slot],
                                      set_={"events": _COUNTS.c.events + stmt.excluded.events})


# Built once: a statement built per commit costs more than it takes to run (tens of microseconds
# of construction and cache-key generation, ~10 % of a plugin run's host CPU: docs/runs/automation.md)
_ADD_EVENTS = {"postgresql": _adding_events(pg_insert), "sqlite": _adding_events(sqlite_insert)}
_READ_FIGURES = (select(_BATCHES.c.id, _BATCHES.c.entry_count, _BATCHES.c.last_at, _BATCHES.c.parts)
                 .where(_BATCHES.c.id.in_(bindparam("ids", expanding=True))).order_by(_BATCHES.c.id)
                 .with_for_update(key_share=True))
_WRITE_FIGURES = update(_BATCHES).where(_BATCHES.c.id == bindparam("b_id")).values(
    entry_count=bindparam("b_entry_count"), last_at=bindparam("b_last_at"), parts=bindparam("b_parts"))


def add_events(session: Session, n: int) -> None:
    """Add ``n`` to the history's event count (one slot's row, made if missing)."""
    dialect = session.get_bind().dialect.name
    postgres = dialect == "postgresql"
    session.execute(_ADD_EVENTS[dialect], {"slot": random.randrange(SLOTS) if postgres else 0, "events": n})


def event_total(session: Session) -> int:
    """How many events the history holds (batches holding entries plus lone entries)."""
    return int(session.scalar(select(func.coalesce(func.sum(AuditEventCount.events), 0))) or 0)


@event.listens_for(Session, "before_commit")
def _apply(session: Session) -> None:
    """At the outermost commit (before its final flush), add what the transaction wrote to each
    noted batch's figures and to the event count. A savepoint's release leaves the notes for
    the outermost commit (a rollback of an enclosing savepoint may still take its entries)."""
    if session.in_nested_transaction():
        return
    session.flush()  # first: it notes the entries still pending
    notes: dict[str | None, _Note] | None = session.info.pop(NOTES, None)
    if not notes:
        return
    events = 0
    lone = notes.pop(None, None)
    if lone is not None:
        events += sum(_surviving(session, lone)[0].values())
    adding = {batch_id: found for batch_id in sorted(k for k in notes if k is not None)
              if (found := _surviving(session, notes[batch_id]))[0]}
    for start in range(0, len(adding), CHUNK):
        events += _add_to_batches(session, dict(list(adding.items())[start:start + CHUNK]))
    if events:
        add_events(session, events)


def _add_to_batches(session: Session, adding: dict[str, tuple[Counter[tuple[str, str]], datetime | None]]) -> int:
    """Add to each batch's figures what ``adding`` holds for it (its rows locked and read in one
    statement, written in one executemany; a batch object the session holds is told the new
    figures); returns how many of them became events (their first entries)."""
    rows = session.execute(_READ_FIGURES, {"ids": list(adding)}).all()
    events, params = 0, []
    for batch_id, entry_count, last_at, parts in rows:
        counts, last = adding[batch_id]
        if not entry_count:
            events += 1  # the batch becomes an event with its first entries
        parts = dict(parts or {})
        for (action, entity_type), n in counts.items():
            key = f"{action} {entity_type}"
            parts[key] = int(parts.get(key, 0)) + n
        figures = {"entry_count": (entry_count or 0) + sum(counts.values()), "parts": parts,
                   "last_at": last if last_at is None or (last is not None and last > last_at) else last_at}
        params.append({"b_id": batch_id, **{f"b_{k}": v for k, v in figures.items()}})
        held = session.identity_map.get(identity_key(AuditBatch, batch_id))
        if held is not None:
            for key, value in figures.items():
                set_committed_value(held, key, value)
    if params:
        session.execute(_WRITE_FIGURES, params)
    return events


@event.listens_for(Session, "after_transaction_end")
def _forget(session: Session, transaction: SessionTransaction) -> None:
    """The notes go when the outermost transaction ends (applied at its commit, void at its
    rollback); a savepoint's end leaves them."""
    if transaction.parent is None:
        session.info.pop(NOTES, None)
