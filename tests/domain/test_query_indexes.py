"""The per-field indexes (field_indexes.field_index_ddl, migration 0003) exist for scalar fields, go with
a purged field, and are the ones the database picks for the record queries' filters and sorts
(the index expression is the very expression the queries compare)."""
from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.orm import Session

from benchbook.domain import analytics
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.fields import delete_field, purge_field
from benchbook.domain.catalog.lookup import find_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import storage as history_storage
from benchbook.domain.history.restore import orphans
from benchbook.domain.records import lists as record_lists
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.writes import update_record
from benchbook.persistence.db import Database
from benchbook.persistence.field_indexes import field_index_name, field_statistics_name
from benchbook.persistence.tables import EDITS_INDEX, Record
from benchbook.settings.limits import Limits, use
from tests.conftest import field_indexes
from tests.domain.data_sets import DataSets

FIELDS = [{"name": "n", "type": "integer"}, {"name": "x", "type": "float"}, {"name": "label", "type": "string"},
          {"name": "day", "type": "date"}, {"name": "flag", "type": "boolean"}, {"name": "tags", "type": "tags"}]


def ixlab(ctx: Ctx) -> None:
    """Schema ``ixitem`` (``FIELDS``), collection ``ixlab``: 3,000 records, each field holding a
    value (``n`` 0 to 2,999)."""
    create_schema(ctx, {"name": "ixitem", "fields": FIELDS})
    create_collection(ctx, {"name": "ixlab", "schemas": ["ixitem"]})
    bulk_create_records(ctx, "ixlab", [{"schema_name": "ixitem", "data": {
        "n": i, "x": i / 3, "label": f"w{i % 50}", "day": f"2024-01-{1 + i % 28:02d}", "flag": i % 2 == 0,
        "tags": ["a"]}} for i in range(3000)])


@pytest.fixture
def db(data_sets: DataSets) -> Iterator[Database]:
    """The data set of :func:`ixlab` for a test that only reads it (built once per backend; on
    SQLite a copy of its own, so that one test's ``ANALYZE`` leaves the next one's plans alone)."""
    with data_sets.shared(ixlab) as database:
        yield database


@pytest.fixture
def own_db(data_sets: DataSets) -> Iterator[Database]:
    """The data set of :func:`ixlab` built for this test alone, which writes to it."""
    with data_sets.fresh(ixlab) as database:
        yield database


def field_ids(database: Database) -> dict[str, str]:
    with database.engine.connect() as conn:
        return dict(conn.execute(text("SELECT name, id FROM fields WHERE name IN ('n', 'x', 'label', 'day', "
                                      "'flag', 'tags') ORDER BY created_at")).all())


def indexes(database: Database) -> set[str]:
    """Per-field indexes on records."""
    with database.engine.connect() as conn:
        return field_indexes(conn)


def test_scalar_fields_get_an_index_and_lose_it_when_purged(own_db: Database) -> None:
    ids = field_ids(own_db)
    assert {field_index_name(ids[n]) for n in ("n", "x", "label", "day")} <= indexes(own_db)
    assert not {field_index_name(ids[n]) for n in ("flag", "tags")} & indexes(own_db)
    with own_db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=Path("."))
        delete_field(ctx, "ixitem", "label")
        purge_field(ctx, "ixitem", "label")
    assert field_index_name(ids["label"]) not in indexes(own_db)


def plans(database: Database, query: RecordQuery) -> list[str]:
    """The query plans of the statements a page of ``query`` runs, as the database states them
    (its count given all the time it needs, so that it runs whatever the machine's load)."""
    with use(Limits(count_ms=60_000)):
        return plans_of(database, lambda s: list_page(s, "ixlab", query, limit=50, offset=0))


def plans_of(database: Database, run: Callable[[Session], Any], table: str = "records", word: str = "count") -> list[str]:
    """The query plans of the statements over ``table`` with ``word`` (a count) that ``run`` executes."""
    statements: list[tuple[str, Any]] = []

    def note(_conn: Any, _cursor: Any, sql: str, params: Any, _ctx: Any, _many: bool) -> None:
        if f"FROM {table}" in sql and word in sql.lower():
            statements.append((sql, params))

    event.listen(database.engine, "before_cursor_execute", note)
    try:
        with database.session() as s:
            run(s)
    finally:
        event.remove(database.engine, "before_cursor_execute", note)
    out = []
    with database.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cursor = raw.cursor()
        if database.engine.dialect.name == "postgresql":
            cursor.execute("SET enable_seqscan = off")
            for sql, params in statements:
                cursor.execute("EXPLAIN " + sql, params)
                out.append(" ".join(str(r[0]) for r in cursor.fetchall()))
        else:
            for sql, params in statements:
                cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
                out.append(" ".join(str(r[3]) for r in cursor.fetchall()))
    return out


@pytest.mark.parametrize("leaf", [
    {"field": "label", "op": "eq", "value": "w7"},
    {"field": "n", "op": "gt", "value": 2990},
    {"field": "x", "op": "lte", "value": 1.5},
    {"field": "day", "op": "eq", "value": "2024-01-05"},
])
def test_filters_use_the_field_index(db: Database, leaf: dict[str, Any]) -> None:
    ids = field_ids(db)
    with db.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
    found = plans(db, RecordQuery(schema="ixitem", filter=json.dumps({"and": [leaf]})))
    assert found and all(field_index_name(ids[leaf["field"]]) in plan for plan in found), found


def page_statements(db: Database, query: RecordQuery) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The first page of 50 of ``query`` on ``ixlab`` (counted within a generous budget) and the
    statements it sent that read records in an order, with their parameters."""
    statements: list[tuple[str, Any]] = []

    def note(_conn: Any, _cursor: Any, sql: str, params: Any, _ctx: Any, _many: bool) -> None:
        if "FROM records" in sql and "ORDER BY" in sql:
            statements.append((sql, params))

    event.listen(db.engine, "before_cursor_execute", note)
    try:
        with db.session() as s, use(Limits(count_ms=60_000)):
            page = list_page(s, "ixlab", query, limit=50, offset=0)
    finally:
        event.remove(db.engine, "before_cursor_execute", note)
    return page, statements


def explained(db: Database, sql: str, params: Any) -> str:
    """PostgreSQL's plan of ``sql`` as a large table would get it: 3,000 records fit a few
    pages, where a scan and a sort cost least, so both are priced out."""
    with db.engine.connect() as conn:
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        return "\n".join(str(r[0]) for r in cursor.fetchall())


def test_a_sorted_page_walks_the_sort_index_on_postgresql(db: Database) -> None:
    """PostgreSQL finds a sorted page of many matches by walking the sort field's index: the
    sort keys are the index's order (``NULLS LAST``) and the field's expression statistics
    (migration 0014) tell it how many match; the page is the one a sort of every match gives."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite's walk is the benchmark's own (test_a_walked_sort_index_gives_the_same_pages)")
    ids = field_ids(db)
    with db.engine.begin() as conn:
        names = set(conn.execute(text("SELECT stxname FROM pg_statistic_ext")).scalars())
        conn.execute(text("ANALYZE records"))
    assert {field_statistics_name(ids[n]) for n in ("n", "x", "label", "day")} <= names
    assert not {field_statistics_name(ids[n]) for n in ("flag", "tags")} & names
    query = RecordQuery(schema="ixitem", filter=json.dumps({"and": [{"field": "x", "op": "gt", "value": 10}]}),
                        sort=["n"])
    page, statements = page_statements(db, query)
    assert [item["data"]["n"] for item in page["items"]] == list(range(31, 81))
    assert (page["total"], page["total_exact"]) == (2969, True)
    [(sql, params)] = statements
    plan = explained(db, sql, params)
    lines = plan.splitlines()
    walk = next((line for line in lines if f"Index Scan using {field_index_name(ids['n'])}" in line), None)
    assert walk is not None, plan  # the sort keys are the index's order
    assert "Incremental Sort" in plan or "Sort" not in plan, plan  # id breaks ties within equal n only
    estimate = int(re.search(r"rows=(\d+)", walk).group(1))  # type: ignore[union-attr]
    assert abs(estimate - 2969) < 300, plan  # the statistics of x's expression: no default third


@pytest.mark.parametrize("sort", [["n:desc"], ["created_at:desc", "n"]])
def test_a_descending_page_walks_the_index_backwards_on_postgresql(db: Database, sort: list[str]) -> None:
    """A descending sort is asked for, among the records holding a value, in the order a
    backward walk of the index gives (``NULLS FIRST``; moot there): with ``NULLS LAST``
    PostgreSQL sorted every match (``label:desc`` at 1,000,000 records: 195 -> 102 ms)."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite's walk names its index (test_a_walked_sort_index_gives_the_same_pages)")
    with db.engine.begin() as conn:
        conn.execute(text("ANALYZE records"))
    page, statements = page_statements(db, RecordQuery(schema="ixitem", sort=sort))
    if sort == ["n:desc"]:
        assert [item["data"]["n"] for item in page["items"]] == list(range(2999, 2949, -1))
    plan = explained(db, *statements[0])
    index = field_index_name(field_ids(db)["n"]) if sort == ["n:desc"] else "ix_records_created_at"
    assert f"Index Scan Backward using {index}" in plan, plan


def test_a_page_in_id_order_is_read_in_order_not_sorted(db: Database) -> None:
    with db.session() as s:
        collection = find_collection(s, "ixlab")
        statement = RecordQuery(schema="ixitem").select(s, collection).limit(50)
        sql = str(statement.compile(db.engine, compile_kwargs={"literal_binds": True}))
    with db.engine.begin() as conn:
        conn.execute(text("ANALYZE"))
        if db.engine.dialect.name == "postgresql":
            conn.execute(text("SET LOCAL enable_seqscan = off"))
        prefix = "EXPLAIN QUERY PLAN " if db.engine.dialect.name == "sqlite" else "EXPLAIN "
        plan = " ".join(str(row[-1]) for row in conn.execute(text(prefix + sql)))
    assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


SORTS = [["n"], ["n:desc"], ["x", "label:desc"], ["label"], ["day:desc", "n"]]
TREES = [None, {"field": "label", "op": "eq", "value": "w7"},
         {"and": [{"field": "n", "op": "gt", "value": 1000}, {"field": "x", "op": "lt", "value": 800}]}]


def test_a_walked_sort_index_gives_the_same_pages(own_db: Database, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite walks the sort field's index for a page when that is quick (record_lists._sorted_page)
    and sorts every match otherwise: both give the same page and total, records without a value
    last, whatever the budget, for every sort, filter and offset (also past the valued records)."""
    with own_db.session() as s, s.begin():  # records without the sort values come last
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        bulk_create_records(ctx, "ixlab", [{"schema_name": "ixitem", "data": {"label": "w7", "flag": True}}
                                           for _ in range(30)])
    for sort, tree, offset in itertools.product(SORTS, TREES, [0, 40, 2990, 3500]):
        query = RecordQuery(schema="ixitem", sort=sort, filter=json.dumps(tree) if tree else None)
        pages = []
        monkeypatch.setattr(record_lists, "SORT_ALL_UP_TO", 0)  # walk, however few match
        for budget in (10**9, 0):  # walk to the end / give the walk up at once
            monkeypatch.setattr(record_lists, "WALK_MS", budget)
            with own_db.session() as s, use(Limits(count_ms=60_000)):  # exact, however loaded the machine
                page = list_page(s, "ixlab", query, limit=50, offset=offset)
            pages.append(([item["id"] for item in page["items"]], page["total"]))
            assert page["total_exact"]  # 3,030 records count well within the budget
        with own_db.session() as s:
            collection = find_collection(s, "ixlab")
            ids, total, exact = record_lists._page(s, query, collection, query.conditions(s, collection),
                                                   limit=50, offset=offset)
            pages.append((ids, total))
            assert exact
        assert all(p == pages[0] for p in pages), (sort, tree, offset, [(len(i), t) for i, t in pages])
        assert pages[0][1] > 0


BASE_SORT_CASES = [["created_at:desc"], ["created_at", "n:desc"], ["updated_at:desc"], ["natural_name"],
                   ["natural_name:desc"], ["ixnamed.natural_name", "created_at:desc"]]


@pytest.mark.parametrize("schema", ["ixnamed", None])
def test_a_page_sorted_by_a_base_column_walks_its_index(own_db: Database, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch, walks: list[object],
                                                         schema: str | None) -> None:
    """Newest first, recently changed and by name (migration 0016): the page walked along the
    column's index is the page a sort of every match gives, with the same total, names repeated
    and missing, with and without ``schema``; on SQLite the walk answers (at 1,000,000 records
    newest first took 679 ms sorted, 24 ms walked), and PostgreSQL's plan reads the index."""
    with own_db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "ixnamed", "display_template": "{label}", "fields": FIELDS})
        create_collection(ctx, {"name": "ixnamedlab", "schemas": ["ixnamed"]})
        for chunk in range(3):  # three chunks: three creation times, ties within each
            bulk_create_records(ctx, "ixnamedlab", [{"schema_name": "ixnamed", "data": {
                "n": i, "label": f"w{i % 7}" if i % 5 else None}} for i in range(chunk * 200, chunk * 200 + 200)])
    with own_db.session() as s, s.begin():  # some changed later: updated_at differs from created_at
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        for record in s.scalars(select(Record).where(Record.natural_name.is_not(None)).limit(40)):
            update_record(ctx, record.id, {"data": {"n": -1}})
    monkeypatch.setattr(record_lists, "SORT_ALL_UP_TO", 0)  # walk, however few match
    for sort, offset in itertools.product(BASE_SORT_CASES, [0, 230, 470, 590]):
        if schema is None and "." in sort[0]:
            continue
        query = RecordQuery(schema=schema, sort=sort)
        with own_db.session() as s, use(Limits(count_ms=60_000)):
            page = list_page(s, "ixnamedlab", query, limit=50, offset=offset)
            collection = find_collection(s, "ixnamedlab")
            ids, total, _ = record_lists._page(s, query, collection, query.conditions(s, collection),
                                               limit=50, offset=offset)
        assert ([item["id"] for item in page["items"]], page["total"]) == (ids, total), (sort, offset)
        assert (total, page["total_exact"]) == (600, True)
    if own_db.engine.dialect.name == "sqlite":
        assert len([w for w in walks if w]) >= 10  # the pages among records holding the sort value
        return
    with own_db.session() as s:
        collection = find_collection(s, "ixnamedlab")
        query = RecordQuery(schema=schema, sort=["created_at:desc"])
        statement = select(Record.id).where(*query.conditions(s, collection)).order_by(
            *query.order_by(s, collection)).limit(50)
        sql = str(statement.compile(own_db.engine, compile_kwargs={"literal_binds": True}))
    with own_db.engine.begin() as conn:
        conn.execute(text("ANALYZE records"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        conn.execute(text("SET LOCAL enable_sort = off"))  # 600 records: priced as a large table is
        plan = "\n".join(str(row[0]) for row in conn.execute(text("EXPLAIN " + sql)))
    assert "Index Scan Backward using ix_records_created_at" in plan, plan


def test_a_missing_sort_index_still_sorts(data_sets: DataSets, caplog: pytest.LogCaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if data_sets.backend != "sqlite":
        pytest.skip("the index walk is SQLite's")
    monkeypatch.setattr(record_lists, "SORT_ALL_UP_TO", 0)  # walk, however few match
    with data_sets.fresh(ixlab) as db:  # its own: it drops an index
        with db.engine.begin() as conn:
            conn.execute(text(f"DROP INDEX {field_index_name(field_ids(db)['n'])}"))
        query = RecordQuery(schema="ixitem", sort=["n:desc"])
        with db.session() as s:
            page = list_page(s, "ixlab", query, limit=5, offset=0)
    assert [item["data"]["n"] for item in page["items"]] == [2999, 2998, 2997, 2996, 2995]
    assert page["total"] == 3000 and "without the index walk" in caplog.text


@pytest.mark.parametrize("bucket", ["day", "week", "month"])
def test_audit_events_read_the_kept_days_not_the_entries(db: Database, bucket: str) -> None:
    """``GET /analytics/audit/events`` reads whole days from the counts SQLite keeps (migration
    0021), never the entries; a bound with a time of day counts just that part of its day from
    the entries, through the time's index; every range answers the same counts."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the days are kept on SQLite (migration 0021: PostgreSQL aggregates by hash)")
    for start, end in ((None, None), ("2020-01-01", "2031-01-01T00:00:00Z")):
        call = functools.partial(analytics.audit_events, bucket=bucket, start=start, end=end)
        found = plans_of(db, call, table="audit_days", word="sum")
        assert found and all("audit_days" in plan and "audit_entries" not in plan for plan in found), found
    timed = functools.partial(analytics.audit_events, bucket=bucket, start="2020-01-01T00:00:01Z",
                              end="2030-12-31T23:59:59+00:00")
    found = plans_of(db, timed, table="audit_entries")
    part = "SEARCH audit_entries USING INDEX ix_audit_entries_timestamp (timestamp>? AND timestamp<?)"
    assert len(found) == 1 and found[0].count(part) == 2 and "SCAN audit_entries" not in found[0], found
    with db.session() as s:
        whole = analytics.audit_events(s, bucket=bucket)["items"]
        days = analytics.audit_events(s, bucket=bucket, start="2020-01-01", end="2031-01-01")["items"]
        none = analytics.audit_events(s, bucket=bucket, start="2031-01-01")["items"]
        assert whole and whole == days == timed(s)["items"] and none == []


@pytest.mark.parametrize("bucket", ["day", "week", "month"])
def test_records_growth_reads_the_kept_days_not_the_records(db: Database, bucket: str) -> None:
    """``GET /analytics/records/growth`` reads whole days from the counts SQLite keeps (migration
    0020), never the records; a bound with a time of day counts just that part of its day from
    the records, through the creation time's index."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the days are kept on SQLite (migration 0020: PostgreSQL aggregates by hash)")
    for start, end in ((None, None), ("2020-01-01", "2031-01-01T00:00:00+00:00")):
        call = functools.partial(analytics.records_growth, bucket=bucket, start=start, end=end)
        found = plans_of(db, call, table="record_days", word="sum")
        assert found and all("record_days" in plan and "SCAN records" not in plan and "SEARCH records" not in plan
                             for plan in found), found
    timed = functools.partial(analytics.records_growth, bucket=bucket, start="2020-01-01T05:00:00Z",
                              end="2031-01-01T00:00:00+02:00")
    found = plans_of(db, timed, table="records")
    part = "SEARCH records USING INDEX ix_records_created_at (created_at>? AND created_at<?)"
    assert len(found) == 1 and found[0].count(part) == 2 and "SCAN records" not in found[0], found  # two days' parts
    with db.session() as s:
        whole = analytics.records_growth(s, bucket=bucket)["items"]
        assert whole and whole == timed(s)["items"]


def test_orphans_seek_the_deleted_records_instead_of_reading_every_record(db: Database) -> None:
    """``GET /records/orphans`` finds the deleted records by seeking ``ix_records_listing`` per
    collection and schema (a read of the whole index before: 58 ms at 1,000,000 records)."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the plan checked is SQLite's")
    found = plans_of(db, lambda s: orphans(s, 50, 0))
    assert found and all("SEARCH records USING COVERING INDEX ix_records_listing (dataset_id=? AND schema_id=? "
                         "AND deleted_at>?)" in plan and "SCAN records" not in plan for plan in found), found


def test_the_storage_figures_read_the_edits_not_every_entry(db: Database) -> None:
    """``GET /audit/storage`` looks for edits stored whole among the edits only (migration 0022:
    a read of every entry before, 432 ms at 1,000,000 entries), and for the creates and deletes
    still holding values or identity in their partial indexes (0017, 0024): one statement, every
    part of it an index's entries."""
    found = plans_of(db, history_storage.count_whole, table="audit_entries", word=" union ")
    if db.engine.dialect.name == "sqlite":
        assert found and all(plan.count(f"USING INDEX {EDITS_INDEX}") == 3 and
                             plan.count("SCAN e USING INDEX") == plan.count("SCAN e ") for plan in found), found
    else:
        assert found and all(EDITS_INDEX in plan and "Seq Scan on audit_entries" not in plan for plan in found), found
