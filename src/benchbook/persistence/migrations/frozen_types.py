"""Column types as the migrations declare them (issue 39 item 7: a migration carries what it
needs, so editing live code never rewrites what an old migration does).

Frozen: never edit these. A type the models change gets a new name here, used by the migration
that changes the columns; the old one stays for the migrations written with it.
"""
from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import JSON, DateTime, Dialect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

JSONType = JSON().with_variant(JSONB(), "postgresql")
"""JSON text on SQLite, JSONB on PostgreSQL."""


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp: naive UTC on SQLite, ``timestamptz`` on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
