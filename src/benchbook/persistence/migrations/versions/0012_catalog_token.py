"""catalog token: a value that changes with every change to schemas, fields and collections

``catalog_token`` holds one row whose ``token`` the database itself replaces with a new random
value whenever a row of ``schemas``, ``fields``, ``collections`` or ``collection_schemas`` is
inserted, updated or deleted (triggers below; a statement-level trigger on PostgreSQL, which
also fires on TRUNCATE). ``domain.catalog.shared`` keeps what it read of the catalog under the
token it read in the same transaction, so every session of the process can reuse it until the
catalog changes (issue 15: a single record GET read its schema, fields, parent schema, child
schemas and collection on every request). A token is random, never a counter: a transaction
that changed the catalog and rolled back leaves a token nobody else will ever read.

A later migration that rebuilds one of these tables (Alembic's batch mode on SQLite copies the
table and drops the old one, and its triggers with it) must create its trigger again;
``tests/domain/test_catalog_shared.py`` checks that every one of them fires at the newest
revision.

Revision ID: 0012_catalog_token
Revises: 0011_event_counts
Create Date: 2026-11-25
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_catalog_token"
down_revision = "0011_event_counts"
branch_labels = None
depends_on = None

TABLES = ("schemas", "fields", "collections", "collection_schemas")
SQLITE_NEW = "lower(hex(randomblob(16)))"
PG_NEW = "md5(random()::text || clock_timestamp()::text)"


def upgrade() -> None:
    op.create_table(
        "catalog_token",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_token")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"INSERT INTO catalog_token (id, token) VALUES (1, {PG_NEW})")
        op.execute("CREATE FUNCTION benchbook_catalog_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                   f"INSERT INTO catalog_token (id, token) VALUES (1, {PG_NEW}) "
                   "ON CONFLICT (id) DO UPDATE SET token = excluded.token; RETURN NULL; END $$")
        for table in TABLES:
            op.execute(f"CREATE TRIGGER {table}_catalog_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
                       f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION benchbook_catalog_changed()")
        return
    op.execute(f"INSERT INTO catalog_token (id, token) VALUES (1, {SQLITE_NEW})")
    for table in TABLES:
        for event in ("INSERT", "UPDATE", "DELETE"):
            op.execute(f"CREATE TRIGGER {table}_catalog_{event.lower()} AFTER {event} ON {table} BEGIN "
                       f"INSERT INTO catalog_token (id, token) VALUES (1, {SQLITE_NEW}) "
                       "ON CONFLICT (id) DO UPDATE SET token = excluded.token; END")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute(f"DROP TRIGGER IF EXISTS {table}_catalog_changed ON {table}")
        op.execute("DROP FUNCTION IF EXISTS benchbook_catalog_changed()")
    else:
        for table in TABLES:
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_catalog_{event}")
    op.drop_table("catalog_token")
