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

revision = "0026_edit_identity"
down_revision = "0025_restore_identity"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
# back: edits' entries filled in again
DOWN = {
    "sqlite": (
        ("UPDATE audit_entries AS e SET old_data = json_insert(e.old_data, '$.id', e.entity_id, "
         "'$.dataset_id', e.dataset_id), new_data = json_insert(e.new_data, '$.id', e.entity_id, "
         "'$.dataset_id', e.dataset_id) WHERE e.entity_type = 'record' AND e.action = 'update' AND "
         "json_type(e.new_data, '$.id') IS NULL"),
    ),
    "postgresql": (
        ("UPDATE audit_entries AS e SET old_data = jsonb_build_object('id', e.entity_id, 'dataset_id', "
         "e.dataset_id) || e.old_data, new_data = jsonb_build_object('id', e.entity_id, 'dataset_id', "
         "e.dataset_id) || e.new_data WHERE e.entity_type = 'record' AND e.action = 'update' AND NOT "
         "(e.new_data ? 'id')"),
    ),
}


def upgrade() -> None:
    """Nothing to change: edits written before keep their keys and are read as they are."""


def downgrade() -> None:
    for statement in DOWN["postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"]:
        op.execute(statement)
