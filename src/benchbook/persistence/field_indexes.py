"""The per-field indexes: one partial index per field of a scalar type, on the typed value the
record queries use (``domain.records.filters.value_of``, ``domain.records.queries.typed_value``):
numbers as FLOAT, text as text; on PostgreSQL 14 and later also expression statistics. Made with
the field and dropped when the field is purged (the listeners in ``tables.py``), made for fields made
before them by migrations 0003 and 0014; only records holding a value are in an index. Not
described by the models: ``alembic check`` leaves ``ix_records_field_*`` alone
(``migrations/env.py``).
"""
from __future__ import annotations

from sqlalchemy import JSON, Dialect, column
from sqlalchemy.dialects.postgresql import JSONB

_DATA = column("data", JSON().with_variant(JSONB(), "postgresql"))
"""``records.data`` as the queries read it (a JSON column; JSONB on PostgreSQL)."""

FIELD_INDEX_PREFIX = "ix_records_field_"
INDEXED_ACCESSORS = {"integer": "as_float", "float": "as_float", "string": "as_string", "url": "as_string",
                     "date": "as_string", "datetime": "as_string"}


def field_index_name(field_id: str) -> str:
    """The name of field ``field_id``'s index."""
    return f"{FIELD_INDEX_PREFIX}{field_id.lower()}"


FIELD_STATISTICS_PREFIX = "st_records_field_"


def field_statistics_name(field_id: str) -> str:
    """The name of field ``field_id``'s expression statistics (PostgreSQL)."""
    return f"{FIELD_STATISTICS_PREFIX}{field_id.lower()}"


def _indexed_expression(dialect: Dialect, field_id: str, type_: str) -> str | None:
    accessor = INDEXED_ACCESSORS.get(type_)
    if accessor is None:
        return None
    value = getattr(_DATA[field_id], accessor)()
    return str(value.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def field_statistics_ddl(dialect: Dialect, field_id: str, type_: str) -> str | None:
    """``CREATE STATISTICS`` on the expression of the field's index (:func:`field_index_ddl`),
    PostgreSQL 14 or later only (None elsewhere, and for types not indexed). PostgreSQL ignores
    the statistics of a partial index's expression, so without these it takes every filter on
    a value to match 0.5 % of the records and every range a third, and sorts 36,000 matches
    where walking the sort field's index finds a page of 50 in a few milliseconds (migration
    0014; filled by ``ANALYZE``)."""
    if dialect.name != "postgresql" or (dialect.server_version_info or (0,)) < (14,):
        return None
    sql = _indexed_expression(dialect, field_id, type_)
    if sql is None:
        return None
    return f"CREATE STATISTICS IF NOT EXISTS {field_statistics_name(field_id)} ON (({sql})) FROM records"


def field_index_ddl(dialect: Dialect, field_id: str, type_: str) -> str | None:
    """``CREATE INDEX`` for a field of ``type_`` on ``dialect`` (None for types not indexed:
    booleans, lists, references and files, which ``record_links`` answers). The expression is
    compiled from the same SQLAlchemy expression the queries use, so it matches them exactly."""
    sql = _indexed_expression(dialect, field_id, type_)
    if sql is None:
        return None
    if dialect.name == "postgresql":
        sql = f"({sql})"
    return f"CREATE INDEX IF NOT EXISTS {field_index_name(field_id)} ON records ({sql}) WHERE {sql} IS NOT NULL"
