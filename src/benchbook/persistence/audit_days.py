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

from sqlalchemy import Connection, text

from benchbook.persistence import triggers
from benchbook.persistence.record_counts import kept

TRIGGERS = ("audit_day_insert", "audit_day_delete", "audit_day_update")


def _add(row: str, by: int) -> str:
    keys = {"day": f"substr({row}.timestamp, 1, 10)",  # the UTC day, as tables.sqlite_day
            "action": f"{row}.action", "entity_type": f"{row}.entity_type"}
    return triggers.add_to("audit_days", keys, "entries", by)


_TRIGGERS = (
    (TRIGGERS[0], "INSERT", "1", _add("NEW", 1)),
    (TRIGGERS[1], "DELETE", "1", _add("OLD", -1)),
    (TRIGGERS[2], "UPDATE OF timestamp, action, entity_type",
     "OLD.timestamp <> NEW.timestamp OR OLD.action <> NEW.action OR OLD.entity_type <> NEW.entity_type",
     f"{_add('OLD', -1)} {_add('NEW', 1)}"),
)


def create_statements(dialect: str) -> list[str]:
    """The DDL creating the triggers on ``dialect`` (none on PostgreSQL, see the module)."""
    if not kept(dialect):
        return []
    return [f"CREATE TRIGGER {name} AFTER {event} ON audit_entries WHEN {when} BEGIN {body} END"
            for name, event, when, body in _TRIGGERS]


def drop_statements(dialect: str) -> list[str]:
    """The DDL dropping them (those that exist)."""
    return [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS] if kept(dialect) else []


def recount(conn: Connection) -> None:
    """Set the counts from the entries themselves, in ``conn``'s transaction (SQLite)."""
    if not kept(conn.dialect.name):
        return
    conn.execute(text("DELETE FROM audit_days"))
    conn.execute(text("INSERT INTO audit_days (day, action, entity_type, entries) "
                      "SELECT substr(timestamp, 1, 10), action, entity_type, count(*) FROM audit_entries "
                      "GROUP BY 1, 2, 3"))


def present(conn: Connection) -> set[str]:
    """Which of :data:`TRIGGERS` the database at ``conn`` has (SQLite)."""
    return triggers.existing(conn, "audit_entries") & set(TRIGGERS)


def drift(conn: Connection) -> int:
    """How many (day, action, entity type) triples the kept counts get wrong, by a count of the
    entries (SQLite)."""
    sql = ("SELECT count(*) FROM (SELECT day, action, entity_type, entries AS n FROM audit_days WHERE entries <> 0) k "
           "FULL OUTER JOIN (SELECT substr(timestamp, 1, 10) AS day, action, entity_type, count(*) AS n "
           "FROM audit_entries GROUP BY 1, 2, 3) r ON r.day = k.day AND r.action = k.action "
           "AND r.entity_type = k.entity_type WHERE k.n IS DISTINCT FROM r.n")
    return int(conn.execute(text(sql)).scalar_one())


def repair(conn: Connection) -> None:
    """Create the triggers again and count the entries afresh, in ``conn``'s transaction."""
    triggers.replace(conn, drop_statements(conn.dialect.name), create_statements(conn.dialect.name))
    recount(conn)
