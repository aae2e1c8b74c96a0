"""Models and migrations never drift apart (``alembic check`` on a freshly upgraded database),
and upgrading an up-to-date database again changes nothing."""
from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, inspect, select, text, update
from sqlalchemy.sql import ClauseElement

from benchbook.demo import build_demo
from benchbook.domain.context import Ctx
from benchbook.domain.history.entries import entry_responses
from benchbook.domain.records.writes import update_record
from benchbook.persistence.db import alembic_config, open_database
from benchbook.persistence.tables import AuditEntry, Record
from benchbook.settings.config import Project
from tests.conftest import new_pg_database


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
        virtual = set() if engine.dialect.name != "sqlite" else set(conn.execute(text(
            "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%'")).scalars())
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
                    # a contentless FTS table cannot be read row by row; its shadow tables are
                    "rows": [] if name in virtual else sorted(map(repr, conn.execute(
                        text(f'SELECT * FROM "{name}"')).all())),
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
    with new_pg_database("benchbook_twice") as url:
        yield url


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


def entries_read(url: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[Any]]]:
    """Every entry as the API shapes it, and every record entry's stored ``changes``, by id
    (opening the database upgrades it to the newest revision)."""
    db = open_database(url)
    try:
        with db.session() as s:
            entries = list(s.scalars(select(AuditEntry).order_by(AuditEntry.id)))
            return ({e["id"]: e for e in entry_responses(s, entries)},
                    {e.id: list(e.changes) for e in entries if e.entity_type == "record"})
    finally:
        db.engine.dispose()


def history_stored_once(project: Project) -> None:
    """0008 converts history written by the layout before it (``changes`` of record entries
    stored whole) so that every entry reads exactly as before, stored once where it can be."""
    url = project.database_url
    assert build_demo(project) > 0  # islands and penguins created: history of each
    db = open_database(url)
    try:  # edits: values changed and cleared, a penguin moved to another island
        with db.session() as s, s.begin():
            ctx = Ctx(session=s, actor="test", files_dir=project.files_dir)
            islands = list(s.scalars(select(Record.id).where(Record.parent_id.is_(None)).order_by(Record.id)))
            penguins = list(s.scalars(select(Record).where(Record.parent_id.is_not(None)).order_by(Record.id).limit(3)))
            update_record(ctx, penguins[0].id, {"data": {"sex": None, "year": 2009, "tag": "moved"},
                                                "parent_record_id": next(i for i in islands if i != penguins[0].parent_id)})
            update_record(ctx, penguins[1].id, {"data": {"bill_length_mm": 40.5}})
            update_record(ctx, penguins[2].id, {"parent_record_id": next(i for i in islands
                                                                         if i != penguins[2].parent_id)})
    finally:
        db.engine.dispose()
    expected, _ = entries_read(url)
    record_entries = [e for e in expected.values() if e["entity_type"] == "record"]
    assert {"create", "update"} <= {e["action"] for e in record_entries}
    command.downgrade(alembic_config(url), "0007_growth_index")
    engine = create_engine(url)
    table = AuditEntry.__table__
    kept = next(e for e in record_entries if e["action"] == "create" and len(e["changes"]) > 1)
    kept_changes = [dict(c) for c in reversed(kept["changes"])]  # an order the reader would not derive
    try:
        with engine.begin() as conn:  # what the layout before 0008 stored: every value in changes too
            for e in record_entries:
                changes = [dict(c, label="label then") if c["field"] != "parent_record_id" else dict(c)
                           for c in e["changes"]]  # a field's label is read as it is now
                conn.execute(update(table).where(table.c.id == e["id"]).values(changes=changes))
            conn.execute(update(table).where(table.c.id == kept["id"]).values(changes=kept_changes))
    finally:
        engine.dispose()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            before = dict(conn.execute(select(table.c.id, table.c.changes).where(table.c.entity_type == "record")).all())
        assert all(before[e["id"]] for e in record_entries if e["changes"])  # the old layout, really
    finally:
        engine.dispose()

    after, stored = entries_read(url)  # upgrades through 0008
    assert set(after) == set(expected)
    for eid, entry in expected.items():
        if eid == kept["id"]:
            assert after[eid] == {**entry, "changes": kept_changes}
            assert stored[eid] == kept_changes
        else:
            assert after[eid] == entry, f"entry {eid} reads differently after the upgrade"
    assert all(changes == [] for eid, changes in stored.items() if eid != kept["id"])
    engine = create_engine(url)
    try:
        with warnings.catch_warnings():  # SQLite's expression indexes (0018's day index) are not reflected
            warnings.filterwarnings("ignore", "Skipped unsupported reflection of expression-based index")
            names = {ix["name"] for ix in inspect(engine).get_indexes("audit_entries")}
    finally:
        engine.dispose()
    assert {"ix_audit_entries_schema_things", "ix_audit_entries_collection_things"} <= names
    assert not {"ix_audit_entries_schema_id", "ix_audit_entries_dataset_id"} & names


def test_history_stored_once_by_0008(tmp_path: Path) -> None:
    history_stored_once(Project.init(tmp_path / "once"))


@pytest.mark.postgres
def test_postgres_history_stored_once_by_0008(tmp_path: Path, fresh_pg: str) -> None:
    project = Project.init(tmp_path / "once")
    history_stored_once(Project(root=project.root, settings={**project.settings, "database": {"url": fresh_pg}}))


VERSIONS = Path(__file__).resolve().parents[1] / "src" / "benchbook" / "persistence" / "migrations" / "versions"


def test_every_migration_carries_what_it_needs() -> None:
    """Issue 39 item 7: a migration imports nothing of the live code (tables, triggers, helpers)
    but the migrations' own frozen column types, so editing live code never changes what an old
    migration does."""
    import ast

    scripts = sorted(VERSIONS.glob("[0-9]*.py"))
    assert len(scripts) >= 29
    for script in scripts:
        for node in ast.walk(ast.parse(script.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert not name.startswith("benchbook") or name.startswith("benchbook.persistence.migrations."), \
                    f"{script.name} imports {name}"


def triggers_made(engine: Engine) -> list[Any]:
    """The database's triggers (and PostgreSQL's trigger functions) as their SQL."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            return sorted(conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")).all())
        return sorted(conn.execute(text(
            "SELECT t.tgname, pg_get_triggerdef(t.oid), p.prosrc FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid "
            "WHERE NOT t.tgisinternal")).all())


def doctor_makes_the_same_triggers(url: str) -> None:
    from benchbook.persistence import audit_days, entry_triggers, record_counts

    db = open_database(url)  # upgrades the new database to the head
    try:
        migrated = triggers_made(db.engine)
        assert migrated, "the head keeps entries and counts with triggers"
        with db.engine.begin() as conn:  # what benchbook doctor makes when they are missing
            entry_triggers.recreate(conn)
            record_counts.repair(conn)
            audit_days.repair(conn)
        assert triggers_made(db.engine) == migrated
    finally:
        db.engine.dispose()


def test_the_migrated_triggers_are_those_the_live_code_makes(tmp_path: Path) -> None:
    """The migrations' frozen statements and the live code that repairs the triggers agree at
    the head: a change to either without the other (and a new migration) fails here."""
    doctor_makes_the_same_triggers(f"sqlite:///{tmp_path / 'triggers.db'}")


@pytest.mark.postgres
def test_postgres_migrated_triggers_are_those_the_live_code_makes(fresh_pg: str) -> None:
    doctor_makes_the_same_triggers(fresh_pg)
