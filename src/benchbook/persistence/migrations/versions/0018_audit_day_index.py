"""audit day index: history entries by UTC day, action and entity type, for ``GET /analytics/audit/events``

SQLite only. ``analytics.audit_events`` groups every history entry by ``substr(timestamp, 1, 10)``
(the UTC day, ``analytics.day_of``), action and entity type. Without an index that is a scan of
``audit_entries``, values and all, and a sort of every row in a temporary B-tree (613 ms at
1,001,000 entries, docs/performance.md R23). An index on exactly that expression, then ``action``,
``entity_type`` and ``timestamp`` (SQLite 3.40 counts an index on an expression as covering only
when it holds the columns the expression reads; the time also answers ``start``/``end``) covers
the query: SQLite reads the index in group order, without touching the table or sorting. A range
of whole UTC days (what the web app asks) is searched by its days (``analytics.day_range``).

PostgreSQL is left alone, as for the growth index (migration 0007): it aggregates by hash.

Revision ID: 0018_audit_day_index
Revises: 0017_own_values
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op

revision = "0018_audit_day_index"
down_revision = "0017_own_values"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
AUDIT_DAY_INDEX = "ix_audit_entries_day"
SQLITE_DDL = ('CREATE INDEX IF NOT EXISTS ix_audit_entries_day ON audit_entries (substr(timestamp, 1, '
              '10), action, entity_type, timestamp)')


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":  # PostgreSQL aggregates the table by hash instead
        op.execute(SQLITE_DDL)


def downgrade() -> None:
    op.execute(f"DROP INDEX IF EXISTS {AUDIT_DAY_INDEX}")
