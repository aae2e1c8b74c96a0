"""A large write into a nearly empty table builds its secondary indexes once, at the end (SQLite).

A row inserted into ``records`` goes into up to fifteen indexes (the listing, parent, name and
time indexes and one per indexed field), each at a place its value picks at random: at 100,000
records that is about three quarters of the insert's own time in SQLite. ``CREATE INDEX`` over
rows already written sorts them instead, several times cheaper (docs/performance.md, *Indexes
built once*). So when a write adds at least :data:`MIN_ROWS` rows and at least twice as many as
the table holds, :func:`deferred` drops the table's secondary indexes for the write and makes
them again from their own DDL (``sqlite_master.sql``) before it returns.

All of it happens inside the caller's transaction: SQLite's DDL is transactional, so a rollback
(a failed import, a crash, a killed process) brings the indexes back as they were, and other
connections never see the table without them (they read the last commit). Queries the write
itself makes while the indexes are gone must not need them: ``keep`` names the ones that stay.

PostgreSQL is left alone: there ``DROP INDEX`` takes an exclusive lock that would stop every
reader of the table until the commit.
"""
from __future__ import annotations

import logging
from collections.abc import Collection, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, text

log = logging.getLogger(__name__)

MIN_ROWS = 10_000
"""Writes of fewer rows keep the indexes (building them costs more than it saves)."""


def worth_it(conn: Connection, table: str, rows: int) -> bool:
    """Whether a write of ``rows`` new rows into ``table`` should build its indexes afterwards:
    SQLite, at least :data:`MIN_ROWS` rows and at least twice the rows the table holds (measured:
    rebuilding ``records``' indexes costs about 21 µs a row held, inserting into them about 38 µs
    a row added, 100,000 rows)."""
    if conn.dialect.name != "sqlite" or rows < MIN_ROWS:
        return False
    held = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()  # a table name of ours, not input
    return bool(held * 2 <= rows)


@contextmanager
def deferred(conn: Connection, table: str, *, keep: Collection[str] = ()) -> Iterator[list[str]]:
    """Drop the secondary indexes of SQLite table ``table`` (all with DDL of their own, i.e. not
    the primary key's or a UNIQUE constraint's, and none named in ``keep``) in ``conn``'s
    transaction, yield their names, and create them again from the same DDL when the block ends.

    When the block raises, the indexes are still made again (a caller may go on after rolling
    back a savepoint that did not hold the drop); should that fail too, the block's own error is
    raised and the transaction's rollback brings them back."""
    found = conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = :t "
                              "AND sql IS NOT NULL ORDER BY name"), {"t": table}).all()
    dropped = [(str(name), str(sql)) for name, sql in found if name not in keep]
    for name, _ in dropped:
        conn.exec_driver_sql(f'DROP INDEX "{name}"')
    try:
        yield [name for name, _ in dropped]
    except BaseException:
        try:
            _create(conn, dropped)
        except Exception:  # the block's error is the one to report
            log.debug("could not make the indexes of %s again after an error", table, exc_info=True)
        raise
    _create(conn, dropped)


def _create(conn: Connection, dropped: list[tuple[str, str]]) -> None:
    for _, sql in dropped:
        conn.exec_driver_sql(sql)
