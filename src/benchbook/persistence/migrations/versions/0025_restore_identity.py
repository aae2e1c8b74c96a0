"""restore identity: a record's restore entry holds only what the record cannot tell

A record's ``restore`` entry holds the record's identity twice (``old_data`` and ``new_data``
alike, about 400 bytes): after a delete and a restore-all of many records, most of the history's
size (``bench/history.py``). From this revision both hold ``schema_name`` and ``collection``
alone, as a create entry's ``new_data`` does since 0023: ``id`` and ``dataset_id`` are the
entry's columns, the name and parent the record's own until they change, when the triggers of
``persistence.entry_triggers`` (recreated here, layout 25) copy them into both columns. Nothing is
rewritten on the way up; the downgrade writes the identity back and puts back 0023's triggers.

Revision ID: 0025_restore_identity
Revises: 0024_identity_index
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

from benchbook.persistence.migrations.frozen_triggers import DROP, LAYOUT_23

revision = "0025_restore_identity"
down_revision = "0024_identity_index"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
# the triggers of layout 25 in place of 23's; back: restores' entries filled in again, 23's triggers
_LAYOUT_25 = {
    "sqlite": (
        ('CREATE TRIGGER records_keep_own_values_update BEFORE UPDATE OF data, natural_name, parent_id ON '
         'records WHEN OLD.data IS NOT NEW.data OR OLD.natural_name IS NOT NEW.natural_name OR '
         'OLD.parent_id IS NOT NEW.parent_id BEGIN UPDATE audit_entries SET new_data = '
         "json_insert(new_data, '$.data', json(OLD.data), '$.natural_name', OLD.natural_name, "
         "'$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND entity_id = OLD.id AND "
         "action = 'create' AND json_type(new_data, '$.data') IS NULL; UPDATE audit_entries SET old_data "
         "= json_insert(old_data, '$.data', json(OLD.data), '$.natural_name', OLD.natural_name, "
         "'$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND entity_id = OLD.id AND "
         "action = 'delete' AND json_type(old_data, '$.data') IS NULL; UPDATE audit_entries SET old_data "
         "= json_insert(old_data, '$.natural_name', OLD.natural_name, '$.parent_record_id', "
         "OLD.parent_id), new_data = json_insert(new_data, '$.natural_name', OLD.natural_name, "
         "'$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND entity_id = OLD.id AND "
         "action = 'restore' AND json_type(new_data, '$.natural_name') IS NULL; END"),
        ('CREATE TRIGGER records_keep_own_values_delete BEFORE DELETE ON records BEGIN UPDATE '
         "audit_entries SET new_data = json_insert(new_data, '$.data', json(OLD.data), '$.natural_name', "
         "OLD.natural_name, '$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND "
         "entity_id = OLD.id AND action = 'create' AND json_type(new_data, '$.data') IS NULL; UPDATE "
         "audit_entries SET old_data = json_insert(old_data, '$.data', json(OLD.data), '$.natural_name', "
         "OLD.natural_name, '$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND "
         "entity_id = OLD.id AND action = 'delete' AND json_type(old_data, '$.data') IS NULL; UPDATE "
         "audit_entries SET old_data = json_insert(old_data, '$.natural_name', OLD.natural_name, "
         "'$.parent_record_id', OLD.parent_id), new_data = json_insert(new_data, '$.natural_name', "
         "OLD.natural_name, '$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND "
         "entity_id = OLD.id AND action = 'restore' AND json_type(new_data, '$.natural_name') IS NULL; "
         'END'),
    ),
    "postgresql": (
        ('CREATE OR REPLACE FUNCTION benchbook_keep_own_values() RETURNS trigger LANGUAGE plpgsql AS $$ '
         "BEGIN UPDATE audit_entries SET new_data = jsonb_build_object('data', OLD.data, 'natural_name', "
         "OLD.natural_name, 'parent_record_id', OLD.parent_id) || new_data WHERE entity_type = 'record' "
         "AND entity_id = OLD.id AND action = 'create' AND NOT (new_data ? 'data'); UPDATE audit_entries "
         "SET old_data = jsonb_build_object('data', OLD.data, 'natural_name', OLD.natural_name, "
         "'parent_record_id', OLD.parent_id) || old_data WHERE entity_type = 'record' AND entity_id = "
         "OLD.id AND action = 'delete' AND NOT (old_data ? 'data'); UPDATE audit_entries SET old_data = "
         "jsonb_build_object('natural_name', OLD.natural_name, 'parent_record_id', OLD.parent_id) || "
         "old_data, new_data = jsonb_build_object('natural_name', OLD.natural_name, 'parent_record_id', "
         "OLD.parent_id) || new_data WHERE entity_type = 'record' AND entity_id = OLD.id AND action = "
         "'restore' AND NOT (new_data ? 'natural_name'); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; "
         'RETURN NEW; END $$'),
        ('CREATE TRIGGER records_keep_own_values_update BEFORE UPDATE OF data, natural_name, parent_id ON '
         'records FOR EACH ROW WHEN (OLD.data IS DISTINCT FROM NEW.data OR OLD.natural_name IS DISTINCT '
         'FROM NEW.natural_name OR OLD.parent_id IS DISTINCT FROM NEW.parent_id) EXECUTE FUNCTION '
         'benchbook_keep_own_values()'),
        ('CREATE TRIGGER records_keep_own_values_delete BEFORE DELETE ON records FOR EACH ROW EXECUTE '
         'FUNCTION benchbook_keep_own_values()'),
    ),
}
_FILL_RESTORE = {
    "sqlite": (
        ("UPDATE audit_entries AS e SET old_data = json_insert(e.old_data, '$.id', e.entity_id, "
         "'$.dataset_id', e.dataset_id), new_data = json_insert(e.new_data, '$.id', e.entity_id, "
         "'$.dataset_id', e.dataset_id) WHERE e.entity_type = 'record' AND e.action = 'restore' AND "
         "json_type(e.new_data, '$.id') IS NULL"),
        ("UPDATE audit_entries AS e SET old_data = json_insert(e.old_data, '$.natural_name', (SELECT "
         "natural_name FROM records r WHERE r.id = e.entity_id), '$.parent_record_id', (SELECT parent_id "
         "FROM records r WHERE r.id = e.entity_id)), new_data = json_insert(e.new_data, '$.natural_name', "
         "(SELECT natural_name FROM records r WHERE r.id = e.entity_id), '$.parent_record_id', (SELECT "
         'parent_id FROM records r WHERE r.id = e.entity_id)) WHERE EXISTS (SELECT 1 FROM records r WHERE '
         "r.id = e.entity_id) AND e.entity_type = 'record' AND e.action = 'restore' AND "
         "json_type(e.new_data, '$.natural_name') IS NULL"),
    ),
    "postgresql": (
        ("UPDATE audit_entries AS e SET old_data = jsonb_build_object('id', e.entity_id, 'dataset_id', "
         "e.dataset_id) || e.old_data, new_data = jsonb_build_object('id', e.entity_id, 'dataset_id', "
         "e.dataset_id) || e.new_data WHERE e.entity_type = 'record' AND e.action = 'restore' AND NOT "
         "(e.new_data ? 'id')"),
        ("UPDATE audit_entries AS e SET old_data = jsonb_build_object('natural_name', r.natural_name, "
         "'parent_record_id', r.parent_id) || e.old_data, new_data = jsonb_build_object('natural_name', "
         "r.natural_name, 'parent_record_id', r.parent_id) || e.new_data FROM records r WHERE r.id = "
         "e.entity_id AND e.entity_type = 'record' AND e.action = 'restore' AND NOT (e.new_data ? "
         "'natural_name')"),
    ),
}
UP = {dialect: (*DROP[dialect], *_LAYOUT_25[dialect]) for dialect in DROP}
DOWN = {dialect: (*_FILL_RESTORE[dialect], *DROP[dialect], *LAYOUT_23[dialect]) for dialect in DROP}

def _dialect() -> str:
    return "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"


def upgrade() -> None:
    for statement in UP[_dialect()]:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWN[_dialect()]:
        op.execute(statement)
