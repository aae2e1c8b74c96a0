"""History entries per UTC day, action and entity type, kept by SQLite as entries are written
(issue 15, migration 0021).

The history chart (``GET /analytics/audit/events``) grouped every entry by its day through
``ix_audit_entries_day`` (migration 0018): 58-127 ms at 1,000,000 entries, and an index of
60 MB that every entry wrote. :class:`~benchbook.persistence.tables.AuditDay` holds the count
per (day, action, entity type); triggers on ``audit_entries`` keep it in the transaction that
writes the entries, whatever statement does it: an insert adds one, a delete takes one away, an
update of ``timestamp``, ``action`` or ``entity_type`` moves it.

SQLite only, as the record counts (``persistence.record_counts``): on PostgreSQL every writer
would queue on the day's rows until it commits; the chart groups the entries by hash there and
the table stays empty.
"""
from __future__ import annotations

from sqlalchemy import Connection

from benchbook.persistence import triggers
from benchbook.persistence.record_counts import kept

TRIGGERS = ("audit_day_insert", "audit_day_delete", "audit_day_update")
DAYS = triggers.KeptCount(
    "audit_days", "audit_entries",
    {"day": triggers.SQLITE_DAY.format(row="{row}", column="timestamp"), "action": "{row}.action",
     "entity_type": "{row}.entity_type"},
    "entries", counted=None, moved_by="timestamp, action, entity_type",
    when="OLD.timestamp <> NEW.timestamp OR OLD.action <> NEW.action OR OLD.entity_type <> NEW.entity_type",
    names=TRIGGERS)


def create_statements(dialect: str) -> list[str]:
    """The DDL creating the triggers on ``dialect`` (none on PostgreSQL, see the module)."""
    return DAYS.create_statements() if kept(dialect) else []


def drop_statements(dialect: str) -> list[str]:
    """The DDL dropping them (those that exist)."""
    return DAYS.drop_statements() if kept(dialect) else []


def recount(conn: Connection) -> None:
    """Set the counts from the entries themselves, in ``conn``'s transaction (SQLite)."""
    if kept(conn.dialect.name):
        DAYS.recount(conn)


def present(conn: Connection) -> set[str]:
    """Which of :data:`TRIGGERS` the database at ``conn`` has (SQLite)."""
    return triggers.existing(conn, "audit_entries") & set(TRIGGERS)


def drift(conn: Connection) -> int:
    """How many (day, action, entity type) triples the kept counts get wrong, by a count of the
    entries (SQLite)."""
    return DAYS.drift(conn)


def repair(conn: Connection) -> None:
    """Create the triggers again and count the entries afresh, in ``conn``'s transaction."""
    triggers.replace(conn, drop_statements(conn.dialect.name), create_statements(conn.dialect.name))
    recount(conn)
