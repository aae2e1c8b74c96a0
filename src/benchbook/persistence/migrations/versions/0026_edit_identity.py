"""edit identity: a record's edit stores neither its id nor its collection's id

A record's ``update`` entry held the record's identity in both columns, ``id`` and
``dataset_id`` included: about 150 bytes per edit that the entry's own ``entity_id`` and
``dataset_id`` columns hold already. From this revision edits are written without those two
keys (``rows.edit_identity``) and ``domain.history.own_values`` reads them from the columns; the
name and parent stay in the entry (they say what the record was called and where it sat at the
edit). Nothing changes on the way up; the downgrade writes the two keys back into every edit
written without them.

Revision ID: 0026_edit_identity
Revises: 0025_restore_identity
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

from benchbook.persistence.entry_triggers import fill_edit_statements

revision = "0026_edit_identity"
down_revision = "0025_restore_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing to change: edits written before keep their keys and are read as they are."""


def downgrade() -> None:
    for statement in fill_edit_statements("postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"):
        op.execute(statement)
