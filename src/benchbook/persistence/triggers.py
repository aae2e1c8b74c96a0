"""What benchbook's triggers share: finding which exist, making them again, and the counts kept
by them (:class:`KeptCount`: their triggers, recount and drift) for ``persistence.entry_triggers``,
``persistence.record_counts`` and ``persistence.audit_days``; ``benchbook doctor`` repairs them."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, text

SQLITE_DAY = "substr({row}.{column}, 1, 10)"
"""SQL for the UTC day of a timestamp column of ``row`` on SQLite (as ``tables.sqlite_day``)."""


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


@dataclass(frozen=True)
class KeptCount:
    """A count SQLite keeps per key of the rows of ``source``, in ``table``, by three triggers
    (:attr:`names`: after insert, delete, update): ``keys`` maps each key column to its SQL on a
    row (``{row}`` stands for ``NEW``, ``OLD`` or the source table), ``column`` holds the count,
    ``counted`` (on ``{row}``) says which rows count (all when None), and an update of the
    ``moved_by`` columns ``when`` (on ``OLD`` and ``NEW``) holds moves a row's one."""

    table: str
    source: str
    keys: dict[str, str]
    column: str
    counted: str | None
    moved_by: str
    when: str
    names: tuple[str, str, str]

    def _add(self, row: str, by: int, when: bool = False) -> str:
        keys = {name: sql.format(row=row) for name, sql in self.keys.items()}
        return add_to(self.table, keys, self.column, by, self.counted.format(row=row) if when and self.counted else None)

    def create_statements(self) -> list[str]:
        """The DDL creating the triggers (SQLite)."""
        events = ((self.names[0], "INSERT", self._where("NEW"), self._add("NEW", 1)),
                  (self.names[1], "DELETE", self._where("OLD"), self._add("OLD", -1)),
                  (self.names[2], f"UPDATE OF {self.moved_by}", self.when,
                   f"{self._add('OLD', -1, when=True)} {self._add('NEW', 1, when=True)}"))
        return [f"CREATE TRIGGER {name} AFTER {event} ON {self.source} WHEN {when} BEGIN {body} END"
                for name, event, when, body in events]

    def _where(self, row: str) -> str:
        return self.counted.format(row=row) if self.counted else "1"

    def drop_statements(self) -> list[str]:
        """The DDL dropping the triggers (those that exist)."""
        return [f"DROP TRIGGER IF EXISTS {name}" for name in self.names]

    def _grouped(self) -> str:
        keys = ", ".join(f"{sql.format(row=self.source)} AS {name}" for name, sql in self.keys.items())
        where = f" WHERE {self._where(self.source)}" if self.counted else ""
        by = ", ".join(str(i) for i in range(1, len(self.keys) + 1))
        return f"SELECT {keys}, count(*) AS n FROM {self.source}{where} GROUP BY {by}"

    def recount(self, conn: Connection) -> None:
        """Set the counts from the source rows themselves, in ``conn``'s transaction."""
        conn.exec_driver_sql(f"DELETE FROM {self.table}")
        conn.exec_driver_sql(f"INSERT INTO {self.table} ({', '.join(self.keys)}, {self.column}) {self._grouped()}")

    def drift(self, conn: Connection) -> int:
        """How many keys the kept counts get wrong, by a count of the source rows."""
        same = " AND ".join(f"r.{name} = k.{name}" for name in self.keys)
        sql = (f"SELECT count(*) FROM (SELECT {', '.join(self.keys)}, {self.column} AS n FROM {self.table} "
               f"WHERE {self.column} <> 0) k FULL OUTER JOIN ({self._grouped()}) r ON {same} "
               "WHERE k.n IS DISTINCT FROM r.n")
        return int(conn.execute(text(sql)).scalar_one())
