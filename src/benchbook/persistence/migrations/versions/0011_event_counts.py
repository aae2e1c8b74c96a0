"""event counts: the history's number of events, kept as entries are written

``audit_event_counts`` holds the number of events ``GET /audit/events`` lists without a filter
(batches holding entries plus entries made outside any batch), spread over a few slot rows that
``domain.history.batch_figures`` adds to in the transaction that writes the entries (concurrent
PostgreSQL writers pick different slots). Counting the lone entries on every page cost a pass
over their index: 42 ms at 1,000,000 of them on SQLite (issue 15: the first page under 20 ms).
Filled here, in slot 0, from the batches' figures (migration 0010) and the lone entries.

Revision ID: 0011_event_counts
Revises: 0010_batch_figures
Create Date: 2026-11-24
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_event_counts"
down_revision = "0010_batch_figures"
branch_labels = None
depends_on = None


def upgrade() -> None:
    counts = op.create_table(
        "audit_event_counts",
        sa.Column("slot", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("events", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("slot", name=op.f("pk_audit_event_counts")),
    )
    conn = op.get_bind()
    batches = conn.scalar(sa.text("SELECT count(*) FROM audit_batches WHERE entry_count > 0")) or 0
    lone = conn.scalar(sa.text("SELECT count(*) FROM audit_entries WHERE batch_id IS NULL")) or 0
    if batches or lone:
        conn.execute(counts.insert().values(slot=0, events=int(batches) + int(lone)))


def downgrade() -> None:
    op.drop_table("audit_event_counts")
