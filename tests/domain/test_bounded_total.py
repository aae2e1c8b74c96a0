"""A record page's ``total`` within the count budget (issue 15; domain/records/counting.py):
exact when the count finishes in time, else a lower bound flagged ``total_exact: false`` that is
never below the records up to the end of the page; ``limit`` 0 and plain listings (no filter,
search or sort) stay exact."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import func, select, text

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.lookup import find_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records import counting
from benchbook.domain.records import lists as record_lists
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.persistence.db import Database
from benchbook.persistence.tables import Record
from benchbook.settings.limits import Limits, use
from tests.conftest import statements_sent
from tests.domain.data_sets import DataSets

N = 2500
EVEN = {"field": "flag", "op": "eq", "value": True}  # half the records: 1,250 matches


def counted(ctx: Ctx) -> None:
    """Schema ``cnt`` (n, flag) and collection ``cntlab``: ``N`` records, ``n`` 0 to N - 1,
    ``flag`` true for the even ones."""
    create_schema(ctx, {"name": "cnt", "fields": [{"name": "n", "type": "integer"},
                                                  {"name": "flag", "type": "boolean"}]})
    create_collection(ctx, {"name": "cntlab", "schemas": ["cnt"]})
    bulk_create_records(ctx, "cntlab", [{"schema_name": "cnt", "data": {"n": i, "flag": i % 2 == 0}}
                                        for i in range(N)])


@pytest.fixture
def db(data_sets: DataSets) -> Iterator[Database]:
    """The data set of :func:`counted`, built once per backend: every test here only reads it."""
    with data_sets.shared(counted) as database:
        yield database


def page(database: Database, *, sort: list[str] | None = None, limit: int = 50, offset: int = 0,
         tree: dict[str, object] | None = None) -> dict[str, object]:
    query = RecordQuery(schema="cnt", sort=sort or [], filter=json.dumps(tree) if tree else None)
    with database.session() as s:
        return list_page(s, "cntlab", query, limit=limit, offset=offset)


def conds(database: Database, s: object, tree: dict[str, object] | None = None) -> list[object]:
    query = RecordQuery(schema="cnt", filter=json.dumps(tree) if tree else None)
    return query.conditions(s, find_collection(s, "cntlab"))  # type: ignore[arg-type]


def test_within_the_budget_the_total_is_exact(db: Database) -> None:
    with use(Limits(count_ms=60_000)):  # a loaded machine must not make the count look too slow
        for sort in (["n"], ["n:desc"], []):
            got = page(db, sort=sort, tree=EVEN)
            assert (got["total"], got["total_exact"]) == (N // 2, True)
            assert len(got["items"]) == 50  # type: ignore[arg-type]
        got = page(db, sort=["n"])
    assert (got["total"], got["total_exact"]) == (N, True)


def test_a_count_cut_short_by_the_budget_is_a_lower_bound(db: Database) -> None:
    with db.session() as s:
        where = conds(db, s, EVEN)
        assert counting.bounded_total(s, where, at_least=0, budget_ms=60_000) == (N // 2, True)
        assert counting.bounded_total(s, where, at_least=70, budget_ms=0) == (70, False)  # no step begun
        # the session is still usable after an interrupted statement
        assert counting.bounded_total(s, where, at_least=0, budget_ms=60_000) == (N // 2, True)


def slow(dialect: str) -> Any:
    """A condition true of every record that takes about a millisecond per record it is tested on."""
    if dialect == "sqlite":
        return text("length(randomblob(400000)) > 0")
    return text("pg_sleep(0.001) IS NOT NULL")


def test_a_step_is_stopped_where_the_budget_runs_out(db: Database) -> None:
    """The first step (up to 1,000 of the 1,250 matches, some 2 s of the slow condition) is
    stopped inside its statement: SQLite's progress handler, PostgreSQL's statement_timeout. The
    bound is then what the caller knew; had the step finished it would be 1,000."""
    with db.session() as s:
        where = [*conds(db, s, EVEN), slow(db.engine.dialect.name)]
        before = s.scalar(text("SELECT current_setting('statement_timeout')")) if db.engine.dialect.name != "sqlite" else None
        assert counting.bounded_total(s, where, at_least=70, budget_ms=100) == (70, False)
        # the transaction goes on, with the timeout it had
        assert s.scalar(select(func.count()).select_from(Record)) == N
        if before is not None:
            assert s.scalar(text("SELECT current_setting('statement_timeout')")) == before
            assert counting.bounded_total(s, conds(db, s, EVEN), at_least=0, budget_ms=60_000) == (N // 2, True)
            assert s.scalar(text("SELECT current_setting('statement_timeout')")) == before


@contextmanager
def uninterrupted(session: object, deadline: float, clock: object) -> Iterator[Callable[[], bool]]:
    yield lambda: True


def test_a_step_passed_before_the_budget_ran_out_is_the_bound(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "interruptible", uninterrupted)  # no interruption inside a step
    with db.session() as s:
        assert counting.bounded_total(s, conds(db, s, EVEN), at_least=50, budget_ms=0) == (1000, False)
        assert counting.bounded_total(s, conds(db, s), at_least=1500, budget_ms=0) == (1500, False)


def test_pages_out_of_budget_say_so_and_keep_their_items(db: Database) -> None:
    exact = page(db, sort=["n"], offset=100, tree=EVEN)
    with use(Limits(count_ms=1)):
        # a budget of 1 ms: whether a step finishes depends on the machine; either way the page
        # is the same and the total is consistent with it
        got = page(db, sort=["n"], offset=100, tree=EVEN)
    assert got["items"] == exact["items"]
    if got["total_exact"]:
        assert got["total"] == N // 2
    else:
        assert 150 <= got["total"] <= N // 2  # type: ignore[operator]


def test_limit_0_and_plain_listings_count_exactly(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(record_lists, "bounded_total", lambda *a, **k: pytest.fail("counted within a budget"))
    for sort in (["n"], []):
        assert page(db, sort=sort, limit=0, tree=EVEN) | {"items": []} == {
            "items": [], "total": N // 2, "total_exact": True, "offset": 0, "limit": 0}
    got = page(db)
    assert (got["total"], got["total_exact"]) == (N, True)


def test_an_unsorted_page_with_a_filter_counts_within_the_budget(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted in time: the page is read among the matches. Cut short: the page is found by
    walking the records in id order, the same items, ``total`` a lower bound; the last page
    knows its total. A walk that runs out of time (the matches rare along the ids) falls back to
    the exact page: on PostgreSQL, the matches gathered and counted in one pass."""
    with use(Limits(count_ms=60_000)):
        exact = [page(db, tree=EVEN, offset=offset) for offset in (0, 600, N // 2 - 10)]
    assert [(len(p["items"]), p["total"], p["total_exact"]) for p in exact] == [  # type: ignore[arg-type]
        (50, N // 2, True), (50, N // 2, True), (10, N // 2, True)]
    ids = [[r["id"] for r in p["items"]] for p in exact]  # type: ignore[attr-defined]
    with db.session() as s:
        even = list(s.scalars(select(Record.id).where(*conds(db, s, EVEN)).order_by(Record.id)))
    assert ids == [even[0:50], even[600:650], even[-10:]]
    monkeypatch.setattr(record_lists, "bounded_total", lambda *a, **k: (1000, False))  # cut short
    walked = [page(db, tree=EVEN, offset=offset) for offset in (0, 600, N // 2 - 10)]
    assert [[r["id"] for r in p["items"]] for p in walked] == ids  # type: ignore[attr-defined]
    assert [(p["total"], p["total_exact"]) for p in walked] == [(1000, False), (1000, False), (N // 2, True)]
    monkeypatch.setattr(record_lists, "WALK_MS", 0)  # the walk runs out of time at once: counted whole
    assert page(db, tree=EVEN, offset=600) == exact[1]
    assert page(db, tree=EVEN, offset=N) | {"items": []} == {
        "items": [], "total": N // 2, "total_exact": True, "offset": N, "limit": 50}


def search_page(database: Database, schema: str | None, offset: int) -> dict[str, object]:
    with database.session() as s:
        return list_page(s, "cntlab", RecordQuery(schema=schema, search="1"), limit=50, offset=offset)


@pytest.mark.parametrize("schema", ["cnt", None])
def test_a_search_page_cut_short_is_walked_along_the_ids_with_or_without_a_schema(
        db: Database, monkeypatch: pytest.MonkeyPatch, walks: list[object], schema: str | None) -> None:
    """A common word's page (``1`` begins 1,111 of the numbers) is walked in id order when its
    count is cut short: along ``ix_records_listing`` with a schema, along the primary key's
    index without one (SQLite: a search page used to read every match, 400 ms at 1,000,000
    records). The same items as the exact page; where the walk cannot run (its index missing,
    or out of time), the exact page answers."""
    matches = 1 + 10 + 100 + 1000
    offsets = (0, 600, matches - 10)
    with use(Limits(count_ms=60_000)):
        exact = [search_page(db, schema, offset) for offset in offsets]
    assert [(len(p["items"]), p["total"], p["total_exact"]) for p in exact] == [  # type: ignore[arg-type]
        (50, matches, True), (50, matches, True), (10, matches, True)]
    monkeypatch.setattr(record_lists, "bounded_total", lambda *a, **k: (100, False))  # cut short
    walked = [search_page(db, schema, offset) for offset in offsets]
    assert len(walks) == 3 and None not in walks  # each page was found by its walk
    assert [p["items"] for p in walked] == [p["items"] for p in exact]
    assert [(p["total"], p["total_exact"]) for p in walked] == [(100, False), (650, False), (matches, True)]
    if schema is None and db.engine.dialect.name == "sqlite":
        monkeypatch.setattr(record_lists, "PRIMARY_KEY_INDEX", "no_such_index")  # the walk cannot run
    else:
        monkeypatch.setattr(record_lists, "WALK_MS", 0)  # the walk runs out of time at once
    assert search_page(db, schema, 600) == exact[1]  # the exact page


def test_a_search_is_counted_from_the_search_table_on_sqlite(db: Database) -> None:
    """On SQLite a search's count reads the search table first and joins its matches to the
    records, so a step stops at its cap (``rowid IN (matches)`` read every match into a list
    first); the same total as counting with the condition, and the same page."""
    with db.session() as s:
        parts = RecordQuery(schema="cnt", search="1").parts(s, find_collection(s, "cntlab"))
        exact = counting.bounded_total(s, parts.all, at_least=0, budget_ms=60_000)
        assert exact == (1111, True)
        if db.engine.dialect.name != "sqlite":
            assert parts.match is None  # PostgreSQL's index answers the condition itself
            return
        assert parts.match == '"1"*'  # "1" begins more than eight numbers: a prefix
        with statements_sent(db.engine) as sent:
            assert counting.bounded_total(s, parts.others, at_least=0, budget_ms=60_000, search=parts.match) == exact
            assert counting.bounded_total(s, parts.others, at_least=7, budget_ms=0, search=parts.match) == (7, False)
        counts = [q for q in sent if "count(" in q]
        assert counts and all("JOIN records ON" in q and "IN (SELECT rowid" not in q for q in counts), counts
    with use(Limits(count_ms=60_000)), statements_sent(db.engine) as sent:
        got = search_page(db, "cnt", 0)
    assert (got["total"], got["total_exact"]) == (1111, True)
    assert any("records_fts MATCH" in q and "JOIN records ON" in q for q in sent) == (db.engine.dialect.name == "sqlite")


def test_the_record_picker_finds_the_newest_matches_by_walking_the_ids(db: Database, monkeypatch: pytest.MonkeyPatch,
                                                                        walks: list[object]) -> None:
    """``GET /records?search=`` (the reference picker, newest first) walks the ids from the
    newest on SQLite (880 -> 55 ms for a common word at 1,000,000 records); the same records as
    sorting every match, which answers when the walk runs out of time."""
    with db.session() as s:  # the numbers beginning with 1, newest first
        expected = [r.id for r in s.scalars(select(Record).order_by(Record.id.desc()))
                    if any(type(v) is int and str(v).startswith("1") for v in r.data.values())]
    assert len(expected) == 1111
    for schema in ("cnt", None):
        with db.session() as s:
            got = record_lists.search_records(s, limit=20, schema=schema, search="1", reachable_from=None)
        assert [r["id"] for r in got] == expected[:20]
    assert (len(walks), None in walks) == ((2, False) if db.engine.dialect.name == "sqlite" else (0, False))
    monkeypatch.setattr(record_lists, "WALK_MS", 0)  # out of time at once: every match sorted
    with db.session() as s:
        got = record_lists.search_records(s, limit=20, schema=None, search="1", reachable_from=None)
    assert [r["id"] for r in got] == expected[:20]


def test_a_short_walked_page_with_an_unfinished_count_falls_back_to_an_exact_page(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the index walk is SQLite's")
    monkeypatch.setattr(record_lists, "bounded_total", lambda *a, **k: (1000, False))  # cut short
    walked = []
    real_page = record_lists._page

    def sorted_all(*args: object, **kwargs: object) -> object:
        walked.append(True)
        return real_page(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(record_lists, "_page", sorted_all)
    got = page(db, sort=["n"], offset=N // 2 - 10, tree=EVEN)  # the last page: 10 records
    assert walked  # the walk found 10 and the count was cut short, so the page was sorted ...
    assert len(got["items"]) == 10  # type: ignore[arg-type]
    assert (got["total"], got["total_exact"]) == (N // 2, True)  # ... and counted whole


def test_few_matches_are_sorted_many_are_walked(db: Database, monkeypatch: pytest.MonkeyPatch,
                                               walks: list[object]) -> None:
    if db.engine.dialect.name != "sqlite":
        pytest.skip("the index walk is SQLite's")
    with use(Limits(count_ms=60_000)):  # counted exactly, however loaded the machine
        first = page(db, sort=["n"], tree=EVEN)
        assert not walks  # 1,250 matches, counted exactly: sorted
        monkeypatch.setattr(record_lists, "SORT_ALL_UP_TO", 1000)
        assert page(db, sort=["n"], tree=EVEN) == first and walks
    monkeypatch.setattr(record_lists, "bounded_total", lambda *a, **k: (1000, False))
    bounded = page(db, sort=["n"], tree=EVEN)
    assert bounded["items"] == first["items"] and (bounded["total"], bounded["total_exact"]) == (1000, False)


def test_a_plain_listing_counts_exactly_without_carrying_every_match(db: Database) -> None:
    with db.session() as s:
        every = list(s.scalars(select(Record.id).order_by(Record.id)))
    with statements_sent(db.engine) as statements:
        for offset, shown in ((0, 50), (1000, 50), (N - 10, 10), (N + 5, 0)):
            got = page(db, offset=offset)  # the schema only: no filter, no sort
            assert [r["id"] for r in got["items"]] == every[offset:offset + 50]  # type: ignore[attr-defined, index]
            assert (len(got["items"]), got["total"], got["total_exact"]) == (shown, N, True)  # type: ignore[arg-type]
    assert not [q for q in statements if " over (" in q.lower()]


def test_a_walk_along_the_ids_stops_at_its_budget(db: Database) -> None:
    """The walk of an unsorted page is stopped inside its statement when it runs out of
    ``WALK_MS`` (on PostgreSQL by the statement's timeout): None, and the transaction goes on."""
    with db.session() as s:
        where = [*conds(db, s, EVEN), slow(db.engine.dialect.name)]
        assert record_lists._walk_ids(s, where, limit=500, offset=0) is None  # some 1,000 ms for 500
        assert s.scalar(select(func.count()).select_from(Record)) == N
        assert record_lists._walk_ids(s, conds(db, s, EVEN), limit=3, offset=0) == list(
            s.scalars(select(Record.id).where(*conds(db, s, EVEN)).order_by(Record.id).limit(3)))
