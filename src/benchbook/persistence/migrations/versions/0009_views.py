"""views: saved views of a schema's records table (issue 16 item 2; audited as entity ``view``)

One row per view: its schema, optionally one collection, name (unique among the schema's live
views: a partial unique index, as for fields), label, description, and what the records table
shows (columns, filter tree, sort, search text, page size). Soft-deleted like fields.

Revision ID: 0009_views
Revises: 0008_history_once
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.migrations.frozen_types import JSONType, UTCDateTime

revision = "0009_views"
down_revision = "0008_history_once"
branch_labels = None
depends_on = None

LIVE = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    op.create_table(
        "views",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("schema_id", sa.String(length=32), nullable=False),
        sa.Column("dataset_id", sa.String(length=32), nullable=True),
        sa.Column("name", sa.String(length=63), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("columns", JSONType, nullable=False),
        sa.Column("filter", JSONType, nullable=True),
        sa.Column("sort", JSONType, nullable=False),
        sa.Column("search", sa.Text(), nullable=True),
        sa.Column("page_size", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("deleted_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(["schema_id"], ["schemas.id"], name=op.f("fk_views_schema_id_schemas"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["dataset_id"], ["collections.id"], name=op.f("fk_views_dataset_id_collections"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_views")),
    )
    op.create_index(op.f("ix_views_schema_id"), "views", ["schema_id"])
    op.create_index("uq_views_live_name", "views", ["schema_id", "name"], unique=True,
                    sqlite_where=LIVE, postgresql_where=LIVE)


def downgrade() -> None:
    op.drop_index("uq_views_live_name", table_name="views")
    op.drop_index(op.f("ix_views_schema_id"), table_name="views")
    op.drop_table("views")
