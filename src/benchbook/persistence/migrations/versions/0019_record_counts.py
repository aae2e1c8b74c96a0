"""record counts: the live records of each collection and schema, kept by the database

``GET /collections`` and ``GET /collections/{name}`` counted every live record of each
collection (56 ms at 1,000,000 records, docs/performance.md R24), and ``record-counts`` without a
filter every record of each schema (212 ms). On SQLite ``record_counts`` keeps those numbers, per
collection and schema, updated by triggers on ``records`` in the transaction that changes the
rows (``persistence.record_counts``); filled here from the records. On PostgreSQL the table is
made but stays empty: concurrent writers would queue on its rows, so the records are counted
when asked, as before.

A later migration that rebuilds ``records`` on SQLite (batch mode drops its triggers) must
create these triggers again; ``tests/domain/test_record_counts.py`` checks they fire at the
newest revision.

Revision ID: 0019_record_counts
Revises: 0018_audit_day_index
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.record_counts import create_statements, drop_statements, recount

revision = "0019_record_counts"
down_revision = "0018_audit_day_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "record_counts",
        sa.Column("dataset_id", sa.String(length=32), nullable=False),
        sa.Column("schema_id", sa.String(length=32), nullable=False),
        sa.Column("live", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("dataset_id", "schema_id", name=op.f("pk_record_counts")),
    )
    conn = op.get_bind()
    recount(conn)
    for statement in create_statements(conn.dialect.name):
        op.execute(statement)


def downgrade() -> None:
    for statement in drop_statements(op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("record_counts")
