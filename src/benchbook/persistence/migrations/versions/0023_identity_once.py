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

from benchbook.persistence.entry_triggers import create_statements, drop_statements, fill_statements

revision = "0023_identity_once"
down_revision = "0022_edits_index"
branch_labels = None
depends_on = None


def _dialect() -> str:
    return "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"


def upgrade() -> None:
    for statement in (*drop_statements(_dialect()), *create_statements(_dialect(), layout=23)):
        op.execute(statement)


def downgrade() -> None:
    for statement in (*fill_statements(_dialect()), *drop_statements(_dialect()),
                      *create_statements(_dialect(), layout=17)):
        op.execute(statement)
