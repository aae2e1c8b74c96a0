"""The triggers that keep a record's create and delete entries true (made by migrations 0017,
0023 and 0025; ``domain.history.own_values``): before any statement changes a record's values,
its name or its parent, or removes the row, the database copies what the record holds into every
create entry (``new_data``) and delete entry (``old_data``) of the record still without its
values: the values (``data``) and, where the entry does not hold them, ``natural_name`` and
``parent_record_id``; and the name and parent into each restore entry without them. Used by
``benchbook doctor``, which recreates them when they are missing; the migrations carry their own
copies of the statements they sent (issue 39 item 7), so changing these needs a new migration.
"""
from __future__ import annotations

from sqlalchemy import Connection

from benchbook.persistence import json_sql, triggers

KINDS = (("create", "new_data"), ("delete", "old_data"))
"""Record entry action → the column whose ``data`` stays the record's own until it changes."""
FROM_RECORD = (("natural_name", "natural_name"), ("parent_record_id", "parent_id"))
"""Identity key of such an entry → the ``records`` column it is read from while the entry lacks
``data`` (migration 0023: written without them, copied in by the triggers with the values)."""
FROM_ENTRY = (("id", "entity_id"), ("dataset_id", "dataset_id"))
"""Identity key of such an entry → the ``audit_entries`` column holding the same (migration
0023: never written into the JSON again; the entry's own columns never change)."""
TRIGGERS = ("records_keep_own_values_update", "records_keep_own_values_delete")
FUNCTION = "benchbook_keep_own_values"
"""PostgreSQL's trigger function."""


RESTORE = "restore"
"""A record's restore entry: its ``old_data`` and ``new_data`` both hold the record's identity,
without ``id``, ``dataset_id``, name and parent (migration 0025), which are read as for a create
(the entry's columns; the record's name and parent until they change)."""
EDIT = "update"
"""A record's edit: both columns hold the record's identity (name and parent as they were then)
and the values that changed; from migration 0026 on without ``id`` and ``dataset_id``, which
are the entry's own columns."""
BOTH = ("old_data", "new_data")
"""The columns of a restore entry or an edit that each hold the record's identity."""
COLUMNS = ("data", "natural_name", "parent_id")
"""The ``records`` columns whose change fires the update trigger."""


def _keep(dialect: str) -> str:
    """The trigger's statements: the record's values, name and parent added to each create and
    delete entry still without its values, and the name and parent to each restore entry without
    them. A key an entry holds keeps its value (SQLite's ``json_insert``, PostgreSQL's ``||``
    whose right-hand side wins): an entry written before 0023 keeps the name and parent it was
    written with, whatever the record's are now."""
    more = [(key, f"OLD.{column}") for key, column in FROM_RECORD]
    data = [("data", json_sql.json_value(dialect, "OLD.data")), *more]
    keep = [f"UPDATE audit_entries SET {column} = {json_sql.with_missing(dialect, column, data)} "
            f"WHERE entity_type = 'record' AND entity_id = OLD.id AND action = '{action}' "
            f"AND {json_sql.lacks_key(dialect, column, 'data')};" for action, column in KINDS]
    both = ", ".join(f"{column} = {json_sql.with_missing(dialect, column, more)}" for column in BOTH)
    keep.append(f"UPDATE audit_entries SET {both} WHERE entity_type = 'record' AND entity_id = OLD.id "
                f"AND action = '{RESTORE}' AND {json_sql.lacks_key(dialect, 'new_data', 'natural_name')};")
    return " ".join(keep)


INDEXES = {"create": "ix_audit_entries_created_values", "delete": "ix_audit_entries_deleted_values"}
"""Action → the partial index of the record entries of that action still holding values (few:
entries written before 0017 until converted, and those the triggers filled), which the
conversion of ``domain.history.storage`` counts and walks instead of every entry."""


IDENTITY_INDEXES = {"create": "ix_audit_entries_created_identity", "delete": "ix_audit_entries_deleted_identity"}
"""Action → the partial index of the record entries of that action still holding their ``id``
(entries written before 0023 until converted; none after), which the conversion of
``domain.history.storage`` counts and walks instead of every entry (migration 0024)."""


def holding(dialect: str, action: str, column: str, alias: str | None = None, key: str = "data") -> str:
    """SQL: a record's ``action`` entry whose ``column`` holds ``key`` (``data``: values, the
    condition of :data:`INDEXES`; ``id``: its identity, that of :data:`IDENTITY_INDEXES`), to be
    written the same in a query that reads them."""
    at = f"{alias}." if alias else ""
    return f"{at}action = '{action}' AND {at}entity_type = 'record' AND {json_sql.has_key(dialect, at + column, key)}"


def create_statements(dialect: str) -> list[str]:
    """The DDL creating the triggers (and PostgreSQL's function) on ``dialect`` (``sqlite`` or
    ``postgresql``): they fire on a change of one of :data:`COLUMNS` and on a delete."""
    columns = ", ".join(COLUMNS)
    if dialect == "postgresql":
        function = (f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"{_keep(dialect)} IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$")
        changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in COLUMNS)
        on_update = (f"CREATE TRIGGER {TRIGGERS[0]} BEFORE UPDATE OF {columns} ON records FOR EACH ROW "
                     f"WHEN ({changed}) EXECUTE FUNCTION {FUNCTION}()")
        on_delete = f"CREATE TRIGGER {TRIGGERS[1]} BEFORE DELETE ON records FOR EACH ROW EXECUTE FUNCTION {FUNCTION}()"
        return [function, on_update, on_delete]
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in COLUMNS)
    keep = _keep(dialect)
    on_update = f"CREATE TRIGGER {TRIGGERS[0]} BEFORE UPDATE OF {columns} ON records WHEN {changed} BEGIN {keep} END"
    return [on_update, f"CREATE TRIGGER {TRIGGERS[1]} BEFORE DELETE ON records BEGIN {keep} END"]


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
    """Drop what is left of the triggers and create them all again (:func:`create_statements`),
    in ``conn``'s transaction."""
    dialect = "postgresql" if conn.dialect.name == "postgresql" else "sqlite"
    triggers.replace(conn, drop_statements(dialect), create_statements(dialect))
