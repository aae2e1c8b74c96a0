"""jobs: workflow runs (the run queue) and the worker lease

Revision ID: 0005_jobs
Revises: 0004_plugins
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from benchbook.persistence.migrations.frozen_types import JSONType, UTCDateTime

revision = "0005_jobs"
down_revision = "0004_plugins"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("workflow_name", sa.String(length=200), nullable=False),
        sa.Column("record_id", sa.String(length=32), nullable=False),
        sa.Column("schema_name", sa.String(length=100), nullable=False),
        sa.Column("trigger", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_details", JSONType, nullable=True),
        sa.Column("log", sa.Text(), nullable=True),
        sa.Column("step_executions", JSONType, nullable=True),
        sa.Column("affected_records", JSONType, nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("trigger_detail", JSONType, nullable=True),
        sa.Column("problems", sa.Integer(), nullable=False),
        sa.Column("inputs", JSONType, nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index("ix_jobs_status_created", "jobs", ["status", "created_at"])
    op.create_index(op.f("ix_jobs_workflow_name"), "jobs", ["workflow_name"])
    op.create_index(op.f("ix_jobs_record_id"), "jobs", ["record_id"])
    op.create_table(
        "worker_leases",
        sa.Column("name", sa.String(length=50), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_worker_leases")),
    )


def downgrade() -> None:
    op.drop_table("worker_leases")
    op.drop_index(op.f("ix_jobs_record_id"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_workflow_name"), table_name="jobs")
    op.drop_index("ix_jobs_status_created", table_name="jobs")
    op.drop_table("jobs")
