"""record days: records created per UTC day, collection and schema, kept by the database

The growth chart (``GET /analytics/records/growth``) grouped every record by its creation day
through ``ix_records_created_day`` (migration 0007): about 100 ms at 1,000,000 records, and an
index of 102 MB, a sixteenth of the database, that every insert wrote. On SQLite
``record_days`` now holds those counts, updated by triggers on ``records`` in the transaction
that changes the rows (``persistence.record_counts``), filled here from the records; the index
goes. On PostgreSQL the table is made but stays empty: the chart groups the records by hash
there, as before (and concurrent writers would queue on the count rows).

Revision ID: 0020_record_days
Revises: 0019_record_counts
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_record_days"
down_revision = "0019_record_counts"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
# SQLite only (PostgreSQL groups the records when asked): the creation days' triggers, the
# statements that count the records afresh, and the growth index (0007) they replace
CREATE = (
    ('CREATE TRIGGER records_day_insert AFTER INSERT ON records WHEN 1 BEGIN INSERT INTO record_days '
     '(day, dataset_id, schema_id, created) VALUES (substr(NEW.created_at, 1, 10), NEW.dataset_id, '
     'NEW.schema_id, 1) ON CONFLICT (day, dataset_id, schema_id) DO UPDATE SET created = '
     'record_days.created + 1; END'),
    ('CREATE TRIGGER records_day_delete AFTER DELETE ON records WHEN 1 BEGIN INSERT INTO record_days '
     '(day, dataset_id, schema_id, created) VALUES (substr(OLD.created_at, 1, 10), OLD.dataset_id, '
     'OLD.schema_id, -1) ON CONFLICT (day, dataset_id, schema_id) DO UPDATE SET created = '
     'record_days.created + -1; END'),
    ('CREATE TRIGGER records_day_update AFTER UPDATE OF created_at, dataset_id, schema_id ON records WHEN '
     'OLD.created_at <> NEW.created_at OR OLD.dataset_id <> NEW.dataset_id OR OLD.schema_id <> '
     'NEW.schema_id BEGIN INSERT INTO record_days (day, dataset_id, schema_id, created) VALUES '
     '(substr(OLD.created_at, 1, 10), OLD.dataset_id, OLD.schema_id, -1) ON CONFLICT (day, dataset_id, '
     'schema_id) DO UPDATE SET created = record_days.created + -1; INSERT INTO record_days (day, '
     'dataset_id, schema_id, created) VALUES (substr(NEW.created_at, 1, 10), NEW.dataset_id, '
     'NEW.schema_id, 1) ON CONFLICT (day, dataset_id, schema_id) DO UPDATE SET created = '
     'record_days.created + 1; END'),
)
DROP = (
    'DROP TRIGGER IF EXISTS records_day_insert',
    'DROP TRIGGER IF EXISTS records_day_delete',
    'DROP TRIGGER IF EXISTS records_day_update',
)
RECOUNT = (
    'DELETE FROM record_days',
    ('INSERT INTO record_days (day, dataset_id, schema_id, created) SELECT substr(records.created_at, 1, '
     '10) AS day, records.dataset_id AS dataset_id, records.schema_id AS schema_id, count(*) AS n FROM '
     'records GROUP BY 1, 2, 3'),
)
GROWTH_INDEX = "ix_records_created_day"
GROWTH_INDEX_DDL = ('CREATE INDEX IF NOT EXISTS ix_records_created_day ON records (substr(created_at, 1, '
                    '10), dataset_id, schema_id, created_at)')


def upgrade() -> None:
    op.create_table(
        "record_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("dataset_id", sa.String(length=32), nullable=False),
        sa.Column("schema_id", sa.String(length=32), nullable=False),
        sa.Column("created", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("day", "dataset_id", "schema_id", name=op.f("pk_record_days")),
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in (*RECOUNT, *CREATE, f"DROP INDEX IF EXISTS {GROWTH_INDEX}"):
            op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in DROP if sqlite else ():
        op.execute(statement)
    op.drop_table("record_days")
    if sqlite:
        op.execute(GROWTH_INDEX_DDL)
