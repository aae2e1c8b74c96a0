"""audit days: history entries per UTC day, action and entity type, kept by the database

The history chart (``GET /analytics/audit/events``) grouped every entry by its day through
``ix_audit_entries_day`` (migration 0018): 58-127 ms at 1,000,000 entries, and an index of
60 MB that every entry wrote. On SQLite ``audit_days`` now holds those counts, updated by
triggers on ``audit_entries`` in the transaction that writes the entries
(``persistence.audit_days``), filled here from the entries; the index goes. On PostgreSQL the
table is made but stays empty: the chart groups the entries by hash there, as before.

Revision ID: 0021_audit_days
Revises: 0020_record_days
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.audit_days import create_statements, drop_statements, recount
from benchbook.persistence.record_counts import kept
from benchbook.persistence.tables import AUDIT_DAY_INDEX, audit_day_index_ddl

revision = "0021_audit_days"
down_revision = "0020_record_days"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("action", sa.String(length=10), nullable=False),
        sa.Column("entity_type", sa.String(length=10), nullable=False),
        sa.Column("entries", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("day", "action", "entity_type", name=op.f("pk_audit_days")),
    )
    conn = op.get_bind()
    recount(conn)
    for statement in create_statements(conn.dialect.name):
        op.execute(statement)
    if kept(conn.dialect.name):
        op.execute(f"DROP INDEX IF EXISTS {AUDIT_DAY_INDEX}")


def downgrade() -> None:
    conn = op.get_bind()
    for statement in drop_statements(conn.dialect.name):
        op.execute(statement)
    op.drop_table("audit_days")
    ddl = audit_day_index_ddl(conn.dialect)
    if ddl:
        op.execute(ddl)
