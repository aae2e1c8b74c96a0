"""audit days: history entries per UTC day, action and entity type, kept by the database

The history chart (``GET /analytics/audit/events``) grouped every entry by its day through
``ix_audit_entries_day`` (migration 0018): 58-127 ms at 1,000,000 entries, and an index of
60 MB that every entry wrote. On SQLite ``audit_days`` now holds those counts, updated by
triggers on ``audit_entries`` in the transaction that writes the entries
(``persistence.audit_days``), filled here from the entries; the index goes. On PostgreSQL the
table is made but stays empty: the chart groups the entries by hash there, as before.

Revision ID: 0021_audit_days
Revises: 0020_record_days
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_audit_days"
down_revision = "0020_record_days"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
# SQLite only (PostgreSQL groups the entries when asked): the days' triggers, the statements
# that count the entries afresh, and the day index (0018) they replace
CREATE = (
    ('CREATE TRIGGER audit_day_insert AFTER INSERT ON audit_entries WHEN 1 BEGIN INSERT INTO audit_days '
     '(day, action, entity_type, entries) VALUES (substr(NEW.timestamp, 1, 10), NEW.action, '
     'NEW.entity_type, 1) ON CONFLICT (day, action, entity_type) DO UPDATE SET entries = '
     'audit_days.entries + 1; END'),
    ('CREATE TRIGGER audit_day_delete AFTER DELETE ON audit_entries WHEN 1 BEGIN INSERT INTO audit_days '
     '(day, action, entity_type, entries) VALUES (substr(OLD.timestamp, 1, 10), OLD.action, '
     'OLD.entity_type, -1) ON CONFLICT (day, action, entity_type) DO UPDATE SET entries = '
     'audit_days.entries + -1; END'),
    ('CREATE TRIGGER audit_day_update AFTER UPDATE OF timestamp, action, entity_type ON audit_entries '
     'WHEN OLD.timestamp <> NEW.timestamp OR OLD.action <> NEW.action OR OLD.entity_type <> '
     'NEW.entity_type BEGIN INSERT INTO audit_days (day, action, entity_type, entries) VALUES '
     '(substr(OLD.timestamp, 1, 10), OLD.action, OLD.entity_type, -1) ON CONFLICT (day, action, '
     'entity_type) DO UPDATE SET entries = audit_days.entries + -1; INSERT INTO audit_days (day, action, '
     'entity_type, entries) VALUES (substr(NEW.timestamp, 1, 10), NEW.action, NEW.entity_type, 1) ON '
     'CONFLICT (day, action, entity_type) DO UPDATE SET entries = audit_days.entries + 1; END'),
)
DROP = (
    'DROP TRIGGER IF EXISTS audit_day_insert',
    'DROP TRIGGER IF EXISTS audit_day_delete',
    'DROP TRIGGER IF EXISTS audit_day_update',
)
RECOUNT = (
    'DELETE FROM audit_days',
    ('INSERT INTO audit_days (day, action, entity_type, entries) SELECT substr(audit_entries.timestamp, '
     '1, 10) AS day, audit_entries.action AS action, audit_entries.entity_type AS entity_type, count(*) '
     'AS n FROM audit_entries GROUP BY 1, 2, 3'),
)
AUDIT_DAY_INDEX = "ix_audit_entries_day"
AUDIT_DAY_INDEX_DDL = ('CREATE INDEX IF NOT EXISTS ix_audit_entries_day ON audit_entries '
                       '(substr(timestamp, 1, 10), action, entity_type, timestamp)')


def upgrade() -> None:
    op.create_table(
        "audit_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("action", sa.String(length=10), nullable=False),
        sa.Column("entity_type", sa.String(length=10), nullable=False),
        sa.Column("entries", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.PrimaryKeyConstraint("day", "action", "entity_type", name=op.f("pk_audit_days")),
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in (*RECOUNT, *CREATE, f"DROP INDEX IF EXISTS {AUDIT_DAY_INDEX}"):
            op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in DROP if sqlite else ():
        op.execute(statement)
    op.drop_table("audit_days")
    if sqlite:
        op.execute(AUDIT_DAY_INDEX_DDL)
