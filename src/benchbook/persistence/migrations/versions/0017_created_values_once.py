"""created values once: a record's create entry keeps its values only once the record changes

A record's ``create`` entry held the record's values in ``new_data.data``, a second copy of the
row's ``data`` for as long as the record stays as it was created: at 1,000,000 imported records
about a quarter of the database (issue 15, run S3 in docs/performance.md). From this revision a
create entry is written with the record's identity only (``new_data`` without ``data``), and the
database itself copies the values into it the moment the row's values first change or the row
goes: the triggers below run before any ``UPDATE`` that changes ``records.data`` and before any
``DELETE`` of a record (a purge, or a cascade from its parent or collection), whatever code or
statement makes it. So a create entry without ``data`` always means "the values the record
holds now", and ``domain.history.creates`` reads them from the record
(docs/decisions.md, *History*).

Entries written before this revision keep their values; nothing is rewritten. The downgrade
copies the values into every create entry still without them before it drops the triggers.

A later migration that rebuilds ``records`` (Alembic's batch mode on SQLite copies the table
and drops its triggers with it) must create these triggers again;
``tests/domain/test_created_values.py`` checks that they fire at the newest revision.

Revision ID: 0017_created_values_once
Revises: 0016_sort_indexes
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

revision = "0017_created_values_once"
down_revision = "0016_sort_indexes"
branch_labels = None
depends_on = None

_SQLITE_KEEP = ("UPDATE audit_entries SET new_data = json_set(new_data, '$.data', json(OLD.data)) "
                "WHERE entity_type = 'record' AND entity_id = OLD.id AND action = 'create' "
                "AND json_type(new_data, '$.data') IS NULL;")
_PG_FUNCTION = """
CREATE FUNCTION benchbook_keep_created_values() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  UPDATE audit_entries SET new_data = new_data || jsonb_build_object('data', OLD.data)
   WHERE entity_type = 'record' AND entity_id = OLD.id AND action = 'create' AND NOT (new_data ? 'data');
  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
  RETURN NEW;
END $$"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute("CREATE TRIGGER records_keep_created_values_update BEFORE UPDATE OF data ON records "
                   "FOR EACH ROW WHEN (OLD.data IS DISTINCT FROM NEW.data) "
                   "EXECUTE FUNCTION benchbook_keep_created_values()")
        op.execute("CREATE TRIGGER records_keep_created_values_delete BEFORE DELETE ON records "
                   "FOR EACH ROW EXECUTE FUNCTION benchbook_keep_created_values()")
        return
    op.execute("CREATE TRIGGER records_keep_created_values_update BEFORE UPDATE OF data ON records "
               f"WHEN OLD.data IS NOT NEW.data BEGIN {_SQLITE_KEEP} END")
    op.execute(f"CREATE TRIGGER records_keep_created_values_delete BEFORE DELETE ON records BEGIN {_SQLITE_KEEP} END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("UPDATE audit_entries e SET new_data = e.new_data || jsonb_build_object('data', r.data) "
                   "FROM records r WHERE r.id = e.entity_id AND e.entity_type = 'record' AND e.action = 'create' "
                   "AND NOT (e.new_data ? 'data')")
        op.execute("DROP TRIGGER IF EXISTS records_keep_created_values_update ON records")
        op.execute("DROP TRIGGER IF EXISTS records_keep_created_values_delete ON records")
        op.execute("DROP FUNCTION IF EXISTS benchbook_keep_created_values()")
        return
    op.execute("UPDATE audit_entries SET new_data = json_set(new_data, '$.data', "
               "json((SELECT data FROM records WHERE records.id = audit_entries.entity_id))) "
               "WHERE entity_type = 'record' AND action = 'create' AND json_type(new_data, '$.data') IS NULL "
               "AND EXISTS (SELECT 1 FROM records WHERE records.id = audit_entries.entity_id)")
    op.execute("DROP TRIGGER IF EXISTS records_keep_created_values_update")
    op.execute("DROP TRIGGER IF EXISTS records_keep_created_values_delete")
