"""The triggers that keep a record's create and delete entries true (migration 0017,
``domain.history.own_values``): before any statement changes a record's values or removes the
row, the database copies the values into every create entry (``new_data``) and delete entry
(``old_data``) of the record still without them. Used by the migration and by
``benchbook doctor``, which recreates them when they are missing.
"""
from __future__ import annotations

from sqlalchemy import Connection

from benchbook.persistence import triggers

KINDS = (("create", "new_data"), ("delete", "old_data"))
"""Record entry action → the column whose ``data`` stays the record's own until it changes."""
TRIGGERS = ("records_keep_own_values_update", "records_keep_own_values_delete")
FUNCTION = "benchbook_keep_own_values"
"""PostgreSQL's trigger function."""

_SQLITE_KEEP = " ".join(
    f"UPDATE audit_entries SET {column} = json_set({column}, '$.data', json(OLD.data)) "
    f"WHERE entity_type = 'record' AND entity_id = OLD.id AND action = '{action}' "
    f"AND json_type({column}, '$.data') IS NULL;" for action, column in KINDS)
_PG_KEEP = " ".join(
    f"UPDATE audit_entries SET {column} = {column} || jsonb_build_object('data', OLD.data) "
    f"WHERE entity_type = 'record' AND entity_id = OLD.id AND action = '{action}' "
    f"AND NOT ({column} ? 'data');" for action, column in KINDS)


INDEXES = {"create": "ix_audit_entries_created_values", "delete": "ix_audit_entries_deleted_values"}
"""Action → the partial index of the record entries of that action still holding values (few:
entries written before 0017 until converted, and those the triggers filled), which the
conversion of ``domain.history.storage`` counts and walks instead of every entry."""


def holding(dialect: str, action: str, column: str, alias: str | None = None) -> str:
    """SQL: a record's ``action`` entry whose ``column`` holds values (``data``); the condition
    of :data:`INDEXES`, to be written the same in a query that reads them."""
    at = f"{alias}." if alias else ""
    has = f"{at}{column} ? 'data'" if dialect == "postgresql" else f"json_type({at}{column}, '$.data') IS NOT NULL"
    return f"{at}action = '{action}' AND {at}entity_type = 'record' AND {has}"


def index_statements(dialect: str) -> list[str]:
    """The DDL creating :data:`INDEXES` on ``dialect``."""
    return [f"CREATE INDEX IF NOT EXISTS {INDEXES[action]} ON audit_entries (id) WHERE {holding(dialect, action, column)}"
            for action, column in KINDS]


def create_statements(dialect: str) -> list[str]:
    """The DDL creating the triggers (and PostgreSQL's function) on ``dialect``
    (``sqlite`` or ``postgresql``)."""
    if dialect == "postgresql":
        function = (f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"{_PG_KEEP} IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$")
        on_update = (f"CREATE TRIGGER {TRIGGERS[0]} BEFORE UPDATE OF data ON records FOR EACH ROW "
                     f"WHEN (OLD.data IS DISTINCT FROM NEW.data) EXECUTE FUNCTION {FUNCTION}()")
        on_delete = f"CREATE TRIGGER {TRIGGERS[1]} BEFORE DELETE ON records FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()"
        return [function, on_update, on_delete]
    on_update = (f"CREATE TRIGGER {TRIGGERS[0]} BEFORE UPDATE OF data ON records WHEN OLD.data IS NOT NEW.data "
                 f"BEGIN {_SQLITE_KEEP} END")
    return [on_update, f"CREATE TRIGGER {TRIGGERS[1]} BEFORE DELETE ON records BEGIN {_SQLITE_KEEP} END"]


def drop_statements(dialect: str) -> list[str]:
    """The DDL dropping them (those that exist)."""
    if dialect == "postgresql":
        return [*(f"DROP TRIGGER IF EXISTS {name} ON records" for name in TRIGGERS),
                f"DROP FUNCTION IF EXISTS {FUNCTION}()"]
    return [f"DROP TRIGGER IF EXISTS {name}" for name in TRIGGERS]


def present(conn: Connection) -> set[str]:
    """Which of :data:`TRIGGERS` the database at ``conn`` has."""
    return triggers.existing(conn) & set(TRIGGERS)


def recreate(conn: Connection) -> None:
    """Drop what is left of the triggers and create them all again, in ``conn``'s transaction."""
    dialect = "postgresql" if conn.dialect.name == "postgresql" else "sqlite"
    triggers.replace(conn, drop_statements(dialect), create_statements(dialect))
