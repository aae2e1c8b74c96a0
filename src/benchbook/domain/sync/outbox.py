"""A device's own changes on their way to the authority (docs/sync.md *Pushing*).

An entry of a device is its own change not yet accepted while it has neither the authority's
number (``seq``) nor an answer (``sync``, the rows the answer brought; ``[]`` for none). The
partial index on ``seq IS NULL`` keeps finding them one index read however long history is.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, func, null, select, update
from sqlalchemy.orm import Session

from benchbook.domain.sync import wire
from benchbook.persistence.tables import AuditEntry

BATCH = 500
"""Entries sent per push request."""


def unsent() -> ColumnElement[bool]:
    """SQL: the entry is this device's own change not yet answered."""
    return and_(AuditEntry.seq.is_(None), AuditEntry.sync.is_(None))


def count(session: Session) -> int:
    """How many own changes wait to be sent (``GET /remote`` ``pending``)."""
    return session.scalar(select(func.count()).select_from(AuditEntry).where(unsent())) or 0


def next_batch(session: Session, after: str | None = None, limit: int = BATCH) -> list[dict[str, Any]]:
    """The next ``limit`` unsent entries after entry id ``after``, oldest first, as wire entries."""
    query = select(AuditEntry).where(unsent())
    if after:
        query = query.where(AuditEntry.id > after)
    return wire.entries_out(session, list(session.scalars(query.order_by(AuditEntry.id).limit(limit))))


def send_again(session: Session, entry_id: str) -> None:
    """Make entry ``entry_id`` unsent again (``retry``): its rows are dropped, it goes with the
    next push."""
    session.execute(update(AuditEntry).where(AuditEntry.id == entry_id).values(sync=null()))
