"""Many rows into one table as one statement on SQLite.

SQLite runs an ``executemany`` as one statement per row. Each statement opens a statement
savepoint, and FTS5 writes what it has gathered to disk at every savepoint, so a table whose
trigger fills ``records_fts`` (migration ``0001``) gets one tiny FTS segment per row, which FTS5
then spends most of the import merging. Sent as multi-row ``INSERT … VALUES (…), (…)`` statements
of up to :data:`ROWS_PER_STATEMENT` rows with every value bound, the trigger still fires for
every row, but FTS5 writes once per statement (measured in docs/performance.md *One statement
per chunk*: the import of 50,000 records about 1.6× faster). The rows went first as one JSON
array read by ``json_each``; binding them is faster still (*Ids in bulk, rows bound, numeric
text read straight*: 100,000 records 1.42 → 1.04 s in SQLite alone).

SQLite keeps each statement compiled in the connection's statement cache (128 of them), about
1 MB for one of 1,000 rows of 13 columns. So that few ever are, a write's rows go as
statements of :data:`ROWS_PER_STATEMENT` rows and the rest as statements of powers of two
(:func:`sizes`): at most eleven shapes per table and columns (about 2 MB compiled), whatever
the sizes of the writes. (Statements of 100 rows were 10 % slower; of 250 or 500 as fast.)

PostgreSQL has no such cost (its search index is a GIN index): there the rows go as SQLAlchemy's
``executemany``, as before.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Table, insert

_Processor = Callable[[Any], Any] | None
_NOTHING = object()
_PROCESSORS: dict[tuple[str, tuple[str, ...]], list[_Processor]] = {}
_STATEMENTS: dict[tuple[str, tuple[str, ...], int], str] = {}
_MOST_VALUES = 32766
"""SQLite's bound values per statement (``SQLITE_MAX_VARIABLE_NUMBER``'s default since 3.32)
when the driver cannot tell its own limit."""
ROWS_PER_STATEMENT = 1000
"""The most rows one statement inserts (fewer where the connection's bound-value limit says):
a bulk create's chunk (``bulk.CHUNK``) in one statement."""


def sizes(count: int, most: int) -> list[int]:
    """How many rows each statement of a write of ``count`` rows inserts: statements of ``most``
    rows, then the rest as descending powers of two (``sizes(600, 256) == [256, 256, 64, 16, 8]``),
    so that a connection compiles few distinct statements however the writes vary."""
    out = [most] * (count // most)
    rest = count % most
    power = 1 << max(rest.bit_length() - 1, 0)
    while rest:
        if rest >= power:
            out.append(power)
            rest -= power
        power >>= 1
    return out


def _processors(conn: Connection, table: Table, columns: tuple[str, ...]) -> list[_Processor]:
    """The columns' bind processors (what SQLAlchemy would store for each value: JSON text for
    JSON columns, ``YYYY-MM-DD HH:MM:SS.ffffff`` for datetimes), found once per (table,
    columns): every SQLite engine comes from ``db.open_database``, with the same JSON
    serializer."""
    key = (table.name, columns)
    if key not in _PROCESSORS:
        dialect = conn.dialect
        _PROCESSORS[key] = [table.c[name].type.dialect_impl(dialect).bind_processor(dialect) for name in columns]
    return _PROCESSORS[key]


def _statement(table: Table, columns: tuple[str, ...], rows: int) -> str:
    """``INSERT INTO table (columns) VALUES (?, …), …`` for ``rows`` rows (kept per shape: few,
    see :func:`sizes`)."""
    key = (table.name, columns, rows)
    if key not in _STATEMENTS:
        one = f"({', '.join('?' * len(columns))})"
        _STATEMENTS[key] = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES {', '.join([one] * rows)}"
    return _STATEMENTS[key]


def _most_values(conn: Connection) -> int:
    """How many values one statement may bind on this SQLite connection."""
    raw = conn.connection.dbapi_connection
    getlimit = getattr(raw, "getlimit", None)
    return int(getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)) if getlimit else _MOST_VALUES


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (column name → Python value, every row with the same keys, as for
    ``conn.execute(insert(table), rows)``) into ``table`` inside the connection's transaction:
    multi-row statements on SQLite (module docstring: :func:`sizes` rows each), ``executemany``
    elsewhere. Values are stored as SQLAlchemy
    would store them (a value that consecutive rows share, the same object, is converted once:
    a chunk's one ``now`` in ``created_at`` and ``updated_at`` came to a tenth of an import); a
    row's constraint failure fails its statement (the caller's transaction is rolled back
    either way).
    """
    if not rows:
        return
    if conn.dialect.name != "sqlite":
        conn.execute(insert(table), list(rows))
        return
    columns = tuple(rows[0])
    values: list[Any] = []
    for row in rows:
        values.extend(row[name] for name in columns)
    width = len(columns)
    for at, (name, process) in enumerate(zip(columns, _processors(conn, table, columns))):
        if process is None:
            continue
        last: Any = _NOTHING
        stored: Any = None
        for place in range(at, len(values), width):
            value = values[place]
            if value is not last:  # one conversion for a value many rows share (a chunk's `now`)
                last, stored = value, process(value)
            values[place] = stored
    start = 0
    for count in sizes(len(rows), max(1, min(ROWS_PER_STATEMENT, _most_values(conn) // width))):
        conn.exec_driver_sql(_statement(table, columns, count),
                             tuple(values[start * width:(start + count) * width]))
        start += count
