"""full-text search over record values

SQLite: an FTS5 table over records (natural_name and the JSON values), kept in step by
triggers on every insert, update and delete, so every write path (single, bulk, restore,
purge) updates it without Python code. PostgreSQL: a GIN index on the text search vector of
the JSON string and number values plus the natural name (queried with the same expression).

Revision ID: 0002_search
Revises: 0001
Create Date: 2026-11-22
"""
from __future__ import annotations

from alembic import op

revision = "0002_search"
down_revision = "0001"
branch_labels = None
depends_on = None

PG_VECTOR = ("(jsonb_to_tsvector('simple'::regconfig, data, '[\"string\", \"numeric\"]'::jsonb) || "
             "to_tsvector('simple'::regconfig, coalesce(natural_name, '')))")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"CREATE INDEX ix_records_search ON records USING gin ({PG_VECTOR})")
        return
    op.execute("CREATE VIRTUAL TABLE records_fts USING fts5(natural_name, data, content='records', "
               "content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')")
    op.execute("CREATE TRIGGER records_fts_insert AFTER INSERT ON records BEGIN "
               "INSERT INTO records_fts(rowid, natural_name, data) VALUES (new.rowid, new.natural_name, new.data); "
               "END")
    op.execute("CREATE TRIGGER records_fts_delete AFTER DELETE ON records BEGIN "
               "INSERT INTO records_fts(records_fts, rowid, natural_name, data) "
               "VALUES ('delete', old.rowid, old.natural_name, old.data); END")
    op.execute("CREATE TRIGGER records_fts_update AFTER UPDATE OF natural_name, data ON records BEGIN "
               "INSERT INTO records_fts(records_fts, rowid, natural_name, data) "
               "VALUES ('delete', old.rowid, old.natural_name, old.data); "
               "INSERT INTO records_fts(rowid, natural_name, data) VALUES (new.rowid, new.natural_name, new.data); "
               "END")
    op.execute("INSERT INTO records_fts(records_fts) VALUES ('rebuild')")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_records_search")
        return
    for trigger in ("records_fts_insert", "records_fts_delete", "records_fts_update"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP TABLE IF EXISTS records_fts")
