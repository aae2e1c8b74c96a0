"""identity once: a record's create and delete entries hold only what the record cannot tell

After migration 0017 a record's ``create`` entry held the record's identity (``id``,
``schema_name``, ``dataset_id``, ``collection``, ``parent_record_id``, ``natural_name``), about
200 bytes of JSON per entry, half of what an imported record costs in history (issue 15). Two of
those keys repeat the entry's own columns (``entity_id``, ``dataset_id``), which never change; two
(``natural_name``, ``parent_record_id``) are the record's own until the record changes, as its
values are. From this revision a create or delete entry is written with ``schema_name`` and
``collection`` alone; ``domain.history.own_values`` reads the rest from the entry's columns and
from the record, and the triggers of 0017, recreated here, fire also when the record's
``natural_name`` or ``parent_id`` changes and copy those two in with the values
(``persistence.entry_triggers``; a key the entry already holds is never overwritten, so entries
written before keep theirs). Nothing is rewritten on the way up. The downgrade writes the
identity back into every entry written without it, then puts back 0017's triggers.

Revision ID: 0023_identity_once
Revises: 0022_edits_index
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

from benchbook.persistence.migrations.frozen_triggers import DROP, LAYOUT_17, LAYOUT_23

revision = "0023_identity_once"
down_revision = "0022_edits_index"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
# the triggers of layout 23 in place of 0017's; back: the entries' values filled in again, 0017's triggers
_FILL = {
    "sqlite": (
        ("UPDATE audit_entries AS e SET new_data = json_insert(e.new_data, '$.id', e.entity_id, "
         "'$.dataset_id', e.dataset_id) WHERE e.entity_type = 'record' AND e.action = 'create' AND "
         "json_type(e.new_data, '$.id') IS NULL"),
        ("UPDATE audit_entries AS e SET new_data = json_insert(e.new_data, '$.natural_name', (SELECT "
         "natural_name FROM records r WHERE r.id = e.entity_id), '$.parent_record_id', (SELECT parent_id "
         'FROM records r WHERE r.id = e.entity_id)) WHERE EXISTS (SELECT 1 FROM records r WHERE r.id = '
         "e.entity_id) AND e.entity_type = 'record' AND e.action = 'create' AND json_type(e.new_data, "
         "'$.data') IS NULL"),
        ("UPDATE audit_entries AS e SET old_data = json_insert(e.old_data, '$.id', e.entity_id, "
         "'$.dataset_id', e.dataset_id) WHERE e.entity_type = 'record' AND e.action = 'delete' AND "
         "json_type(e.old_data, '$.id') IS NULL"),
        ("UPDATE audit_entries AS e SET old_data = json_insert(e.old_data, '$.natural_name', (SELECT "
         "natural_name FROM records r WHERE r.id = e.entity_id), '$.parent_record_id', (SELECT parent_id "
         'FROM records r WHERE r.id = e.entity_id)) WHERE EXISTS (SELECT 1 FROM records r WHERE r.id = '
         "e.entity_id) AND e.entity_type = 'record' AND e.action = 'delete' AND json_type(e.old_data, "
         "'$.data') IS NULL"),
    ),
    "postgresql": (
        ("UPDATE audit_entries AS e SET new_data = jsonb_build_object('id', e.entity_id, 'dataset_id', "
         "e.dataset_id) || e.new_data WHERE e.entity_type = 'record' AND e.action = 'create' AND NOT "
         "(e.new_data ? 'id')"),
        ("UPDATE audit_entries AS e SET new_data = jsonb_build_object('natural_name', r.natural_name, "
         "'parent_record_id', r.parent_id) || e.new_data FROM records r WHERE r.id = e.entity_id AND "
         "e.entity_type = 'record' AND e.action = 'create' AND NOT (e.new_data ? 'data')"),
        ("UPDATE audit_entries AS e SET old_data = jsonb_build_object('id', e.entity_id, 'dataset_id', "
         "e.dataset_id) || e.old_data WHERE e.entity_type = 'record' AND e.action = 'delete' AND NOT "
         "(e.old_data ? 'id')"),
        ("UPDATE audit_entries AS e SET old_data = jsonb_build_object('natural_name', r.natural_name, "
         "'parent_record_id', r.parent_id) || e.old_data FROM records r WHERE r.id = e.entity_id AND "
         "e.entity_type = 'record' AND e.action = 'delete' AND NOT (e.old_data ? 'data')"),
    ),
}
UP = {dialect: (*DROP[dialect], *LAYOUT_23[dialect]) for dialect in DROP}
DOWN = {dialect: (*_FILL[dialect], *DROP[dialect], *LAYOUT_17[dialect]) for dialect in DROP}

def _dialect() -> str:
    return "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"


def upgrade() -> None:
    for statement in UP[_dialect()]:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWN[_dialect()]:
        op.execute(statement)
