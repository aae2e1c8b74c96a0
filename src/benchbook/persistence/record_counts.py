"""The live records of each collection and schema, counted by SQLite as they change (issue 15:
``GET /collections`` counted every record of each collection, 56 ms at 1,000,000).

``record_counts`` (:class:`~benchbook.persistence.tables.RecordCount`) holds, per collection
and schema, how many live records (``deleted_at`` null) there are. Triggers on ``records`` keep
it in the transaction that changes the rows, whatever statement does it: an insert of a live
record adds one, a delete of a live record (a purge, a cascade) takes one away, and an update
that makes a record live or not, or moves it to another collection or schema, moves its one.

SQLite only: it has one writer at a time. On PostgreSQL concurrent writers into one collection
would queue on its count rows until each commits (or deadlock, taking two schemas' rows in
opposite orders), so there :func:`live_counts` counts the records themselves, and the table
stays empty.
"""
from __future__ import annotations

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import Session

from benchbook.persistence import triggers
from benchbook.persistence.tables import Record, RecordCount

TRIGGERS = ("records_count_insert", "records_count_delete", "records_count_update")


def _add(row: str, by: int, when: str | None = None) -> str:
    """SQL adding ``by`` to the count of ``row``'s (``NEW`` or ``OLD``) collection and schema,
    only ``when`` that holds (a condition on the row) if given."""
    values = f"{row}.dataset_id, {row}.schema_id, {by}"
    given = f"SELECT {values} WHERE {when}" if when else f"VALUES ({values})"
    return (f"INSERT INTO record_counts (dataset_id, schema_id, live) {given} "
            f"ON CONFLICT (dataset_id, schema_id) DO UPDATE SET live = record_counts.live + {by};")


_MOVED = ("(OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.dataset_id <> NEW.dataset_id "
          "OR OLD.schema_id <> NEW.schema_id")
_TRIGGERS = (  # name, the event it follows, when it fires, what it does
    (TRIGGERS[0], "INSERT", "NEW.deleted_at IS NULL", _add("NEW", 1)),
    (TRIGGERS[1], "DELETE", "OLD.deleted_at IS NULL", _add("OLD", -1)),
    (TRIGGERS[2], "UPDATE OF deleted_at, dataset_id, schema_id", _MOVED,
     f"{_add('OLD', -1, 'OLD.deleted_at IS NULL')} {_add('NEW', 1, 'NEW.deleted_at IS NULL')}"),
)


def kept(dialect: str) -> bool:
    """Whether the database keeps the counts (SQLite) or they are counted when asked."""
    return dialect == "sqlite"


def create_statements(dialect: str) -> list[str]:
    """The DDL creating the triggers on ``dialect`` (none on PostgreSQL, see the module)."""
    if not kept(dialect):
        return []
    return [f"CREATE TRIGGER {name} AFTER {event} ON records WHEN {when} BEGIN {body} END"
            for name, event, when, body in _TRIGGERS]


def drop_statements(dialect: str) -> list[str]:
    """The DDL dropping them (those that exist)."""
    return [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS] if kept(dialect) else []


def recount(conn: Connection) -> None:
    """Set the counts from the records themselves, in ``conn``'s transaction (SQLite)."""
    if not kept(conn.dialect.name):
        return
    conn.execute(text("DELETE FROM record_counts"))
    conn.execute(text("INSERT INTO record_counts (dataset_id, schema_id, live) "
                      "SELECT dataset_id, schema_id, count(*) FROM records WHERE deleted_at IS NULL "
                      "GROUP BY dataset_id, schema_id"))


def live_counts(session: Session, dataset_id: str) -> dict[str, int]:
    """Live records of collection ``dataset_id`` by schema id (schemas without any may be left
    out): kept (SQLite) or counted now (PostgreSQL)."""
    if kept(session.get_bind().dialect.name):
        rows = session.execute(select(RecordCount.schema_id, RecordCount.live).where(RecordCount.dataset_id == dataset_id))
    else:
        rows = session.execute(select(Record.schema_id, func.count()).where(
            Record.dataset_id == dataset_id, Record.deleted_at.is_(None)).group_by(Record.schema_id))
    return {schema_id: int(n) for schema_id, n in rows}


def present(conn: Connection) -> set[str]:
    """Which of :data:`TRIGGERS` the database at ``conn`` has."""
    return triggers.on_records(conn) & set(TRIGGERS)


def drift(conn: Connection) -> int:
    """How many (collection, schema) pairs the kept counts get wrong, by a count of the records
    (SQLite)."""
    sql = ("SELECT count(*) FROM (SELECT dataset_id, schema_id, live AS n FROM record_counts WHERE live <> 0) k "
           "FULL OUTER JOIN (SELECT dataset_id, schema_id, count(*) AS n FROM records WHERE deleted_at IS NULL "
           "GROUP BY dataset_id, schema_id) r ON r.dataset_id = k.dataset_id AND r.schema_id = k.schema_id "
           "WHERE k.n IS DISTINCT FROM r.n")
    return int(conn.execute(text(sql)).scalar_one())


def repair(conn: Connection) -> None:
    """Create the triggers again and count the records afresh, in ``conn``'s transaction."""
    triggers.replace(conn, drop_statements(conn.dialect.name), create_statements(conn.dialect.name))
    recount(conn)
