"""The authority's feed (docs/sync.md *The feed*): every entry it holds, numbered by a gap-free
sequence, read by devices with a cursor.

No wall clock decides the order. Entries are numbered when a feed page or a push asks
(:func:`number`), under the lock of the ``sync_state`` row, in the order of their ids: numbers
are given only to committed entries, one numbering at a time, so a device that has read up to
``seq`` N never later meets an entry numbered N or below (no gap, no duplicate), whichever
server process or transaction wrote it.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Table, Update, func, literal, select, update
from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict
from benchbook.domain.sync import state, wire
from benchbook.persistence.tables import AuditEntry

PAGE = 500
"""Entries per feed page by default; ``limit`` may ask for 1 to :data:`MAX_PAGE`."""
MAX_PAGE = 5000
_ENTRIES: Table = AuditEntry.__table__  # type: ignore[assignment]


def number(session: Session) -> int:
    """Give every entry not numbered yet the next numbers, in id order; returns the head (the
    last number given). Raises ``Conflict`` on a project that follows an authority (its own
    unnumbered entries are the ones it has still to send)."""
    row = state.get(session, lock=True)
    if row.remote_url:
        raise Conflict("this project follows an authority: it has no feed of its own")
    session.flush()  # entries this transaction added go first
    given = session.connection().execute(_number(row.head)).rowcount
    if given:
        row.head += given
        session.flush()
    return row.head


def _number(head: int) -> Update:
    """One ``UPDATE … FROM`` giving the entries not numbered yet ``head + 1``, ``head + 2``, …
    in id order (a statement for all, where one per entry cost more than the page it served)."""
    todo = (select(_ENTRIES.c.id, func.row_number().over(order_by=_ENTRIES.c.id).label("n"))
            .where(_ENTRIES.c.seq.is_(None)).subquery())
    return update(_ENTRIES).where(_ENTRIES.c.id == todo.c.id).values(seq=literal(head, BigInteger()) + todo.c.n)


def page(session: Session, after: int, limit: int = PAGE) -> dict[str, Any]:
    """FeedPage ``{entries, head, more}``: the entries numbered after ``after``, oldest first, at
    most ``limit``; ``head`` the last number given; ``more`` whether entries after this page
    exist. Numbers what is not numbered yet first (the caller's write transaction)."""
    head = number(session)
    limit = max(1, min(limit, MAX_PAGE))
    entries = list(session.scalars(select(AuditEntry).where(AuditEntry.seq > after)
                                   .order_by(AuditEntry.seq).limit(limit)))
    last = entries[-1].seq if entries else after
    return {"entries": wire.entries_out(session, entries), "head": head, "more": bool(last is not None and last < head)}
