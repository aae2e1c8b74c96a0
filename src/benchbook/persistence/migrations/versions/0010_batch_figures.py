"""batch figures: what the history's events list shows of a batch, kept with the batch

``audit_batches`` gains ``entry_count``, ``last_at`` (the newest entry's time) and ``parts``
(entries per ``"<action> <entity_type>"``), filled here from the entries and kept from now on
in the transaction that writes a batch's entries (``domain.history.batch_figures``), so
``GET /audit/events`` lists batches without grouping every entry (issue 15: the first page at
1,000,000 entries). ``ix_audit_batches_last_at`` orders batches by their newest entry;
``ix_audit_entries_lone`` the entries made outside any batch.

Revision ID: 0010_batch_figures
Revises: 0009_views
Create Date: 2026-11-24
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.migrations.frozen_types import JSONType, UTCDateTime

revision = "0010_batch_figures"
down_revision = "0009_views"
branch_labels = None
depends_on = None

LONE = sa.text("batch_id IS NULL")


def upgrade() -> None:
    # plain ADD COLUMN (a batch table rebuild would drop audit_batches, which entries reference)
    op.add_column("audit_batches", sa.Column("entry_count", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.add_column("audit_batches", sa.Column("last_at", UTCDateTime(), nullable=True))
    op.add_column("audit_batches", sa.Column("parts", JSONType, server_default=sa.text("'{}'"), nullable=False))
    op.create_index("ix_audit_batches_last_at", "audit_batches", ["last_at", "id"])
    op.create_index("ix_audit_entries_lone", "audit_entries", ["timestamp", "id"], sqlite_where=LONE,
                    postgresql_where=LONE)
    entries = sa.table("audit_entries", sa.column("batch_id"), sa.column("action"), sa.column("entity_type"),
                       sa.column("timestamp", UTCDateTime()))
    batches = sa.table("audit_batches", sa.column("id"), sa.column("entry_count"), sa.column("last_at", UTCDateTime()),
                       sa.column("parts", JSONType))
    conn = op.get_bind()
    counts: dict[str, int] = {}
    lasts: dict[str, Any] = {}
    parts: dict[str, dict[str, int]] = {}
    for batch_id, action, entity_type, n, last in conn.execute(
            sa.select(entries.c.batch_id, entries.c.action, entries.c.entity_type, sa.func.count(),
                      sa.func.max(entries.c.timestamp))
            .where(entries.c.batch_id.is_not(None))
            .group_by(entries.c.batch_id, entries.c.action, entries.c.entity_type)):
        counts[batch_id] = counts.get(batch_id, 0) + int(n)
        lasts[batch_id] = last if lasts.get(batch_id) is None or last > lasts[batch_id] else lasts[batch_id]
        parts.setdefault(batch_id, {})[f"{action} {entity_type}"] = int(n)
    if counts:
        conn.execute(batches.update().where(batches.c.id == sa.bindparam("b"))
                     .values(entry_count=sa.bindparam("n"), last_at=sa.bindparam("last"), parts=sa.bindparam("p")),
                     [{"b": b, "n": n, "last": lasts[b], "p": parts[b]} for b, n in counts.items()])


def downgrade() -> None:
    op.drop_index("ix_audit_entries_lone", table_name="audit_entries")
    op.drop_index("ix_audit_batches_last_at", table_name="audit_batches")
    for column in ("parts", "last_at", "entry_count"):
        op.drop_column("audit_batches", column)
