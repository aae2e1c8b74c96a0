"""Many rows into one table as one statement on SQLite.

SQLite runs an ``executemany`` as one statement per row. Each statement opens a statement
savepoint, and FTS5 writes what it has gathered to disk at every savepoint, so a table whose
trigger fills ``records_fts`` (migration ``0001``) gets one tiny FTS segment per row, which FTS5
then spends most of the import merging. Sent as one ``INSERT … SELECT`` over ``json_each`` of the
rows, the trigger still fires for every row, but FTS5 writes once per statement (measured in
docs/performance.md *One statement per chunk*: the import of 50,000 records about 1.6× faster).

PostgreSQL has no such cost (its search index is a GIN index): there the rows go as SQLAlchemy's
``executemany``, as before.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Table, TextClause, insert, text

from benchbook.persistence.db import json_dumps

_Processor = Callable[[Any], Any] | None
_NOTHING = object()
_PLANS: dict[tuple[str, tuple[str, ...]], tuple[TextClause, list[_Processor]]] = {}


def _plan(conn: Connection, table: Table, columns: tuple[str, ...]) -> tuple[TextClause, list[_Processor]]:
    """The statement and the columns' bind processors (what SQLAlchemy would store for each
    value: JSON text for JSON columns, ``YYYY-MM-DD HH:MM:SS.ffffff`` for datetimes), built once
    per (table, columns): every SQLite engine comes from ``db.open_database``, with the same JSON
    serializer."""
    key = (table.name, columns)
    if key not in _PLANS:
        dialect = conn.dialect
        processors: list[_Processor] = [table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
                                        for name in columns]
        picks = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
        statement = text(f"INSERT INTO {table.name} ({', '.join(columns)}) SELECT {picks} FROM json_each(:rows)")
        _PLANS[key] = (statement, processors)
    return _PLANS[key]


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (column name → Python value, every row with the same keys, as for
    ``conn.execute(insert(table), rows)``) into ``table`` inside the connection's transaction:
    one statement on SQLite (module docstring), ``executemany`` elsewhere. Values are stored as
    SQLAlchemy would store them (a value that consecutive rows share, the same object, is
    converted once: a chunk's one ``now`` in ``created_at`` and ``updated_at`` came to a tenth
    of an import); a row's constraint failure fails the whole statement (the caller's
    transaction is rolled back either way).
    """
    if not rows:
        return
    if conn.dialect.name != "sqlite":
        conn.execute(insert(table), list(rows))
        return
    columns = tuple(rows[0])
    statement, processors = _plan(conn, table, columns)
    payload: list[list[Any]] = [[] for _ in rows]
    for name, process in zip(columns, processors):
        if process is None:
            for out, row in zip(payload, rows):
                out.append(row[name])
            continue
        last: Any = _NOTHING
        stored: Any = None
        for out, row in zip(payload, rows):
            value = row[name]
            if value is not last:  # one conversion for a value many rows share (a chunk's `now`)
                last, stored = value, process(value)
            out.append(stored)
    conn.execute(statement, {"rows": json_dumps(payload)})
