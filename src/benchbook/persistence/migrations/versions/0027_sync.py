"""sync: devices, the authority's sequence, answers kept for resends, the device's remote

Issue 34 (docs/sync.md). On the **authority**: ``sync_devices`` (one row per device: its invite
and token stored only as sha256 digests), ``sync_answers`` (the answer to each pushed entry,
written in the push's own transaction, so a resend after a lost reply changes nothing twice),
``sync_state`` (one row: the project's sync id and ``head``, the last sequence number given).
On a **device**, ``sync_state`` also holds the remote it follows (url, device name, the
authority's project id, the feed cursor, the last sync and its error).

``audit_entries`` gains ``seq`` (the authority's gap-free number of the entry; null on the
authority until the feed numbers it, null on a device while the change is its own and not yet
accepted), ``device`` (the device name the authority stamped) and ``sync`` (the sync rows of
the entry, OpenAPI ``SyncRow``). The partial index on ``seq IS NULL`` keeps both "what is not
numbered yet" and "what the device still has to send" one index read, however long history is.

Revision ID: 0027_sync
Revises: 0026_edit_identity
Create Date: 2026-11-28
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.migrations.frozen_types import JSONType, UTCDateTime

revision = "0027_sync"
down_revision = "0026_edit_identity"
branch_labels = None
depends_on = None

JSON = JSONType
UNSEQUENCED = sa.text("seq IS NULL")


def upgrade() -> None:
    op.add_column("audit_entries", sa.Column("seq", sa.BigInteger(), nullable=True))
    op.add_column("audit_entries", sa.Column("device", sa.String(length=100), nullable=True))
    op.add_column("audit_entries", sa.Column("sync", JSON, nullable=True))
    op.create_index("ix_audit_entries_seq", "audit_entries", ["seq"], unique=True)
    op.create_index("ix_audit_entries_unsequenced", "audit_entries", ["id"],
                    sqlite_where=UNSEQUENCED, postgresql_where=UNSEQUENCED)
    op.create_table(
        "sync_devices",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("invite_sha256", sa.String(length=64), nullable=True),
        sa.Column("invite_expires_at", UTCDateTime(), nullable=True),
        sa.Column("token_sha256", sa.String(length=64), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("joined_at", UTCDateTime(), nullable=True),
        sa.Column("last_seen_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_sync_devices")),
        sa.UniqueConstraint("token_sha256", name=op.f("uq_sync_devices_token_sha256")),
        sa.UniqueConstraint("invite_sha256", name=op.f("uq_sync_devices_invite_sha256")),
    )
    op.create_table(
        "sync_answers",
        sa.Column("entry_id", sa.String(length=32), nullable=False),
        sa.Column("device", sa.String(length=100), nullable=False),
        sa.Column("answer", JSON, nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("entry_id", name=op.f("pk_sync_answers")),
    )
    op.create_table(
        "sync_state",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("project_id", sa.String(length=32), nullable=False),
        sa.Column("head", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("remote_url", sa.Text(), nullable=True),
        sa.Column("remote_device", sa.String(length=100), nullable=True),
        sa.Column("remote_project_id", sa.String(length=32), nullable=True),
        sa.Column("cursor", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("last_sync_at", UTCDateTime(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sync_state")),
    )


def downgrade() -> None:
    op.drop_table("sync_state")
    op.drop_table("sync_answers")
    op.drop_table("sync_devices")
    op.drop_index("ix_audit_entries_unsequenced", table_name="audit_entries")
    op.drop_index("ix_audit_entries_seq", table_name="audit_entries")
    for column in ("sync", "device", "seq"):  # SQLite 3.35+ drops a column in place (no table copy)
        op.drop_column("audit_entries", column)
