"""What benchbook's triggers on ``records`` share: finding which exist and making them again
(``persistence.own_values``, ``persistence.record_counts``; ``benchbook doctor`` repairs them)."""
from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text


def on_records(conn: Connection) -> set[str]:
    """The names of the triggers on ``records`` in the database at ``conn`` (its current schema
    on PostgreSQL)."""
    sql = ("SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
           "WHERE c.relname = 'records' AND NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace"
           if conn.dialect.name == "postgresql" else
           "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'records'")
    return {str(name) for name in conn.execute(text(sql)).scalars()}


def replace(conn: Connection, drop: Iterable[str], create: Iterable[str]) -> None:
    """Run the ``drop`` and then the ``create`` DDL in ``conn``'s transaction (no parameters:
    sent as written)."""
    for statement in (*drop, *create):
        conn.exec_driver_sql(statement)


def add_to(table: str, keys: dict[str, str], column: str, by: int, when: str | None = None) -> str:
    """SQL for a trigger body: add ``by`` to ``table``'s ``column`` in the row whose key columns
    hold the given SQL values (``keys``: column → expression on ``NEW`` or ``OLD``), making the
    row when missing; only ``when`` that holds (a condition on the row) if given."""
    picked = ", ".join([*keys.values(), str(by)])
    given = f"SELECT {picked} WHERE {when}" if when else f"VALUES ({picked})"
    names = ", ".join(keys)
    return (f"INSERT INTO {table} ({names}, {column}) {given} "
            f"ON CONFLICT ({names}) DO UPDATE SET {column} = {table}.{column} + {by};")
