"""A large create into a nearly empty table builds the indexes once, at the end
(persistence/deferred_indexes.py): the same indexes afterwards, none lost by a failure or a
rollback, the uniqueness check's own indexes kept while the rows go in, PostgreSQL untouched.

``deferred_indexes.MIN_ROWS`` is lowered so that a few dozen rows count as a large write.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, text

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema, set_unique_keys
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import RowProblems, bulk_create_records
from benchbook.domain.records.writes import create_record
from benchbook.persistence import deferred_indexes
from benchbook.persistence.db import Database
from benchbook.persistence.field_indexes import field_index_name

ROWS = 40


@pytest.fixture
def db(empty_database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    """Schemas ``site`` (unique ``code``) and ``obs`` (under site; indexed fields ``n``, ``label``),
    a collection ``lab`` for both; ``MIN_ROWS`` lowered to 10."""
    monkeypatch.setattr(deferred_indexes, "MIN_ROWS", 10)
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "site", "display_template": "{name}", "fields": [
            {"name": "name", "type": "string", "required": True}, {"name": "code", "type": "integer"}]})
        set_unique_keys(ctx, "site", [["code"]])
        create_schema(ctx, {"name": "obs", "parent": "site", "display_template": "{label} {n}", "fields": [
            {"name": "n", "type": "integer"}, {"name": "label", "type": "string"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["site", "obs"]})
    yield empty_database


def indexes(conn: Connection, table: str) -> dict[str, str]:
    """Name → DDL of ``table``'s indexes with DDL of their own (SQLite), or name → definition
    (PostgreSQL)."""
    if conn.dialect.name == "postgresql":
        rows = conn.execute(text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = :t"), {"t": table})
    else:
        rows = conn.execute(text("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = :t "
                                 "AND sql IS NOT NULL"), {"t": table})
    return {str(name): str(sql) for name, sql in rows}


def field_ids(db: Database, schema: str) -> dict[str, str]:
    with db.engine.connect() as conn:
        return {str(name): str(fid) for name, fid in conn.execute(text(
            "SELECT f.name, f.id FROM fields f JOIN schemas s ON s.id = f.schema_id WHERE s.name = :s"), {"s": schema})}


def create_many(db: Database, tmp_path: Path, rows: list[dict[str, Any]],
                seen: list[dict[str, str]] | None = None) -> list[str]:
    """``bulk_create_records`` of ``rows`` into ``lab`` in one transaction; ``seen`` gets the
    records' indexes as they stand after each chunk."""
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)

        def look(_: int) -> None:
            if seen is not None:
                seen.append(indexes(s.connection(), "records"))
        return bulk_create_records(ctx, "lab", rows, progress=look)


def sites(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"schema_name": "site", "data": {"name": f"site {i}", "code": i}} for i in range(start, start + n)]


def test_the_same_indexes_afterwards_and_none_while_the_rows_go_in(db: Database, tmp_path: Path) -> None:
    with db.engine.connect() as conn:
        before = {table: indexes(conn, table) for table in ("records", "audit_entries")}
    (site,) = create_many(db, tmp_path, sites(1))
    fields = field_ids(db, "obs")
    seen: list[dict[str, str]] = []
    ids = create_many(db, tmp_path, [{"schema_name": "obs", "parent_record_id": site, "data": {"n": i, "label": f"l{i}"}}
                                     for i in range(ROWS)], seen)
    assert len(ids) == ROWS
    with db.engine.connect() as conn:
        assert {table: indexes(conn, table) for table in ("records", "audit_entries")} == before
        while_in = seen[0]
        if conn.dialect.name == "sqlite":
            assert field_index_name(fields["n"]) not in while_in and "ix_records_listing" not in while_in
            plan = " ".join(str(r[-1]) for r in conn.execute(text(
                f"EXPLAIN QUERY PLAN SELECT id FROM records WHERE CAST(JSON_EXTRACT(data, '$.\"{fields['n']}\"') "
                "AS FLOAT) = 3")))
            assert field_index_name(fields["n"]) in plan
            n = conn.execute(text(f"SELECT count(*) FROM records INDEXED BY {field_index_name(fields['n'])} "
                                  f"WHERE CAST(JSON_EXTRACT(data, '$.\"{fields['n']}\"') AS FLOAT) >= 0")).scalar()
            assert n == ROWS  # the index made again holds every row written while it was gone
        else:
            assert while_in == before["records"]  # PostgreSQL: never dropped


def test_a_table_already_holding_rows_keeps_its_indexes(db: Database, tmp_path: Path) -> None:
    create_many(db, tmp_path, sites(ROWS))
    seen: list[dict[str, str]] = []
    create_many(db, tmp_path, sites(ROWS, start=ROWS), seen)  # as many again: not twice what is held
    with db.engine.connect() as conn:
        assert all(s == indexes(conn, "records") for s in seen)
        assert not deferred_indexes.worth_it(conn, "records", ROWS)
        assert deferred_indexes.worth_it(conn, "records", 4 * ROWS) is (conn.dialect.name == "sqlite")
        assert not deferred_indexes.worth_it(conn, "records", 9)  # below MIN_ROWS, even when empty


def test_the_uniqueness_check_keeps_the_indexes_it_reads(db: Database, tmp_path: Path) -> None:
    with db.engine.connect() as conn:
        before = indexes(conn, "records")
    create_many(db, tmp_path, sites(1, start=5))
    code = field_ids(db, "site")["code"]
    seen: list[dict[str, str]] = []
    rows = sites(ROWS, start=100) + sites(1, start=5) + sites(1, start=100)
    with pytest.raises(RowProblems) as caught:
        create_many(db, tmp_path, rows, seen)
    assert [i for i, _ in caught.value.problems] == [ROWS, ROWS + 1]  # a live record's code, an earlier row's
    if db.engine.dialect.name == "sqlite":
        assert {field_index_name(code), "ix_records_listing", "ix_records_parent_id"} <= set(seen[0])
        assert "ix_records_created_at" not in seen[0]
    create_many(db, tmp_path, sites(ROWS, start=100), seen)
    with db.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM records")).scalar() == ROWS + 1
        assert indexes(conn, "records") == before


def test_a_failed_create_rolled_back_leaves_the_indexes(db: Database, tmp_path: Path) -> None:
    with db.engine.connect() as conn:
        before = indexes(conn, "records")
    rows = sites(ROWS) + [{"schema_name": "site", "data": {"code": 1000}}]  # no name: refused
    with pytest.raises(RowProblems):
        create_many(db, tmp_path, rows)
    with db.engine.connect() as conn:
        assert indexes(conn, "records") == before
        assert conn.execute(text("SELECT count(*) FROM records")).scalar() == 0


def test_an_error_in_the_block_makes_them_again_without_a_rollback(db: Database, tmp_path: Path) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's indexes are never dropped (deferred_indexes.worth_it)")
    with db.session() as s, s.begin():
        conn = s.connection()
        before = indexes(conn, "records")
        with pytest.raises(RuntimeError), deferred_indexes.deferred(conn, "records", keep={"ix_records_schema"}) as gone:
            assert "ix_records_schema" not in gone and "ix_records_listing" in gone
            assert set(indexes(conn, "records")) == {"ix_records_schema"}
            raise RuntimeError("stop")
        assert indexes(conn, "records") == before
        create_record(Ctx(session=s, actor="tester", files_dir=tmp_path), "lab",
                      {"schema_name": "site", "data": {"name": "after", "code": 1}})
    with db.engine.connect() as conn:
        assert indexes(conn, "records") == before
