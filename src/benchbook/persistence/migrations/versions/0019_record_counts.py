"""record counts: the live records of each collection and schema, kept by the database

``GET /collections`` and ``GET /collections/{name}`` counted every live record of each
collection (56 ms at 1,000,000 records, docs/performance.md R24), and ``record-counts`` without a
filter every record of each schema (212 ms). On SQLite ``record_counts`` keeps those numbers, per
collection and schema, updated by triggers on ``records`` in the transaction that changes the
rows (``persistence.record_counts``); filled here from the records. On PostgreSQL the table is
made but stays empty: concurrent writers would queue on its rows, so the records are counted
when asked, as before.

A later migration that rebuilds ``records`` on SQLite (batch mode drops its triggers) must
create these triggers again; ``tests/domain/test_record_counts.py`` checks they fire at the
newest revision.

Revision ID: 0019_record_counts
Revises: 0018_audit_day_index
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_record_counts"
down_revision = "0018_audit_day_index"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
# SQLite only (PostgreSQL counts the records when asked): the live counts' triggers and the
# statements that count the records afresh
CREATE = (
    ('CREATE TRIGGER records_count_insert AFTER INSERT ON records WHEN NEW.deleted_at IS NULL BEGIN '
     'INSERT INTO record_counts (dataset_id, schema_id, live) VALUES (NEW.dataset_id, NEW.schema_id, 1) '
     'ON CONFLICT (dataset_id, schema_id) DO UPDATE SET live = record_counts.live + 1; END'),
    ('CREATE TRIGGER records_count_delete AFTER DELETE ON records WHEN OLD.deleted_at IS NULL BEGIN '
     'INSERT INTO record_counts (dataset_id, schema_id, live) VALUES (OLD.dataset_id, OLD.schema_id, -1) '
     'ON CONFLICT (dataset_id, schema_id) DO UPDATE SET live = record_counts.live + -1; END'),
    ('CREATE TRIGGER records_count_update AFTER UPDATE OF deleted_at, dataset_id, schema_id ON records '
     'WHEN (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) OR OLD.dataset_id <> NEW.dataset_id OR '
     'OLD.schema_id <> NEW.schema_id BEGIN INSERT INTO record_counts (dataset_id, schema_id, live) SELECT '
     'OLD.dataset_id, OLD.schema_id, -1 WHERE OLD.deleted_at IS NULL ON CONFLICT (dataset_id, schema_id) '
     'DO UPDATE SET live = record_counts.live + -1; INSERT INTO record_counts (dataset_id, schema_id, '
     'live) SELECT NEW.dataset_id, NEW.schema_id, 1 WHERE NEW.deleted_at IS NULL ON CONFLICT (dataset_id, '
     'schema_id) DO UPDATE SET live = record_counts.live + 1; END'),
)
DROP = (
    'DROP TRIGGER IF EXISTS records_count_insert',
    'DROP TRIGGER IF EXISTS records_count_delete',
    'DROP TRIGGER IF EXISTS records_count_update',
)
RECOUNT = (
    'DELETE FROM record_counts',
    ('INSERT INTO record_counts (dataset_id, schema_id, live) SELECT records.dataset_id AS dataset_id, '
     'records.schema_id AS schema_id, count(*) AS n FROM records WHERE records.deleted_at IS NULL GROUP '
     'BY 1, 2'),
)


def upgrade() -> None:
    op.create_table(
        "record_counts",
        sa.Column("dataset_id", sa.String(length=32), nullable=False),
        sa.Column("schema_id", sa.String(length=32), nullable=False),
        sa.Column("live", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("dataset_id", "schema_id", name=op.f("pk_record_counts")),
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in (*RECOUNT, *CREATE):
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for statement in DROP:
            op.execute(statement)
    op.drop_table("record_counts")
