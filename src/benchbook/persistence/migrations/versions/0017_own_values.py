"""own values: a record's create and delete entries keep its values only once the record changes

A record's ``create`` entry held the record's values in ``new_data.data``, a second copy of the
row's ``data`` for as long as the record stays as it was created: at 1,000,000 imported records
about a quarter of the database (issue 15, run S3 in docs/performance.md). A ``delete`` entry
held another in ``old_data.data``, though a soft-deleted record keeps its values. From this
revision both are written with the record's identity only (no ``data``), and the database itself
copies the row's values into every entry of the record still without them the moment the values
first change or the row goes: the triggers below run before any ``UPDATE`` that changes
``records.data`` and before any ``DELETE`` of a record (a purge, or a cascade from its parent or
collection), whatever code or statement makes it. So such an entry without ``data`` always
means "the values the record holds now", and ``domain.history.own_values`` reads them from the
record (docs/decisions.md, *History*).

Entries written before this revision keep their values; nothing is rewritten here (the
background conversion of ``domain.history.storage`` drops the copies the records still hold). Two
partial indexes hold the create and delete entries that hold values (``own_values.INDEXES``), so
that counting and converting them reads those alone, not every entry.
The downgrade copies the values into every such entry still without them before it drops the
triggers.

A later migration that rebuilds ``records`` (Alembic's batch mode on SQLite copies the table
and drops its triggers with it) must create these triggers again;
``tests/domain/test_own_values.py`` checks that they fire at the newest revision.

Revision ID: 0017_own_values
Revises: 0016_sort_indexes
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

from benchbook.persistence.migrations.frozen_triggers import DROP, LAYOUT_17

revision = "0017_own_values"
down_revision = "0016_sort_indexes"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
KINDS = (("create", "new_data"), ("delete", "old_data"))
INDEXES = {'create': 'ix_audit_entries_created_values', 'delete': 'ix_audit_entries_deleted_values'}
_INDEXES = {
    "sqlite": (
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_created_values ON audit_entries (id) WHERE action = '
         "'create' AND entity_type = 'record' AND json_type(new_data, '$.data') IS NOT NULL"),
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_deleted_values ON audit_entries (id) WHERE action = '
         "'delete' AND entity_type = 'record' AND json_type(old_data, '$.data') IS NOT NULL"),
    ),
    "postgresql": (
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_created_values ON audit_entries (id) WHERE action = '
         "'create' AND entity_type = 'record' AND new_data ? 'data'"),
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_deleted_values ON audit_entries (id) WHERE action = '
         "'delete' AND entity_type = 'record' AND old_data ? 'data'"),
    ),
}
CREATE = {dialect: (*LAYOUT_17[dialect], *_INDEXES[dialect]) for dialect in LAYOUT_17}

def upgrade() -> None:
    for statement in CREATE["postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"]:
        op.execute(statement)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for action, column in KINDS:
        if postgresql:
            op.execute(f"UPDATE audit_entries e SET {column} = e.{column} || jsonb_build_object('data', r.data) "
                       f"FROM records r WHERE r.id = e.entity_id AND e.entity_type = 'record' "
                       f"AND e.action = '{action}' AND NOT (e.{column} ? 'data')")
        else:
            op.execute(f"UPDATE audit_entries SET {column} = json_set({column}, '$.data', "
                       "json((SELECT data FROM records WHERE records.id = audit_entries.entity_id))) "
                       f"WHERE entity_type = 'record' AND action = '{action}' "
                       f"AND json_type({column}, '$.data') IS NULL "
                       "AND EXISTS (SELECT 1 FROM records WHERE records.id = audit_entries.entity_id)")
    for statement in DROP["postgresql" if postgresql else "sqlite"]:
        op.execute(statement)
    for name in INDEXES.values():
        op.execute(f"DROP INDEX IF EXISTS {name}")
