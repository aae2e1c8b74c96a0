"""What benchbook's triggers share: finding which exist, making them again and the kept counts'
bodies (``persistence.own_values``, ``persistence.record_counts``, ``persistence.audit_days``;
``benchbook doctor`` repairs them)."""
from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, text


def existing(conn: Connection, table: str = "records") -> set[str]:
    """The names of the triggers on ``table`` in the database at ``conn`` (its current schema
    on PostgreSQL)."""
    sql = ("SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
           "WHERE c.relname = :t AND NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace"
           if conn.dialect.name == "postgresql" else
           "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = :t")
    return {str(name) for name in conn.execute(text(sql), {"t": table}).scalars()}


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
