"""edits index: the history's edits, for ``GET /audit/storage``

``GET /audit/storage`` counts the edits still stored whole (``domain.history.storage``): it read
every history entry to find the edits among them, twice (432 ms at 1,000,000 entries, none of
them an edit; docs/performance.md R26). A partial index of the edits' ids lets it read just the
edits (SQLite is told to, ``INDEXED BY``; PostgreSQL's planner picks it).

Revision ID: 0022_edits_index
Revises: 0021_audit_days
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0022_edits_index"
down_revision = "0021_audit_days"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
EDITS = text("action = 'update'")
EDITS_INDEX = "ix_audit_entries_edits"


def upgrade() -> None:
    op.create_index(EDITS_INDEX, "audit_entries", ["id"], sqlite_where=EDITS, postgresql_where=EDITS)


def downgrade() -> None:
    op.drop_index(EDITS_INDEX, table_name="audit_entries")
