"""field statistics: expression statistics for each indexed field (PostgreSQL 14 or later)

PostgreSQL ignores the statistics of a partial index's expression, and every per-field index
(migration 0003) is partial (``WHERE … IS NOT NULL``). So the planner took a filter on any value
to match 0.5 % of the records and a range a third of them: at 1,000,000 records a three-leaf
filter matching 36,000 was estimated at 556 and answered by sorting every match (235 ms a page)
where walking the sort field's index finds the page in about 30 ms. ``CREATE STATISTICS`` on
the same expression gives it the values' distribution once ``ANALYZE`` has run (here, then by
autovacuum and by large bulk creates); new fields get theirs with their index
(``tables.field_statistics_ddl``). SQLite is left alone: its planner does not weigh ``LIMIT``
(``domain.records.lists._sorted_page`` walks the index itself).

Revision ID: 0014_field_statistics
Revises: 0013_search_values
Create Date: 2026-11-26
"""
from __future__ import annotations

from alembic import op
from sqlalchemy import Dialect, text

revision = "0014_field_statistics"
down_revision = "0013_search_values"
branch_labels = None
depends_on = None

# frozen (issue 39 item 7): the statements as this migration was written to send them; never edited
_TEXT = ("string", "url", "date", "datetime")
_FLOAT = ("integer", "float")


def field_statistics_name(field_id: str) -> str:
    return f"st_records_field_{field_id.lower()}"


def field_statistics_ddl(dialect: Dialect, field_id: str, type_: str) -> str | None:
    """``CREATE STATISTICS`` on the expression of the field's index (PostgreSQL 14 or later)."""
    if dialect.name != "postgresql" or (dialect.server_version_info or (0,)) < (14,):
        return None
    cast = "FLOAT" if type_ in _FLOAT else "VARCHAR" if type_ in _TEXT else None
    if cast is None:
        return None
    return (f"CREATE STATISTICS IF NOT EXISTS {field_statistics_name(field_id)} "
            f"ON ((CAST(data ->> '{field_id}' AS {cast}))) FROM records")


def upgrade() -> None:
    bind = op.get_bind()
    made = 0
    for field_id, type_ in bind.execute(text("SELECT id, type FROM fields")).all():
        ddl = field_statistics_ddl(bind.dialect, field_id, type_)
        if ddl:
            op.execute(ddl)
            made += 1
    if made:
        op.execute("ANALYZE records")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for (field_id,) in bind.execute(text("SELECT id FROM fields")).all():
        op.execute(f"DROP STATISTICS IF EXISTS {field_statistics_name(field_id)}")
