"""persistence/rows_insert.insert_rows: many rows as one statement on SQLite stores exactly what
SQLAlchemy's executemany stores (value and SQL type, column by column), fires the search
trigger for every row, and is all or nothing. On SQLite and PostgreSQL."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from sqlalchemy import Table, insert, select, text
from sqlalchemy.exc import IntegrityError

from benchbook.persistence.db import Database
from benchbook.persistence.rows_insert import insert_rows
from benchbook.persistence.tables import AuditEntry, Record

ENTRIES = cast(Table, AuditEntry.__table__)
AWKWARD = ["plain", "naïve café ∑ 😀", 'quote " and \\ backslash', "new\nline\ttab", "", "null", "[1]", "1e5"]


def entry(i: int, value: Any, when: datetime) -> dict[str, Any]:
    return {"id": f"E{i:025d}", "action": "create", "entity_type": "record", "entity_id": f"R{i:025d}",
            "timestamp": when, "actor": AWKWARD[i % len(AWKWARD)], "changes": [],
            "old_data": None if i % 2 else {"v": value}, "new_data": {"v": value, "k": [value, None]},
            "batch_id": None, "request_id": None, "dataset_id": None, "schema_id": None}


def stored(db: Database) -> list[tuple[Any, ...]]:
    columns = [c.name for c in ENTRIES.columns if c.name != "id"]
    shown = ", ".join(f"{c}, {'pg_typeof' if db.engine.dialect.name == 'postgresql' else 'typeof'}({c})"
                      for c in columns)
    with db.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text(f"SELECT substr(id, 2), {shown} FROM audit_entries ORDER BY id"))]


VALUES: list[Any] = [*AWKWARD, 0, -1, 2**62, 2**70, 1.5, 1e300, -0.0, True, False, None, {"a": {"b": [1, "x"]}}]


def test_the_rows_stored_are_those_executemany_stores(empty_database: Database) -> None:
    when = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    # runs of rows sharing one time (converted once) between rows of times of their own
    rows = [entry(i, v, when if i % 3 else when + timedelta(seconds=i)) for i, v in enumerate(VALUES)]
    shared = {"one": "object", "in": ["two", "rows"]}
    rows[4]["new_data"] = rows[5]["new_data"] = shared
    with empty_database.engine.begin() as conn:
        conn.execute(insert(ENTRIES), rows)
    expected = stored(empty_database)
    with empty_database.engine.begin() as conn:
        conn.execute(ENTRIES.delete())
        insert_rows(conn, ENTRIES, rows)
    assert stored(empty_database) == expected
    assert len(expected) == len(VALUES)


def test_rows_past_the_bound_value_limit_go_as_several_statements_storing_the_same(
        empty_database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import event

    from benchbook.persistence import rows_insert

    when = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    rows = [entry(i, v, when) for i, v in enumerate(VALUES)]
    with empty_database.engine.begin() as conn:
        conn.execute(insert(ENTRIES), rows)
    expected = stored(empty_database)
    sent: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("INSERT INTO audit_entries"):
            sent.append(statement)
    event.listen(empty_database.engine, "before_cursor_execute", note)
    try:
        with empty_database.engine.begin() as conn:
            conn.execute(ENTRIES.delete())
            insert_rows(conn, ENTRIES, rows)
        if empty_database.engine.dialect.name != "sqlite":
            return
        assert len(sent) == len(rows_insert.sizes(len(rows), rows_insert.ROWS_PER_STATEMENT)) == 3  # 16 + 2 + 1
        assert stored(empty_database) == expected
        width = len(rows[0])
        monkeypatch.setattr(rows_insert, "_most_values", lambda conn: 2 * width + 1)  # two rows a statement
        sent.clear()
        with empty_database.engine.begin() as conn:
            conn.execute(ENTRIES.delete())
            insert_rows(conn, ENTRIES, rows)
        assert len(sent) == (len(rows) + 1) // 2
        assert stored(empty_database) == expected
    finally:
        event.remove(empty_database.engine, "before_cursor_execute", note)


def test_writes_of_any_size_go_as_few_distinct_statements() -> None:
    """SQLite keeps every distinct statement compiled (about 1 MB for 1,000 rows): the sizes a
    write is cut into are full statements and powers of two, so a connection sees few."""
    from benchbook.persistence.rows_insert import ROWS_PER_STATEMENT, sizes

    assert sizes(600, 256) == [256, 256, 64, 16, 8] and sizes(0, 256) == []
    seen: set[int] = set()
    for count in range(1, 3000):
        for most in (1, 3, 76, ROWS_PER_STATEMENT):
            cut = sizes(count, most)
            assert sum(cut) == count and all(0 < n <= most for n in cut)
            if most == ROWS_PER_STATEMENT:
                seen.update(cut)
    assert len(seen) <= 11  # 1000, then 512 down to 1


def test_the_bound_value_limit_is_the_connections_own(empty_database: Database) -> None:
    import sqlite3

    from benchbook.persistence import rows_insert

    if empty_database.engine.dialect.name != "sqlite":
        pytest.skip("the limit is SQLite's")
    with empty_database.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert rows_insert._most_values(conn) == raw.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) >= 999


def test_one_bad_row_inserts_nothing(empty_database: Database) -> None:
    when = datetime(2024, 5, 1, tzinfo=UTC)
    rows = [entry(i, i, when) for i in range(5)]
    rows.append(entry(2, "again", when))  # the primary key of row 2 again
    with pytest.raises(IntegrityError), empty_database.engine.begin() as conn:
        insert_rows(conn, ENTRIES, rows)
    with empty_database.engine.connect() as conn:
        assert conn.scalar(select(AuditEntry.id).limit(1)) is None


def test_no_rows_sends_nothing(empty_database: Database) -> None:
    with empty_database.engine.begin() as conn:
        insert_rows(conn, ENTRIES, [])
        assert conn.scalar(select(AuditEntry.id).limit(1)) is None


def test_every_row_of_one_statement_is_searchable(empty_database: Database, tmp_path: Any) -> None:
    from benchbook.domain.catalog.collections import create_collection
    from benchbook.domain.catalog.schemas import create_schema
    from benchbook.domain.context import Ctx
    from benchbook.domain.records.bulk import bulk_create_records
    from benchbook.domain.records.search import search_condition

    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "note", "fields": [{"name": "text", "type": "string"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["note"]})
        ids = bulk_create_records(ctx, "lab", [{"schema_name": "note", "data": {"text": f"word{i} common"}}
                                               for i in range(2500)])
    with empty_database.session() as s:
        for i in (0, 999, 1000, 2499):
            found = s.scalars(select(Record.id).where(cast(Any, search_condition(s, f"word{i}")))).all()
            assert found == [ids[i]]
        assert len(s.scalars(select(Record.id).where(cast(Any, search_condition(s, "common")))).all()) == 2500


def test_a_large_bulk_create_has_a_larger_page_cache_only_while_it_runs(
        empty_database: Database, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchbook.domain.catalog.collections import create_collection
    from benchbook.domain.catalog.schemas import create_schema
    from benchbook.domain.context import Ctx
    from benchbook.domain.records import bulk
    from benchbook.persistence.db import BULK_CACHE_KIB, CACHE_KIB

    if empty_database.engine.dialect.name != "sqlite":
        pytest.skip("the page cache is SQLite's")
    monkeypatch.setattr(bulk, "BULK_CACHE_ROWS", 2)
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "note", "fields": [{"name": "n", "type": "integer"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["note"]})

        def cache() -> int:
            return int(s.connection().exec_driver_sql("PRAGMA cache_size").scalar_one())
        seen: list[int] = []
        bulk.bulk_create_records(ctx, "lab", [{"schema_name": "note", "data": {"n": i}} for i in range(3)],
                                 progress=lambda n: seen.append(cache()))
        assert seen == [-BULK_CACHE_KIB] and cache() == -CACHE_KIB
        bulk.bulk_create_records(ctx, "lab", [{"schema_name": "note", "data": {"n": 1}}],
                                 progress=lambda n: seen.append(cache()))
        assert seen[-1] == -CACHE_KIB
        with pytest.raises(bulk.RowProblems):
            bulk.bulk_create_records(ctx, "lab", [{"schema_name": "note", "data": {"n": "x"}}] * 3)
        assert cache() == -CACHE_KIB
