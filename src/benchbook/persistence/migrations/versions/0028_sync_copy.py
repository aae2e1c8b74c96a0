"""sync: a device's first copy by snapshot, and its open rows found by an index

Issue 34 (docs/sync.md *A first copy*; docs/performance.md *Sync*). ``sync_state`` gains what a
device's first copy of its authority has done so far, so a copy stopped midway (the network, a
killed process) goes on where it stopped: ``copy_stage`` (``records`` or ``history`` while a
copy is under way, null otherwise), ``copy_head`` (the authority's head the copy is level
with: the records are read as they stand at or after it, the history up to it is copied as it
is stored, the feed after it is applied as usual) and ``copy_after`` (the records snapshot's
cursor: where its next page starts).

``ix_audit_entries_rows``: the entries holding sync rows (``sync`` neither null nor ``[]``).
Every entry a device sends gets ``sync = []`` with its answer, so ``GET /remote``'s
``open_conflicts`` read every sent entry; with this partial index it reads only the few that
met a row.

Revision ID: 0028_sync_copy
Revises: 0027_sync
Create Date: 2026-11-28
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028_sync_copy"
down_revision = "0027_sync"
branch_labels = None
depends_on = None

HAS_ROWS_SQLITE = sa.text("sync IS NOT NULL AND sync != '[]'")
HAS_ROWS_POSTGRESQL = sa.text("sync IS NOT NULL AND sync != '[]'::jsonb")


def upgrade() -> None:
    op.add_column("sync_state", sa.Column("copy_stage", sa.String(length=10), nullable=True))
    op.add_column("sync_state", sa.Column("copy_head", sa.BigInteger(), nullable=True))
    op.add_column("sync_state", sa.Column("copy_after", sa.String(length=100), nullable=True))
    op.create_index("ix_audit_entries_rows", "audit_entries", ["id"],
                    sqlite_where=HAS_ROWS_SQLITE, postgresql_where=HAS_ROWS_POSTGRESQL)


def downgrade() -> None:
    op.drop_index("ix_audit_entries_rows", table_name="audit_entries")
    for column in ("copy_after", "copy_head", "copy_stage"):
        op.drop_column("sync_state", column)
