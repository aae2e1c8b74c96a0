"""plugins: whether a plugin takes runs in batches

Issue 36 item 2 (``plugin-protocol/README.md``, row *batch*). A plugin's ``describe_result`` may
say ``batch: true``; discovery captures it in ``plugins.batch`` like the rest of the contract,
and the worker then gives the plugin many waiting runs of a workflow in one ``run`` frame.
Plugins registered before this revision say nothing of it: false, until the next refresh.

Revision ID: 0029_plugin_batch
Revises: 0028_sync_copy
Create Date: 2026-11-28
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029_plugin_batch"
down_revision = "0028_sync_copy"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("plugins") as batch:
        batch.add_column(sa.Column("batch", sa.Boolean(), server_default=sa.false(), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("plugins") as batch:
        batch.drop_column("batch")
