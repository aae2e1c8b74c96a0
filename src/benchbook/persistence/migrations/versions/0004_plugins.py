"""plugins: the registry of discovered plugins (describe_result captured once, where it came from)

Revision ID: 0004_plugins
Revises: 0003_query_indexes
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.migrations.frozen_types import JSONType, UTCDateTime

revision = "0004_plugins"
down_revision = "0003_query_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plugins",
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("category", sa.String(length=100), nullable=False),
        sa.Column("capabilities", JSONType, nullable=False),
        sa.Column("inputs", JSONType, nullable=False),
        sa.Column("outputs", JSONType, nullable=False),
        sa.Column("config_schema", JSONType, nullable=False),
        sa.Column("tier", sa.String(length=10), nullable=False),
        sa.Column("builtin", sa.Boolean(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=30), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("launch", JSONType, nullable=False),
        sa.Column("described_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plugins")),
    )


def downgrade() -> None:
    op.drop_table("plugins")
