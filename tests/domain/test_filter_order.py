"""The conditions of a record query are written cheapest first (docs/decisions.md, *Evaluation
order*): SQLite tests a row's remaining conditions in the order written and the first that reads
a stored value parses the row's JSON, so the schema test and ancestor leaves (``parent_id IN``)
come before the record-size guard and the leaves that read the record's values. The order
changes no result: the same filter written in any order matches the same records."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.lookup import find_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records import filters
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.queries import RecordQuery
from benchbook.persistence.tables import Record
from tests.conftest import open_empty_database

LEAVES = [{"field": "n", "op": "gt", "value": 3},
          {"field": "region", "op": "eq", "value": 1, "schema": "plotx"},
          {"field": "label", "op": "eq", "value": "a"},
          {"field": "region", "op": "ne", "value": 2, "schema": "plotx"}]


@pytest.mark.parametrize("inline", [filters.ANCESTOR_IDS, 0], ids=["ids as values", "ids by subquery"])
def test_ancestor_leaves_and_the_schema_come_first_and_change_nothing(tmp_path: Path, inline: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Also: the matching ancestors' ids given as values (up to ANCESTOR_IDS) or found by a
    subquery select the same records."""
    monkeypatch.setattr(filters, "ANCESTOR_IDS", inline)
    db = open_empty_database(f"sqlite:///{tmp_path / 'order.db'}")
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "plotx", "fields": [{"name": "region", "type": "integer"}]})
        create_schema(ctx, {"name": "obsx", "parent": "plotx",
                            "fields": [{"name": "n", "type": "integer"}, {"name": "label", "type": "string"}]})
        create_collection(ctx, {"name": "orderlab", "schemas": ["plotx", "obsx"]})
        plots = bulk_create_records(ctx, "orderlab", [{"schema_name": "plotx", "data": {"region": i % 3}}
                                                      for i in range(6)])
        bulk_create_records(ctx, "orderlab", [
            {"schema_name": "obsx", "parent_record_id": plots[i % 6],
             "data": {"n": i % 7, "label": "ab"[i % 2]}} for i in range(120)])
    answers = set()
    with db.session() as s:
        collection = find_collection(s, "orderlab")
        for order in itertools.permutations(LEAVES):
            query = RecordQuery(schema="obsx", filter=json.dumps({"and": list(order)}))
            statement = select(Record.id).where(*query.conditions(s, collection))
            sql = str(statement.compile(dialect=s.get_bind().dialect, compile_kwargs={"literal_binds": True}))
            where = sql.split("WHERE", 1)[1]
            first_value_read = min(where.index("length("), where.index("JSON_EXTRACT(records.data"))
            assert where.index("records.schema_id =") < first_value_read
            assert where.index("records.parent_id IN") < first_value_read
            assert where.index("NOT (records.parent_id IS NOT NULL") < first_value_read
            answers.add(frozenset(s.scalars(statement)))
    assert len(answers) == 1 and 0 < len(next(iter(answers))) < 120
    assert (" IN (SELECT " in sql) == (inline == 0)
    db.engine.dispose()
