"""The record-entry triggers of migrations 0017, 0023 and 0025 as those migrations sent them
(issue 39 item 7): each layout once, for the migration that makes it and the one whose downgrade
makes it again. Frozen: never edited (a new layout is a new constant, in its own migration);
the live triggers are ``persistence/entry_triggers.py``'s.
"""
from __future__ import annotations

DROP = {
    "sqlite": (
        'DROP TRIGGER IF EXISTS records_keep_own_values_update',
        'DROP TRIGGER IF EXISTS records_keep_own_values_delete',
    ),
    "postgresql": (
        'DROP TRIGGER IF EXISTS records_keep_own_values_update ON records',
        'DROP TRIGGER IF EXISTS records_keep_own_values_delete ON records',
        'DROP FUNCTION IF EXISTS benchbook_keep_own_values()',
    ),
}
"""Drops the triggers (and PostgreSQL's function) of any layout."""
LAYOUT_17 = {
    "sqlite": (
        ('CREATE TRIGGER records_keep_own_values_update BEFORE UPDATE OF data ON records WHEN OLD.data IS '
         "NOT NEW.data BEGIN UPDATE audit_entries SET new_data = json_insert(new_data, '$.data', "
         "json(OLD.data)) WHERE entity_type = 'record' AND entity_id = OLD.id AND action = 'create' AND "
         "json_type(new_data, '$.data') IS NULL; UPDATE audit_entries SET old_data = "
         "json_insert(old_data, '$.data', json(OLD.data)) WHERE entity_type = 'record' AND entity_id = "
         "OLD.id AND action = 'delete' AND json_type(old_data, '$.data') IS NULL; END"),
        ('CREATE TRIGGER records_keep_own_values_delete BEFORE DELETE ON records BEGIN UPDATE '
         "audit_entries SET new_data = json_insert(new_data, '$.data', json(OLD.data)) WHERE entity_type "
         "= 'record' AND entity_id = OLD.id AND action = 'create' AND json_type(new_data, '$.data') IS "
         "NULL; UPDATE audit_entries SET old_data = json_insert(old_data, '$.data', json(OLD.data)) WHERE "
         "entity_type = 'record' AND entity_id = OLD.id AND action = 'delete' AND json_type(old_data, "
         "'$.data') IS NULL; END"),
    ),
    "postgresql": (
        ('CREATE OR REPLACE FUNCTION benchbook_keep_own_values() RETURNS trigger LANGUAGE plpgsql AS $$ '
         "BEGIN UPDATE audit_entries SET new_data = jsonb_build_object('data', OLD.data) || new_data "
         "WHERE entity_type = 'record' AND entity_id = OLD.id AND action = 'create' AND NOT (new_data ? "
         "'data'); UPDATE audit_entries SET old_data = jsonb_build_object('data', OLD.data) || old_data "
         "WHERE entity_type = 'record' AND entity_id = OLD.id AND action = 'delete' AND NOT (old_data ? "
         "'data'); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $$"),
        ('CREATE TRIGGER records_keep_own_values_update BEFORE UPDATE OF data ON records FOR EACH ROW '
         'WHEN (OLD.data IS DISTINCT FROM NEW.data) EXECUTE FUNCTION benchbook_keep_own_values()'),
        ('CREATE TRIGGER records_keep_own_values_delete BEFORE DELETE ON records FOR EACH ROW EXECUTE '
         'FUNCTION benchbook_keep_own_values()'),
    ),
}
"""0017: the record's values copied into create and delete entries."""
LAYOUT_23 = {
    "sqlite": (
        ('CREATE TRIGGER records_keep_own_values_update BEFORE UPDATE OF data, natural_name, parent_id ON '
         'records WHEN OLD.data IS NOT NEW.data OR OLD.natural_name IS NOT NEW.natural_name OR '
         'OLD.parent_id IS NOT NEW.parent_id BEGIN UPDATE audit_entries SET new_data = '
         "json_insert(new_data, '$.data', json(OLD.data), '$.natural_name', OLD.natural_name, "
         "'$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND entity_id = OLD.id AND "
         "action = 'create' AND json_type(new_data, '$.data') IS NULL; UPDATE audit_entries SET old_data "
         "= json_insert(old_data, '$.data', json(OLD.data), '$.natural_name', OLD.natural_name, "
         "'$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND entity_id = OLD.id AND "
         "action = 'delete' AND json_type(old_data, '$.data') IS NULL; END"),
        ('CREATE TRIGGER records_keep_own_values_delete BEFORE DELETE ON records BEGIN UPDATE '
         "audit_entries SET new_data = json_insert(new_data, '$.data', json(OLD.data), '$.natural_name', "
         "OLD.natural_name, '$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND "
         "entity_id = OLD.id AND action = 'create' AND json_type(new_data, '$.data') IS NULL; UPDATE "
         "audit_entries SET old_data = json_insert(old_data, '$.data', json(OLD.data), '$.natural_name', "
         "OLD.natural_name, '$.parent_record_id', OLD.parent_id) WHERE entity_type = 'record' AND "
         "entity_id = OLD.id AND action = 'delete' AND json_type(old_data, '$.data') IS NULL; END"),
    ),
    "postgresql": (
        ('CREATE OR REPLACE FUNCTION benchbook_keep_own_values() RETURNS trigger LANGUAGE plpgsql AS $$ '
         "BEGIN UPDATE audit_entries SET new_data = jsonb_build_object('data', OLD.data, 'natural_name', "
         "OLD.natural_name, 'parent_record_id', OLD.parent_id) || new_data WHERE entity_type = 'record' "
         "AND entity_id = OLD.id AND action = 'create' AND NOT (new_data ? 'data'); UPDATE audit_entries "
         "SET old_data = jsonb_build_object('data', OLD.data, 'natural_name', OLD.natural_name, "
         "'parent_record_id', OLD.parent_id) || old_data WHERE entity_type = 'record' AND entity_id = "
         "OLD.id AND action = 'delete' AND NOT (old_data ? 'data'); IF TG_OP = 'DELETE' THEN RETURN OLD; "
         'END IF; RETURN NEW; END $$'),
        ('CREATE TRIGGER records_keep_own_values_update BEFORE UPDATE OF data, natural_name, parent_id ON '
         'records FOR EACH ROW WHEN (OLD.data IS DISTINCT FROM NEW.data OR OLD.natural_name IS DISTINCT '
         'FROM NEW.natural_name OR OLD.parent_id IS DISTINCT FROM NEW.parent_id) EXECUTE FUNCTION '
         'benchbook_keep_own_values()'),
        ('CREATE TRIGGER records_keep_own_values_delete BEFORE DELETE ON records FOR EACH ROW EXECUTE '
         'FUNCTION benchbook_keep_own_values()'),
    ),
}
"""0023: its name and parent with them."""
