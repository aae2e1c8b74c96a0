"""A record page's ``total`` within a time budget (issue 15; docs/decisions.md *Totals*).

Counting every match of a filter costs a pass over all of them, however small the page: at
1,000,000 records a three-leaf filter matching some 22,000 of them cost about 100 ms to count,
against a few milliseconds for the page itself (found by walking the sort field's index). So a
page counts its matches for at most ``[limits] count_ms`` (:class:`benchbook.settings.limits.Limits`) of
its thread's CPU time (:func:`work_clock`),
in steps of :data:`CAPS` matches: when the last step finishes within the budget ``total`` is
exact; otherwise it is a lower bound (the largest step passed, and never less than the records
up to the end of the page) and the page says so with ``total_exact: false``. A step that would
not end in time at the pace of the one before it (four times as many matches to read) is not
begun, so a count that cannot finish costs a fraction of the budget, not all of it. A page with
``limit`` 0 and ``GET /collections/{name_or_id}/record-counts`` always count exactly.

Sorted record pages use it on both backends (``lists._sorted_page`` on SQLite,
``lists._limited_page`` elsewhere), as do unsorted pages with a filter or search
(``lists._unsorted_page``), and a step is interrupted when the budget runs out
(:func:`interruptible`). On SQLite the budget is the request thread's CPU time, checked by a
progress handler; on PostgreSQL the count runs in the server's process, so the budget is
wall-clock time, given to the server as each step's ``statement_timeout`` (inside a savepoint,
so a cancelled step leaves the request's transaction usable). At 1,000,000 records on
PostgreSQL, with reads from the disk cache, the first step alone (1,000 matches of a
three-leaf filter) took 30-210 ms before it could be interrupted (docs/performance.md).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Select, column, func, literal_column, select, table, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from benchbook.persistence.tables import Record
from benchbook.settings import limits

CAPS = (1_000, 4_000, 16_000, 64_000, 256_000, 1_024_000)
"""The steps a budgeted count goes through, then one without a cap: each counts up to four times
as many matches as the one before (geometric: the steps repeat at most a third of the work)."""

def work_clock() -> float:
    """Seconds of CPU time the calling thread has used (``time.thread_time``): what the budgets
    of a page (its count here, its index walk in ``lists``) are measured in. The thread runs
    SQLite's work itself, so this is the work done; wall-clock time would also count the waits
    of a busy machine, and a count of 56 records cut short by another process's load (as CI saw)
    would give a different answer for the same data."""
    return time.thread_time()


def budget_clock(session: Session) -> Callable[[], float]:
    """The clock a count's budget is measured with on ``session``'s database: :func:`work_clock`
    on SQLite (this thread does the work), the wall clock elsewhere (the database server does
    it while this thread waits)."""
    return work_clock if session.get_bind().dialect.name == "sqlite" else time.perf_counter


PROGRESS_EVERY = 1000
"""SQLite virtual-machine instructions between two checks of a budget (a few microseconds)."""


@contextmanager
def sqlite_interrupt(session: Session, stop: Callable[[], bool]) -> Iterator[None]:
    """Within the block, a statement of ``session`` on SQLite is interrupted (``OperationalError``
    "interrupted") as soon as ``stop()`` is true, checked every :data:`PROGRESS_EVERY`
    instructions; elsewhere a no-op. The session stays usable after an interruption."""
    raw = session.connection().connection.driver_connection
    handler = getattr(raw, "set_progress_handler", None)
    if handler is None:
        yield
        return
    handler(stop, PROGRESS_EVERY)
    try:
        yield
    finally:
        handler(None, 0)


QUERY_CANCELED = "57014"
"""PostgreSQL's SQLSTATE for a statement cancelled, as by ``statement_timeout``."""


def interrupted(exc: OperationalError) -> bool:
    """Whether ``exc`` is the database stopping a statement because its budget ran out: SQLite's
    answer to a progress handler that asked it to stop, or PostgreSQL's cancelled statement."""
    return "interrupted" in str(exc) or getattr(exc.orig, "sqlstate", None) == QUERY_CANCELED


SAVEPOINT = "benchbook_count"
"""The savepoint :func:`interruptible` reads in on PostgreSQL."""


@contextmanager
def interruptible(session: Session, deadline: float, clock: Callable[[], float]) -> Iterator[Callable[[], bool]]:
    """Within the block, a statement of ``session`` is stopped once ``clock()`` passes
    ``deadline`` (seconds), raising an ``OperationalError`` that :func:`interrupted` recognises.
    The block must only read. Yields ``arm``, to call before each statement: False when no time
    is left (the statement should not be begun). On SQLite a progress handler checks the clock
    (:func:`sqlite_interrupt`) and ``arm`` only reads it. On PostgreSQL ``arm`` sets
    ``statement_timeout`` (``SET LOCAL``) to the whole milliseconds left, and the block runs in a
    savepoint that is always rolled back to after it: that leaves the transaction usable after a
    cancelled statement and takes the timeout back, at the cost of two statements (a small count
    took 1.6 ms, 1.3 with no budget, and 3.5 when the setting was read back and restored
    instead, on the slow day of docs/performance.md's R18)."""
    if session.get_bind().dialect.name == "sqlite":
        with sqlite_interrupt(session, lambda: clock() > deadline):
            yield lambda: clock() <= deadline
        return
    conn = session.connection()

    def arm() -> bool:
        left = int((deadline - clock()) * 1000)
        if left < 1:  # 0 would mean no timeout at all
            return False
        conn.exec_driver_sql(f"SET LOCAL statement_timeout = {left}")
        return True

    session.flush()  # nothing pending may be flushed inside the savepoint, only to be rolled back
    conn.exec_driver_sql(f"SAVEPOINT {SAVEPOINT}")
    try:
        yield arm
    finally:
        conn.exec_driver_sql(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")


def _matches(conds: Sequence[Any], search: str | None) -> Select[Any]:
    """``SELECT 1`` per live record matching ``conds`` (and ``search``: :func:`bounded_total`)."""
    if search is None:
        return select(literal_column("1")).select_from(Record).where(*conds)
    fts = table("records_fts", column("rowid"))
    return (select(literal_column("1")).select_from(fts.join(Record, literal_column("records.rowid") == fts.c.rowid))
            .where(text("records_fts MATCH :search_query").bindparams(search_query=search), *conds))


def bounded_total(session: Session, conds: Sequence[Any], *, at_least: int,
                  budget_ms: int | None = None, search: str | None = None) -> tuple[int, bool]:
    """``(total, exact)`` of the live records matching ``conds``, counted for at most
    ``budget_ms`` (``[limits] count_ms`` by default). ``exact`` false means ``total`` is a lower
    bound: at least that many match. ``at_least`` is what the caller already knows matches (the
    records up to the end of a page that is not empty); the bound is never below it.

    ``search``: on SQLite, the FTS5 ``MATCH`` text of a search that ``conds`` leave out. The
    matches are then read from the search table first, as it gives them, and joined to their
    records, so that a step stops at its cap: a condition ``rowid IN (matches)`` would read
    every match into a list before counting any (476,000 for ``alpha`` at 1,000,000 records:
    more than the whole budget, which ended with no step passed; now 16,000 are passed)."""
    budget = (limits.current().count_ms if budget_ms is None else budget_ms) / 1000
    clock = budget_clock(session)
    deadline = clock() + budget
    known = at_least
    steps = (*CAPS, None)
    try:
        with interruptible(session, deadline, clock) as arm:
            for i, cap in enumerate(steps):
                matches = _matches(conds, search)
                if cap is not None:
                    matches = matches.limit(cap + 1)
                started = clock()
                if not arm():
                    return known, False
                found = session.scalar(select(func.count()).select_from(matches.subquery())) or 0
                if cap is None or found <= cap:
                    return found, True
                known = max(known, cap)
                # the next step reads up to four times as many matches: not begun when it cannot end in time
                following = steps[i + 1]
                now = clock()
                if now + (now - started) * (following or cap) / cap > deadline:
                    return known, False
    except OperationalError as exc:
        if not interrupted(exc):
            raise
        return known, False
    raise AssertionError("unreachable: the last step counts without a cap")  # pragma: no cover
