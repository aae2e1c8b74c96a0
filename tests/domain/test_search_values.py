"""Search finds records by their values and natural name only (migration 0013_search_values on
SQLite; PostgreSQL's index always did): not by field ids, not by booleans; the search index
follows creates, edits and purges; a query word with an underscore is two words; a database
written before 0013 searches the same once upgraded."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import event, select, text
from sqlalchemy.orm import sessionmaker

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history.restore import purge_record
from benchbook.domain.records import search
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.search import search_condition, words
from benchbook.domain.records.writes import create_record, delete_records, update_record
from benchbook.persistence.db import Database, alembic_config, make_engine, open_database
from benchbook.persistence.tables import Field, Record
from benchbook.settings.limits import Limits, use

NOTE = {"name": "note", "display_template": "{title}", "fields": [
    {"name": "title", "type": "string"}, {"name": "n", "type": "integer"}, {"name": "x", "type": "float"},
    {"name": "done", "type": "boolean"}, {"name": "tags", "type": "tags"}]}


def make(db: Database, tmp_path: Path) -> dict[str, str]:
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, NOTE)
        create_collection(ctx, {"name": "lab", "schemas": ["note"]})
        ids = bulk_create_records(ctx, "lab", [
            {"schema_name": "note", "data": {"title": "Kestrel survey", "n": 4711, "done": True, "tags": ["raptor"]}},
            {"schema_name": "note", "data": {"title": "true story", "x": 2.5, "done": False}},
        ])
        one = create_record(ctx, "lab", {"schema_name": "note",
                                         "data": {"title": "snake_case word", "tags": ["heron", "ibis"]}})
    return {"kestrel": ids[0], "true": ids[1], "snake": one.id}


def found(db: Database, query: str) -> set[str]:
    with db.session() as s:
        condition: Any = search_condition(s, query)
        return set(s.scalars(select(Record.id).where(condition)))


def test_values_and_names_are_found_field_ids_and_booleans_are_not(empty_database: Database,
                                                                  tmp_path: Path) -> None:
    ids = make(empty_database, tmp_path)
    assert found(empty_database, "kestrel") == {ids["kestrel"]}
    assert found(empty_database, "4711") == {ids["kestrel"]}
    assert found(empty_database, "2.5") == {ids["true"]}  # PostgreSQL reads 2.5 as one word
    assert found(empty_database, "2") == {ids["true"]}  # a prefix of it
    assert found(empty_database, "2.6") == set()
    assert found(empty_database, "raptor") == {ids["kestrel"]}
    assert found(empty_database, "ibi") == {ids["snake"]}  # a prefix of a list item
    assert found(empty_database, "true") == {ids["true"]}  # the title, not the boolean
    assert found(empty_database, "false") == set()
    assert found(empty_database, "snake_case") == {ids["snake"]}
    assert found(empty_database, "case snake") == {ids["snake"]}
    assert found(empty_database, "it's") == set()  # a quote in a query word is no syntax error
    assert found(empty_database, "back\\slash") == set()
    with empty_database.session() as s:
        field_ids = list(s.scalars(select(Field.id)))
    for fid in field_ids:
        assert found(empty_database, fid[:8]) == set()
        assert found(empty_database, fid) == set()


def test_the_index_follows_edits_and_purges(empty_database: Database, tmp_path: Path) -> None:
    ids = make(empty_database, tmp_path)
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        update_record(ctx, ids["kestrel"], {"data": {"title": "Merlin survey", "tags": None}})
    assert found(empty_database, "kestrel") == set()
    assert found(empty_database, "raptor") == set()
    assert found(empty_database, "merlin survey") == {ids["kestrel"]}
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        delete_records(ctx, [s.get(Record, ids["snake"])], force=True)
        purge_record(ctx, ids["snake"])
    assert found(empty_database, "heron") == set()
    if empty_database.engine.dialect.name == "sqlite":
        with empty_database.engine.connect() as conn:  # nothing left of the purged record
            assert conn.scalar(text("SELECT count(*) FROM records_fts WHERE records_fts MATCH 'heron'")) == 0
            for word, count in (("survey", 1), ("story", 1), ("kestrel", 0), ("ibis", 0)):
                assert conn.scalar(text(f"SELECT count(*) FROM records_fts WHERE records_fts MATCH '{word}'")) == count
            # raises "database disk image is malformed" when the index and the rows disagree
            conn.execute(text("INSERT INTO records_fts(records_fts, rank) VALUES ('integrity-check', 0)"))


def test_query_words_are_tokens() -> None:
    assert words("Snake_case, 2.5 Ünïcode") == ["snake", "case", "2", "5", "ünïcode"]


def test_a_database_from_before_0013_searches_values_once_upgraded(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    db = open_database(url)
    try:
        ids = make(db, tmp_path)
        with db.session() as s:
            fid = str(s.scalars(select(Field.id)).first())
    finally:
        db.engine.dispose()
    command.downgrade(alembic_config(url), "0012_catalog_token")
    engine = make_engine(url)  # not upgraded: the index as 0002 made it
    try:
        assert found(Database(engine, sessionmaker(engine)), fid[:8]) == set(ids.values())  # field ids were words
    finally:
        engine.dispose()
    db = open_database(url)  # upgrades through 0013
    try:
        assert found(db, fid[:8]) == set()
        assert found(db, "raptor") == {ids["kestrel"]}
        assert found(db, "heron") == {ids["snake"]}
    finally:
        db.engine.dispose()


@pytest.mark.parametrize("query", ["", "  ", "___", "-"])
def test_a_query_without_words_finds_nothing_to_filter_on(empty_database: Database, query: str) -> None:
    with empty_database.session() as s:
        assert search_condition(s, query) is None


def test_a_search_page_finds_its_matches_through_the_search_index(empty_database: Database, tmp_path: Path) -> None:
    """A search page (id order) counts and reads its matches from the search index, not by
    walking every record in id order: PostgreSQL's planner, given ``ORDER BY id LIMIT`` and a
    rare word it estimates at 0.5 % of the records, walked all 1,000,000 of them (10.8 s,
    docs/performance.md). Sequential scans and sorts are priced out, as ``LIMIT`` prices them at
    that size: the matches must still come from the search index."""
    if empty_database.engine.dialect.name != "postgresql":
        pytest.skip("the plan is PostgreSQL's (SQLite reads the FTS table first)")
    make(empty_database, tmp_path)
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        bulk_create_records(ctx, "lab", [{"schema_name": "note", "data": {"title": "quixotic" if i % 100 == 7 else "plain",
                                                                           "n": i}} for i in range(600)])
        s.execute(text("ANALYZE records"))
    seen: list[tuple[str, Any]] = []

    def keep(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        seen.append((statement, parameters))

    event.listen(empty_database.engine, "before_cursor_execute", keep)
    try:
        with empty_database.session() as s, use(Limits(count_ms=60_000)):
            page = list_page(s, "lab", RecordQuery(search="quixotic"), limit=2, offset=0)
    finally:
        event.remove(empty_database.engine, "before_cursor_execute", keep)
    assert (len(page["items"]), page["total"], page["total_exact"]) == (2, 6, True)
    reads = [(st, p) for st, p in seen if "@@" in st and ("count(*)" in st or "ORDER BY" in st)]
    assert len(reads) == 2, seen  # the count, then the page
    with empty_database.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        cur = raw.cursor()
        cur.execute("SET enable_seqscan = off")
        cur.execute("SET enable_sort = off")  # what LIMIT makes of a sort at that size
        for statement, parameters in reads:
            cur.execute("EXPLAIN " + statement, parameters)
            plan = "\n".join(str(row[0]) for row in cur.fetchall())
            assert "ix_records_search" in plan and "pk_records" not in plan, (statement, plan)
        raw.rollback()


def test_a_word_beginning_few_words_is_asked_for_as_those_words(empty_database: Database, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """On SQLite a query word beginning at most ``SPELLED_OUT_UP_TO`` words of the search table
    is asked for as those words (FTS5 merges a prefix's matches whole before the first comes
    out); more, or a word the tokenizer folds, stay prefixes. Both forms find the same records,
    and a purged record's word finds nothing."""
    if empty_database.engine.dialect.name != "sqlite":
        pytest.skip("the search table's vocabulary is SQLite's (PostgreSQL reads prefixes from its GIN index)")
    ids = make(empty_database, tmp_path)
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        more = bulk_create_records(ctx, "lab", [{"schema_name": "note", "data": {"title": t}} for t in (
            "alpine meadow", "alpha site", "Alpaca pen", "Café terrace", "alp", "alps 4711")])
    alpine, alpha, alpaca, cafe, alp, alps = more
    queries = {"alp": {alpine, alpha, alpaca, alp, alps}, "alpi": {alpine}, "alpha si": {alpha}, "alq": set(),
               "47": {ids["kestrel"], alps}, "caf": {cafe}, "café": {cafe}, "cafe": {cafe}, "kestrel": {ids["kestrel"]}}
    assert {q: found(empty_database, q) for q in queries} == queries
    with empty_database.session() as s:
        assert search.fts_operand(s, "alp") == '("alp" OR "alpaca" OR "alpha" OR "alpine" OR "alps")'
        assert search.fts_operand(s, "alq") == '"alq"'  # begins no word: matches none
        assert search.fts_operand(s, "café") == '"café"*'  # folded by the tokenizer: a prefix
        monkeypatch.setattr(search, "SPELLED_OUT_UP_TO", 4)
        assert search.fts_operand(s, "alp") == '"alp"*'  # begins five words: a prefix
    assert {q: found(empty_database, q) for q in queries} == queries
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        delete_records(ctx, [s.get(Record, alpine)], force=True)
        purge_record(ctx, alpine)
    assert found(empty_database, "alpi") == set()
    monkeypatch.setattr(search, "SPELLED_OUT_UP_TO", 8)
    assert found(empty_database, "alpi") == set() and found(empty_database, "alp") == {alpha, alpaca, alp, alps}
