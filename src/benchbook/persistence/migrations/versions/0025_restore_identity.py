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

from benchbook.persistence.entry_triggers import create_statements, drop_statements, fill_restore_statements

revision = "0025_restore_identity"
down_revision = "0024_identity_index"
branch_labels = None
depends_on = None


def _dialect() -> str:
    return "postgresql" if op.get_bind().dialect.name == "postgresql" else "sqlite"


def upgrade() -> None:
    for statement in (*drop_statements(_dialect()), *create_statements(_dialect(), layout=25)):
        op.execute(statement)


def downgrade() -> None:
    for statement in (*fill_restore_statements(_dialect()), *drop_statements(_dialect()),
                      *create_statements(_dialect(), layout=23)):
        op.execute(statement)
