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

from sqlalchemy import Connection, func, select
from sqlalchemy.orm import Session

from benchbook.persistence import triggers
from benchbook.persistence.tables import Record, RecordCount

TRIGGERS = ("records_count_insert", "records_count_delete", "records_count_update")
DAY_TRIGGERS = ("records_day_insert", "records_day_delete", "records_day_update")
_KEYS = {"dataset_id": "{row}.dataset_id", "schema_id": "{row}.schema_id"}
LIVE = triggers.KeptCount(
    "record_counts", "records", _KEYS, "live", counted="{row}.deleted_at IS NULL",
    moved_by="deleted_at, dataset_id, schema_id",
    when="(OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.dataset_id <> NEW.dataset_id "
         "OR OLD.schema_id <> NEW.schema_id", names=TRIGGERS)
"""Live records per collection and schema (migration 0019)."""
DAYS = triggers.KeptCount(
    "record_days", "records", {"day": triggers.SQLITE_DAY.format(row="{row}", column="created_at"), **_KEYS},
    "created", counted=None, moved_by="created_at, dataset_id, schema_id",
    when="OLD.created_at <> NEW.created_at OR OLD.dataset_id <> NEW.dataset_id OR OLD.schema_id <> NEW.schema_id",
    names=DAY_TRIGGERS)
"""Records created per UTC day, collection and schema, deleted or not (migration 0020)."""


def kept(dialect: str) -> bool:
    """Whether the database keeps the counts (SQLite) or they are counted when asked."""
    return dialect == "sqlite"


def create_statements(dialect: str, *, days: bool = False) -> list[str]:
    """The DDL creating the live counts' triggers (``days``: the creation days' instead) on
    ``dialect`` (none on PostgreSQL, see the module)."""
    return (DAYS if days else LIVE).create_statements() if kept(dialect) else []


def drop_statements(dialect: str, *, days: bool = False) -> list[str]:
    """The DDL dropping them (those that exist)."""
    return (DAYS if days else LIVE).drop_statements() if kept(dialect) else []


def recount(conn: Connection, *, days: bool = False) -> None:
    """Set the live counts (``days``: the creation days') from the records themselves, in
    ``conn``'s transaction (SQLite)."""
    if kept(conn.dialect.name):
        (DAYS if days else LIVE).recount(conn)


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
    return LIVE.drift(conn) + DAYS.drift(conn)


def repair(conn: Connection) -> None:
    """Create the triggers again and count the records afresh, in ``conn``'s transaction."""
    dialect = conn.dialect.name
    for days in (False, True):
        triggers.replace(conn, drop_statements(dialect, days=days), create_statements(dialect, days=days))
        recount(conn, days=days)
