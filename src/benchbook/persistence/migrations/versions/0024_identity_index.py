"""identity index: the create and delete entries still holding the identity written before 0023

Migration 0023 stopped writing a record's ``id``, ``dataset_id``, name and parent into its
create and delete entries; entries written before keep them, and the background conversion of
``domain.history.storage`` drops what the entry's columns and the record can tell. Two partial
indexes hold just those entries (``entry_triggers.IDENTITY_INDEXES``), so that counting them for
``GET /audit/storage`` and walking them reads those alone, not every entry; on a database
written from 0023 on they stay empty. Building them reads every entry once (about a second per
1,000,000 on SQLite).

Revision ID: 0024_identity_index
Revises: 0023_identity_once
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

revision = "0024_identity_index"
down_revision = "0023_identity_once"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
IDENTITY_INDEXES = {'create': 'ix_audit_entries_created_identity', 'delete': 'ix_audit_entries_deleted_identity'}
CREATE = {
    "sqlite": (
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_created_identity ON audit_entries (id) WHERE action '
         "= 'create' AND entity_type = 'record' AND json_type(new_data, '$.id') IS NOT NULL"),
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_deleted_identity ON audit_entries (id) WHERE action '
         "= 'delete' AND entity_type = 'record' AND json_type(old_data, '$.id') IS NOT NULL"),
    ),
    "postgresql": (
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_created_identity ON audit_entries (id) WHERE action '
         "= 'create' AND entity_type = 'record' AND new_data ? 'id'"),
        ('CREATE INDEX IF NOT EXISTS ix_audit_entries_deleted_identity ON audit_entries (id) WHERE action '
         "= 'delete' AND entity_type = 'record' AND old_data ? 'id'"),
    ),
}


def upgrade() -> None:
    dialect = "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"
    for statement in CREATE[dialect]:
        op.execute(statement)


def downgrade() -> None:
    for name in IDENTITY_INDEXES.values():
        op.execute(f"DROP INDEX IF EXISTS {name}")
