"""record days: records created per UTC day, collection and schema, kept by the database

The growth chart (``GET /analytics/records/growth``) grouped every record by its creation day
through ``ix_records_created_day`` (migration 0007): about 100 ms at 1,000,000 records, and an
index of 102 MB, a sixteenth of the database, that every insert wrote. On SQLite
``record_days`` now holds those counts, updated by triggers on ``records`` in the transaction
that changes the rows (``persistence.record_counts``), filled here from the records; the index
goes. On PostgreSQL the table is made but stays empty: the chart groups the records by hash
there, as before (and concurrent writers would queue on the count rows).

Revision ID: 0020_record_days
Revises: 0019_record_counts
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.record_counts import create_statements, drop_statements, kept, recount
from benchbook.persistence.tables import GROWTH_INDEX, growth_index_ddl

revision = "0020_record_days"
down_revision = "0019_record_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "record_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("dataset_id", sa.String(length=32), nullable=False),
        sa.Column("schema_id", sa.String(length=32), nullable=False),
        sa.Column("created", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("day", "dataset_id", "schema_id", name=op.f("pk_record_days")),
    )
    conn = op.get_bind()
    recount(conn, days=True)
    for statement in create_statements(conn.dialect.name, days=True):
        op.execute(statement)
    if kept(conn.dialect.name):
        op.execute(f"DROP INDEX IF EXISTS {GROWTH_INDEX}")


def downgrade() -> None:
    conn = op.get_bind()
    for statement in drop_statements(conn.dialect.name, days=True):
        op.execute(statement)
    op.drop_table("record_days")
    ddl = growth_index_ddl(conn.dialect)
    if ddl:
        op.execute(ddl)
