"""growth index: records by creation day, collection and schema, for ``GET /analytics/records/growth``

SQLite only. ``records_growth`` groups every record by ``substr(created_at, 1, 10)`` (the UTC day,
``analytics.day_of``), collection and schema. Without an index that is a scan of the records
table, JSON values and all, and a sort of every row (1,571 ms p50 at 1,000,000 records in
docs/performance.md). An index on exactly that expression, then ``dataset_id``, ``schema_id`` and
``created_at`` (for ``start``/``end``) covers the query: SQLite reads the index in group order,
without touching the table or sorting (measured 140 ms on 1,000,000 rows, 120 ms with a range).

PostgreSQL is left alone: it answers the same query with a parallel hash aggregate over the table,
and another index on every record insert is not worth it there.

Revision ID: 0007_growth_index
Revises: 0006_ai_usage
Create Date: 2026-11-23
"""
from __future__ import annotations

from alembic import op

from benchbook.persistence.tables import GROWTH_INDEX, growth_index_ddl

revision = "0007_growth_index"
down_revision = "0006_ai_usage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    ddl = growth_index_ddl(op.get_bind().dialect)
    if ddl:
        op.execute(ddl)


def downgrade() -> None:
    op.execute(f"DROP INDEX IF EXISTS {GROWTH_INDEX}")
