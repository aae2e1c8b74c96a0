"""query indexes: the listing index and one index per scalar field

- ``ix_records_listing`` (dataset_id, schema_id, deleted_at, id) replaces
  ``ix_records_dataset_schema`` (same columns without ``id``): a page of a schema's live records
  in id order (the default list) is read from the index in order instead of sorting every live
  record of the schema (docs/performance.md).
- ``ix_records_parent_id`` and ``ix_records_delete_op`` become partial (``IS NOT NULL``): most
  records have no parent or delete operation, SQLite's ANALYZE counts those NULLs as one value
  with as many rows as the table, and the planner then scans the whole table for
  ``parent_id IN (...)`` (measured: 29 ms instead of 0.1 ms per 500 ids at 100,000 records).
  The parent index also holds ``deleted_at`` and ``schema_id``, so counting live children per
  schema reads no records (``child_counts=true`` on 50 of 1,000 parents with 1,000 children
  each: 87 ms before, 26 ms after).
- One partial index per existing field of a scalar type (integer, float, string, url, date,
  datetime) on the typed value the record queries compare and sort by; fields made later get
  theirs when they are created (``tables.field_index_ddl``, shared so both stay identical).

Revision ID: 0003_query_indexes
Revises: 0002_search
Create Date: 2026-11-22
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text

revision = "0003_query_indexes"
down_revision = "0002_search"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
_TEXT = ("string", "url", "date", "datetime")
_FLOAT = ("integer", "float")


def _expression(dialect: str, field_id: str, type_: str) -> str | None:
    """The typed value a field's index holds, as the record queries compute it (None: not indexed)."""
    cast = "FLOAT" if type_ in _FLOAT else "VARCHAR" if type_ in _TEXT else None
    if cast is None:
        return None
    if dialect == "postgresql":
        return f"(CAST(data ->> '{field_id}' AS {cast}))"
    return f"CAST(JSON_EXTRACT(data, '$.\"{field_id}\"') AS {cast})"


def field_index_name(field_id: str) -> str:
    return f"ix_records_field_{field_id.lower()}"


def field_index_ddl(dialect: str, field_id: str, type_: str) -> str | None:
    sql = _expression(dialect, field_id, type_)
    if sql is None:
        return None
    return f"CREATE INDEX IF NOT EXISTS {field_index_name(field_id)} ON records ({sql}) WHERE {sql} IS NOT NULL"


def upgrade() -> None:
    op.drop_index("ix_records_dataset_schema", table_name="records")
    op.create_index("ix_records_listing", "records", ["dataset_id", "schema_id", "deleted_at", "id"])
    for column, columns in (("parent_id", ["parent_id", "deleted_at", "schema_id"]), ("delete_op", ["delete_op"])):
        op.drop_index(f"ix_records_{column}", table_name="records")
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(f"ix_records_{column}", "records", columns, sqlite_where=where, postgresql_where=where)
    bind = op.get_bind()
    for field_id, type_ in bind.execute(text("SELECT id, type FROM fields")).all():
        ddl = field_index_ddl(bind.dialect.name, field_id, type_)
        if ddl:
            op.execute(ddl)


def downgrade() -> None:
    bind = op.get_bind()
    for (field_id,) in bind.execute(text("SELECT id FROM fields")).all():
        op.execute(f"DROP INDEX IF EXISTS {field_index_name(field_id)}")
    for column in ("parent_id", "delete_op"):
        op.drop_index(f"ix_records_{column}", table_name="records")
        op.create_index(f"ix_records_{column}", "records", [column])
    op.drop_index("ix_records_listing", table_name="records")
    op.create_index("ix_records_dataset_schema", "records", ["dataset_id", "schema_id", "deleted_at"])
