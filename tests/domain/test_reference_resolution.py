"""``records.references``: typed reference values resolved set-based (issue 35 item 1), on both
backends: numeric keys compare as stored, each distinct value is looked up once per resolver,
a chunk of values costs one query, and the set-based create resolves keys for all its rows."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.lookup import SchemaCache, find_collection
from benchbook.domain.catalog.schemas import create_schema, set_unique_keys
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import RowProblems, bulk_create_records
from benchbook.domain.records.references import AMBIGUOUS, UNKNOWN, ReferenceResolver, Unresolved
from benchbook.domain.records.writes import create_record
from benchbook.persistence.db import Database
from benchbook.persistence.tables import Record
from tests.conftest import statements_sent


@pytest.fixture
def db(empty_database: Database, tmp_path: Path) -> Iterator[Database]:
    """station (integer key ``code``, named ``{name}``) and reading (a reference to a station)
    in ``lab``; 40 stations, two of them named alike."""
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "station", "display_template": "{name}", "fields": [
            {"name": "name", "type": "string"}, {"name": "code", "type": "integer"}]})
        set_unique_keys(ctx, "station", [["code"]])
        create_schema(ctx, {"name": "reading", "fields": [
            {"name": "value", "type": "float"},
            {"name": "station", "type": "reference", "restrictions": {"schema": "station"}}]})
        create_collection(ctx, {"name": "lab", "schemas": ["station", "reading"]})
        bulk_create_records(ctx, "lab", [{"schema_name": "station", "data": {"name": f"S{i}", "code": 100 + i}}
                                         for i in range(40)])
        create_record(ctx, "lab", {"schema_name": "station", "data": {"name": "S1", "code": 999}})
    yield empty_database


def test_a_resolver_answers_a_set_of_values_with_one_query_and_remembers(db: Database) -> None:
    with db.session() as s:
        lab = find_collection(s, "lab")
        resolver = ReferenceResolver(s, lab, SchemaCache(s))
        field = SchemaCache(s).schema_named("reading").by_name["station"]
        ids = {r.natural_name: r.id for r in s.query(Record) if r.natural_name != "S1"}
        resolver.reach()
        with statements_sent(db.engine) as sent:
            answers = resolver.resolve(field, ["105", "107.0", "S3", "S1", "nope"])
        assert len(sent) == 1  # keys and names together; "nope" cannot be an id part
        assert answers["105"] == ids["S5"] and answers["107.0"] == ids["S7"] and answers["S3"] == ids["S3"]
        assert isinstance(answers["S1"], Unresolved) and answers["S1"].kind == AMBIGUOUS
        assert answers["S1"].matches == 2
        assert isinstance(answers["nope"], Unresolved) and answers["nope"].kind == UNKNOWN
        with statements_sent(db.engine) as sent:
            again = resolver.resolve(field, ["105", "S3", "nope", ids["S9"]])
        assert sent == [] and again[ids["S9"]] == ids["S9"]


def test_the_bulk_create_resolves_keys_and_reports_the_unknown(db: Database, tmp_path: Path) -> None:
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        rows = [{"schema_name": "reading", "data": {"value": i, "station": str(100 + i % 40)}} for i in range(2500)]
        made = bulk_create_records(ctx, "lab", rows)
        stations = {r.id: r.data for r in s.query(Record).filter(Record.id.in_(made[:80]))}
        code = SchemaCache(s).schema_named("station").by_name["code"].id
        value = SchemaCache(s).schema_named("reading").by_name["value"].id
        station = SchemaCache(s).schema_named("reading").by_name["station"].id
        targets = {r.id: r.data[code] for r in s.query(Record).filter(Record.natural_name.like("S%"))}
        assert all(targets[d[station]] == 100 + int(d[value]) % 40 for d in stations.values())
        s.rollback()
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        with pytest.raises(RowProblems) as caught:
            bulk_create_records(ctx, "lab", [{"schema_name": "reading", "data": {"station": "S1"}},
                                             {"schema_name": "reading", "data": {"station": "77"}}])
        assert [i for i, _ in caught.value.problems] == [0, 1]
        assert "2 'station' records within reach have the natural name 'S1'" in caught.value.problems[0][1]
        assert "no 'station' record within reach has code, natural name or id '77'" in caught.value.problems[1][1]
