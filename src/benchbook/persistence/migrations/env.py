"""Alembic environment: uses the connection handed over by ``db.upgrade`` or the URL."""
from __future__ import annotations

import warnings

from alembic import context
from sqlalchemy import create_engine

from benchbook.persistence.tables import Base

config = context.config
target_metadata = Base.metadata
# made by hand-written migrations, not described by the models: full-text search objects and
# the per-field indexes (made with each field, field_indexes.field_index_ddl), the growth index (0007)
UNMODELLED = ("records_fts", "ix_records_search", "ix_records_field_", "ix_records_created_day", "ix_audit_entries_day")


def include_object(obj, name, type_, reflected, compare_to):  # type: ignore[no-untyped-def]
    """Leave the hand-made search objects out of autogenerate and ``alembic check``."""
    return not (name and name.startswith(UNMODELLED))


def run() -> None:
    """Run the migrations (or ``alembic check``'s comparison). SQLAlchemy cannot reflect SQLite's
    expression indexes and says so in a warning; the unmodelled ones are left out on purpose."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index "
                                          f"({'|'.join(UNMODELLED)})")
        _run()


def _run() -> None:
    conn = config.attributes.get("connection")
    if conn is not None:
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True,
                          compare_type=True, include_object=include_object)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.begin() as connection:
            context.configure(connection=connection, target_metadata=target_metadata,
                              render_as_batch=True, compare_type=True,
                              include_object=include_object)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


run()
