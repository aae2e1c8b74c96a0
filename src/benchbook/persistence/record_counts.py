"""Counts of records kept by SQLite as the records change (issue 15).

- **Live records per collection and schema** (``record_counts``, migration 0019): ``GET
  /collections`` counted every live record of each collection (56 ms at 1,000,000).
  :class:`~benchbook.persistence.tables.RecordCount` holds how many live records (``deleted_at``
  null) there are: an insert of a live record adds one, a delete of a live record (a purge, a
  cascade) takes one away, and an update that makes a record live or not, or moves it to another
  collection or schema, moves its one.
- **Records created per UTC day, collection and schema** (``record_days``, migration 0020): the
  growth chart (``GET /analytics/records/growth``) grouped every record by its creation day (about
  100 ms at 1,000,000, through a 102 MB index). :class:`~benchbook.persistence.tables.RecordDay`
  counts every record row, deleted or not: an insert adds one to its creation day, a delete (a
  purge) takes one away, and an update of ``created_at``, ``dataset_id`` or ``schema_id`` moves it.

Triggers on ``records`` keep both in the transaction that changes the rows, whatever statement
does it. SQLite only: it has one writer at a time. On PostgreSQL concurrent writers into one
collection would queue on its count rows until each commits (or deadlock, taking two schemas'
rows in opposite orders), so there :func:`live_counts` counts the records themselves, the growth
chart groups them (by hash), and the tables stay empty.
"""
from __future__ import annotations

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import Session

from benchbook.persistence import triggers
from benchbook.persistence.tables import Record, RecordCount

TRIGGERS = ("records_count_insert", "records_count_delete", "records_count_update")


def _add(row: str, by: int, when: str | None = None, *, table: str = "record_counts") -> str:
    """SQL adding ``by`` to the count of ``row``'s (``NEW`` or ``OLD``) collection and schema
    (``record_counts``) or creation day, collection and schema (``record_days``), only ``when``
    that holds (a condition on the row) if given."""
    keys = {"dataset_id": f"{row}.dataset_id", "schema_id": f"{row}.schema_id"}
    if table == "record_days":
        keys = {"day": f"substr({row}.created_at, 1, 10)", **keys}  # the UTC day, as tables.sqlite_day
    return triggers.add_to(table, keys, "live" if table == "record_counts" else "created", by, when)


_MOVED = ("(OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.dataset_id <> NEW.dataset_id "
          "OR OLD.schema_id <> NEW.schema_id")
_TRIGGERS = (  # name, the event it follows, when it fires, what it does
    (TRIGGERS[0], "INSERT", "NEW.deleted_at IS NULL", _add("NEW", 1)),
    (TRIGGERS[1], "DELETE", "OLD.deleted_at IS NULL", _add("OLD", -1)),
    (TRIGGERS[2], "UPDATE OF deleted_at, dataset_id, schema_id", _MOVED,
     f"{_add('OLD', -1, 'OLD.deleted_at IS NULL')} {_add('NEW', 1, 'NEW.deleted_at IS NULL')}"),
)


DAY_TRIGGERS = ("records_day_insert", "records_day_delete", "records_day_update")
_DAY_TRIGGERS = (
    (DAY_TRIGGERS[0], "INSERT", "1", _add("NEW", 1, table="record_days")),
    (DAY_TRIGGERS[1], "DELETE", "1", _add("OLD", -1, table="record_days")),
    (DAY_TRIGGERS[2], "UPDATE OF created_at, dataset_id, schema_id",
     "OLD.created_at <> NEW.created_at OR OLD.dataset_id <> NEW.dataset_id OR OLD.schema_id <> NEW.schema_id",
     f"{_add('OLD', -1, table='record_days')} {_add('NEW', 1, table='record_days')}"),
)


def kept(dialect: str) -> bool:
    """Whether the database keeps the counts (SQLite) or they are counted when asked."""
    return dialect == "sqlite"


def create_statements(dialect: str, *, days: bool = False) -> list[str]:
    """The DDL creating the live counts' triggers (``days``: the creation days' instead) on
    ``dialect`` (none on PostgreSQL, see the module)."""
    if not kept(dialect):
        return []
    return [f"CREATE TRIGGER {name} AFTER {event} ON records WHEN {when} BEGIN {body} END"
            for name, event, when, body in (_DAY_TRIGGERS if days else _TRIGGERS)]


def drop_statements(dialect: str, *, days: bool = False) -> list[str]:
    """The DDL dropping them (those that exist)."""
    return [f"DROP TRIGGER IF EXISTS {name}" for name in (DAY_TRIGGERS if days else TRIGGERS)] if kept(dialect) else []


def recount(conn: Connection, *, days: bool = False) -> None:
    """Set the live counts (``days``: the creation days') from the records themselves, in
    ``conn``'s transaction (SQLite)."""
    if not kept(conn.dialect.name):
        return
    if days:
        conn.execute(text("DELETE FROM record_days"))
        conn.execute(text("INSERT INTO record_days (day, dataset_id, schema_id, created) "
                          "SELECT substr(created_at, 1, 10), dataset_id, schema_id, count(*) FROM records "
                          "GROUP BY 1, 2, 3"))
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
    """Which of :data:`TRIGGERS` and :data:`DAY_TRIGGERS` the database at ``conn`` has."""
    return triggers.existing(conn) & {*TRIGGERS, *DAY_TRIGGERS}


def drift(conn: Connection) -> int:
    """How many (collection, schema) pairs the kept live counts get wrong, and (creation day,
    collection, schema) triples the kept days, by a count of the records (SQLite)."""
    live = ("SELECT count(*) FROM (SELECT dataset_id, schema_id, live AS n FROM record_counts WHERE live <> 0) k "
            "FULL OUTER JOIN (SELECT dataset_id, schema_id, count(*) AS n FROM records WHERE deleted_at IS NULL "
            "GROUP BY dataset_id, schema_id) r ON r.dataset_id = k.dataset_id AND r.schema_id = k.schema_id "
            "WHERE k.n IS DISTINCT FROM r.n")
    days = ("SELECT count(*) FROM (SELECT day, dataset_id, schema_id, created AS n FROM record_days "
            "WHERE created <> 0) k FULL OUTER JOIN (SELECT substr(created_at, 1, 10) AS day, dataset_id, schema_id, "
            "count(*) AS n FROM records GROUP BY 1, 2, 3) r ON r.day = k.day AND r.dataset_id = k.dataset_id "
            "AND r.schema_id = k.schema_id WHERE k.n IS DISTINCT FROM r.n")
    return sum(int(conn.execute(text(sql)).scalar_one()) for sql in (live, days))


def repair(conn: Connection) -> None:
    """Create the triggers again and count the records afresh, in ``conn``'s transaction."""
    dialect = conn.dialect.name
    for days in (False, True):
        triggers.replace(conn, drop_statements(dialect, days=days), create_statements(dialect, days=days))
        recount(conn, days=days)
