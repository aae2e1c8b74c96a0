"""The live records of each collection and schema, counted by the database as they change
(issue 15: ``GET /collections`` counted every record of each collection, 56 ms at 1,000,000).

``record_counts`` (:class:`~benchbook.persistence.tables.RecordCount`) holds, per collection,
schema and slot, how many live records (``deleted_at`` null) were added minus removed. Triggers
on ``records`` keep it in the transaction that changes the rows, whatever statement does it:
an insert of a live record adds one, a delete of a live record (a purge, a cascade) takes one
away, and an update that makes a record live or not, or moves it to another collection or
schema, moves its one. A slot is the writer's: always 0 on SQLite (one writer at a time), the
backend's process id modulo :data:`SLOTS` on PostgreSQL, so concurrent writers seldom update
the same row. Readers sum the slots (:func:`live_counts`).
"""
from __future__ import annotations

from sqlalchemy import Connection, func, select, text
from sqlalchemy.orm import Session

from benchbook.persistence.tables import RecordCount

SLOTS = 8
"""PostgreSQL's slots per collection and schema."""
TRIGGERS = ("records_count_insert", "records_count_delete", "records_count_update")
FUNCTION = "benchbook_count_records"
"""PostgreSQL's trigger function."""


def _add(dialect: str, row: str, by: int, when: str | None = None) -> str:
    """SQL adding ``by`` to the count of ``row``'s (``NEW`` or ``OLD``) collection and schema,
    only ``when`` that holds (a condition on the row) if given."""
    slot = f"mod(pg_backend_pid(), {SLOTS})" if dialect == "postgresql" else "0"
    values = f"{row}.dataset_id, {row}.schema_id, {slot}, {by}"
    given = f"SELECT {values} WHERE {when}" if when else f"VALUES ({values})"
    return (f"INSERT INTO record_counts (dataset_id, schema_id, slot, live) {given} "
            f"ON CONFLICT (dataset_id, schema_id, slot) DO UPDATE SET live = record_counts.live + {by};")


_MOVED = ("(OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.dataset_id <> NEW.dataset_id "
          "OR OLD.schema_id <> NEW.schema_id")


_EVENTS = ((TRIGGERS[0], "INSERT", "NEW.deleted_at IS NULL"), (TRIGGERS[1], "DELETE", "OLD.deleted_at IS NULL"),
           (TRIGGERS[2], "UPDATE OF deleted_at, dataset_id, schema_id", _MOVED))
"""Each trigger: its name, the event it follows and when it fires."""


def create_statements(dialect: str) -> list[str]:
    """The DDL creating the triggers (and PostgreSQL's function) on ``dialect``."""
    if dialect == "postgresql":
        body = (f"IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.deleted_at IS NULL THEN {_add(dialect, 'OLD', -1)} END IF; "
                f"IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.deleted_at IS NULL THEN {_add(dialect, 'NEW', 1)} END IF; "
                "RETURN NULL;")
        function = f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body} END $$"
        return [function, *(f"CREATE TRIGGER {name} AFTER {event} ON records FOR EACH ROW WHEN ({when}) "
                            f"EXECUTE FUNCTION {FUNCTION}()" for name, event, when in _EVENTS)]
    bodies = {TRIGGERS[0]: _add(dialect, "NEW", 1), TRIGGERS[1]: _add(dialect, "OLD", -1),
              TRIGGERS[2]: _add(dialect, "OLD", -1, "OLD.deleted_at IS NULL") + " "
              + _add(dialect, "NEW", 1, "NEW.deleted_at IS NULL")}
    return [f"CREATE TRIGGER {name} AFTER {event} ON records WHEN {when} BEGIN {bodies[name]} END"
            for name, event, when in _EVENTS]


def drop_statements(dialect: str) -> list[str]:
    """The DDL dropping them (those that exist)."""
    if dialect == "postgresql":
        return [*(f"DROP TRIGGER IF EXISTS {name} ON records" for name in TRIGGERS),
                f"DROP FUNCTION IF EXISTS {FUNCTION}()"]
    return [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS]


def recount(conn: Connection) -> None:
    """Set the counts from the records themselves (all in slot 0), in ``conn``'s transaction."""
    conn.execute(text("DELETE FROM record_counts"))
    conn.execute(text("INSERT INTO record_counts (dataset_id, schema_id, slot, live) "
                      "SELECT dataset_id, schema_id, 0, count(*) FROM records WHERE deleted_at IS NULL "
                      "GROUP BY dataset_id, schema_id"))


def live_counts(session: Session, dataset_id: str) -> dict[str, int]:
    """Live records of collection ``dataset_id`` by schema id (schemas it never held left out)."""
    rows = session.execute(select(RecordCount.schema_id, func.sum(RecordCount.live))
                           .where(RecordCount.dataset_id == dataset_id).group_by(RecordCount.schema_id))
    return {schema_id: int(n or 0) for schema_id, n in rows}


def present(conn: Connection) -> set[str]:
    """Which of :data:`TRIGGERS` the database at ``conn`` has."""
    sql = ("SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
           "WHERE c.relname = 'records' AND NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace"
           if conn.dialect.name == "postgresql" else
           "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'records'")
    return {str(name) for name in conn.execute(text(sql)).scalars()} & set(TRIGGERS)


def drift(conn: Connection) -> int:
    """How many (collection, schema) pairs the kept counts get wrong, by a count of the records."""
    sql = ("SELECT count(*) FROM (SELECT dataset_id, schema_id, sum(live) AS n FROM record_counts "
           "GROUP BY dataset_id, schema_id HAVING sum(live) <> 0) k FULL OUTER JOIN (SELECT dataset_id, schema_id, "
           "count(*) AS n FROM records WHERE deleted_at IS NULL GROUP BY dataset_id, schema_id) r "
           "ON r.dataset_id = k.dataset_id AND r.schema_id = k.schema_id WHERE k.n IS DISTINCT FROM r.n")
    return int(conn.execute(text(sql)).scalar_one())


def repair(conn: Connection) -> None:
    """Create the triggers again and count the records afresh, in ``conn``'s transaction."""
    dialect = "postgresql" if conn.dialect.name == "postgresql" else "sqlite"
    for statement in (*drop_statements(dialect), *create_statements(dialect)):
        conn.exec_driver_sql(statement)
    recount(conn)
