"""Models and migrations never drift apart (``alembic check`` on a freshly upgraded database),
and upgrading an up-to-date database again changes nothing."""
from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.sql import ClauseElement

from benchbook.config import Project
from benchbook.demo import build_demo
from benchbook.persistence.db import alembic_config, open_database
from tests.conftest import PG_URL


def check(url: str) -> None:
    db = open_database(url)
    try:
        command.check(alembic_config(url))
    finally:
        db.engine.dispose()


def test_sqlite_models_match_migrations(tmp_path: Path) -> None:
    check(f"sqlite:///{tmp_path / 'check.db'}")


@pytest.mark.postgres
def test_postgres_models_match_migrations(pg_database: str) -> None:
    check(pg_database)


def plain(value: Any) -> str:
    """A reflected item as comparable text (SQL expressions as their SQL, not their object ids)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {plain(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    if isinstance(value, ClauseElement):
        return str(value)
    return repr(value)


def snapshot(engine: Engine) -> dict[str, Any]:
    """What an upgrade could change: the Alembic revision, every table with its columns,
    keys, indexes (the per-field ones made outside the models included) and all its rows."""
    found: dict[str, Any] = {}
    with engine.connect() as conn:
        found["revision"] = sorted(conn.execute(text("SELECT version_num FROM alembic_version")).scalars())
        insp = inspect(conn)
        tables: dict[str, Any] = {}
        for name in sorted(insp.get_table_names()):
            with warnings.catch_warnings():  # SQLite's expression indexes are not reflected: "ddl" has them
                warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
                tables[name] = {
                    "columns": [(c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
                                for c in insp.get_columns(name)],
                    "primary_key": plain(insp.get_pk_constraint(name)),
                    "foreign_keys": sorted(map(plain, insp.get_foreign_keys(name))),
                    "indexes": sorted(map(plain, insp.get_indexes(name))),
                    "unique": sorted(map(plain, insp.get_unique_constraints(name))),
                    "rows": sorted(map(repr, conn.execute(text(f'SELECT * FROM "{name}"')).all())),
                }
        found["tables"] = tables
        if engine.dialect.name == "sqlite":  # the DDL itself, partial-index conditions included
            found["ddl"] = sorted(conn.execute(text("SELECT type, name, tbl_name, sql FROM sqlite_master")).all())
        else:
            found["ddl"] = sorted(conn.execute(text(
                "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()")).all())
    return found


@pytest.fixture
def fresh_pg() -> Iterator[str]:
    """An empty PostgreSQL database of its own (the session's one holds the API tests' rows)."""
    pg_url = PG_URL
    if not pg_url:
        pytest.skip("no PostgreSQL server to test against (the report header says why)")
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    name = f"benchbook_twice_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def upgrade_twice(project: Project) -> None:
    url = project.database_url
    assert build_demo(project) > 0  # upgrades the new database, then fills it: schemas, fields, records, history
    first = open_database(url)
    try:
        before = snapshot(first.engine)
    finally:
        first.engine.dispose()
    head = ScriptDirectory.from_config(alembic_config(url)).get_heads()
    assert before["revision"] == sorted(head)
    assert {"records", "audit_entries", "alembic_version"} <= set(before["tables"])
    assert len(before["tables"]["records"]["rows"]) == 347
    assert any("ix_records_field_" in repr(row) for row in before["ddl"])  # the per-field indexes

    second = open_database(url)  # the second upgrade: nothing to do
    try:
        after = snapshot(second.engine)
    finally:
        second.engine.dispose()
    assert after["revision"] == before["revision"]
    assert after["ddl"] == before["ddl"]
    for name in before["tables"]:
        assert after["tables"].get(name) == before["tables"][name], f"the second upgrade changed table {name}"
    assert after == before


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    upgrade_twice(Project.init(tmp_path / "twice"))


@pytest.mark.postgres
def test_postgres_upgrade_is_idempotent(tmp_path: Path, fresh_pg: str) -> None:
    project = Project.init(tmp_path / "twice")
    upgrade_twice(Project(root=project.root, settings={**project.settings, "database": {"url": fresh_pg}}))
