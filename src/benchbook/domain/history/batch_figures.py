"""A batch's figures, kept in the transaction that writes its entries (migration 0010).

``GET /audit/events`` shows a batch as one event: how many entries it holds (``entry_count``),
its newest entry's time (``last_at``, the event's ``timestamp``) and its parts (entries per
``"<action> <entity_type>"``). Reading those from the entries costs a pass over every entry of
every batch; so the two places that write entries note them here (:func:`note_entry` for one
ORM entry, :func:`note_rows` for a bulk insert) and, when the transaction commits, the figures
of each noted batch are brought up to date in the same transaction (:func:`_apply`). Entries are
never deleted, so the figures only grow. An entry written inside a savepoint counts only if it is
still there at the commit (one a savepoint rolled back, a refused plugin write, is not); the
others are counted as they are noted, with no query. A bulk insert inside a savepoint (an
import's) is checked by one of its rows: one executemany stays or goes whole.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.orm import Session

from benchbook.persistence.tables import AuditBatch, AuditEntry

NOTES = "benchbook.batch_figures"
CHUNK = 500


@dataclass
class _Note:
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


def _notes(session: Session) -> dict[str, _Note]:
    return session.info.setdefault(NOTES, {})  # type: ignore[no-any-return]


def note_entry(session: Session, entry: AuditEntry) -> None:
    """``entry`` (added to ``session``, ``batch_id`` set) counts for its batch at the commit;
    one written inside a savepoint only if it is still there then."""
    if entry.batch_id:
        note = _notes(session).setdefault(entry.batch_id, _Note())
        if session.in_nested_transaction():
            note.ids.append(entry.id)
        else:
            note.count(entry.action, entry.entity_type, entry.timestamp)


def note_rows(session: Session, rows: list[dict[str, Any]]) -> None:
    """Entries inserted in bulk (column dicts with ``batch_id``, ``action``, ``entity_type``,
    ``timestamp``) count for their batches at the commit."""
    notes = _notes(session)
    nested = session.in_nested_transaction()
    for batch_id in {row["batch_id"] for row in rows if row.get("batch_id")}:
        note = notes.setdefault(batch_id, _Note())
        mine = [row for row in rows if row.get("batch_id") == batch_id]
        if nested:
            note.groups.append((mine[0]["id"], Counter((r["action"], r["entity_type"]) for r in mine),
                                max(r["timestamp"] for r in mine)))
        else:
            for row in mine:
                note.count(row["action"], row["entity_type"], row["timestamp"])


@event.listens_for(Session, "before_commit")
def _apply(session: Session) -> None:
    """Add what this transaction wrote to each noted batch's figures (before its final flush)."""
    notes: dict[str, _Note] | None = session.info.pop(NOTES, None)
    if not notes:
        return
    session.flush()
    for batch_id, note in notes.items():
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
        batch = session.get(AuditBatch, batch_id)
        if batch is None or not counts:
            continue
        parts = dict(batch.parts or {})
        for (action, entity_type), n in counts.items():
            key = f"{action} {entity_type}"
            parts[key] = int(parts.get(key, 0)) + n
        batch.entry_count = (batch.entry_count or 0) + sum(counts.values())
        batch.last_at = last if batch.last_at is None or (last is not None and last > batch.last_at) else batch.last_at
        batch.parts = parts


@event.listens_for(Session, "after_rollback")
def _forget(session: Session) -> None:
    """A rolled-back transaction's notes go with it."""
    session.info.pop(NOTES, None)
