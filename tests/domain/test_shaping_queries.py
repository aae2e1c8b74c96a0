"""Shaping records for a response costs a fixed number of statements, whatever the page size
(domain/records/shaping.py): child schemas are looked up once per schema, and records of a
schema without child schemas need no child count at all; a single record and all its ancestors
are read in one statement; a page finds its collection and schemas by names kept with the
catalog."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from benchbook.domain.catalog import shared
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema, update_schema
from benchbook.domain.context import Ctx
from benchbook.domain.errors import NotFound
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.shaping import LINEAGE_MOST, RecordShaper, single_record
from benchbook.persistence.db import Database
from benchbook.persistence.tables import Record, Schema
from tests.conftest import open_empty_database, statements_sent


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_empty_database(f"sqlite:///{tmp_path / 'shape.db'}")
    with database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "plotq", "fields": [{"name": "region", "type": "integer"}]})
        create_schema(ctx, {"name": "obsq", "parent": "plotq", "fields": [{"name": "n", "type": "integer"}]})
        create_collection(ctx, {"name": "shapelab", "schemas": ["plotq", "obsq"]})
        plots = bulk_create_records(ctx, "shapelab", [{"schema_name": "plotq", "data": {"region": i}}
                                                      for i in range(60)])
        bulk_create_records(ctx, "shapelab", [{"schema_name": "obsq", "parent_record_id": plots[i % 3],
                                               "data": {"n": i}} for i in range(30)])
    yield database
    database.engine.dispose()


def shaped(database: Database, schema: str, n: int, *, cold: bool = True) -> tuple[list[dict[str, Any]], list[str]]:
    """Shape ``n`` records of ``schema``; ``cold``: with nothing of the catalog kept from before."""
    if cold:
        shared.forget()
    with database.session() as s:
        schema_id = s.scalar(select(Schema.id).where(Schema.name == schema))
        records = list(s.scalars(select(Record).where(Record.schema_id == schema_id).order_by(Record.id).limit(n)))
        with statements_sent(database.engine) as statements:
            out = RecordShaper(s).shape(records, child_counts=True)
    return out, statements


def test_a_page_with_child_counts_costs_the_same_statements_for_5_or_50_records(db: Database) -> None:
    few, few_sql = shaped(db, "plotq", 5)
    many, many_sql = shaped(db, "plotq", 50)
    assert len(few_sql) == len(many_sql)
    assert [r["child_counts"] for r in many[:3]] == [{"obsq": 10}] * 3
    assert all(r["child_counts"] == {"obsq": 0} for r in many[3:])
    assert few == many[:5]


def test_a_second_page_reads_the_catalog_from_what_the_first_kept(db: Database) -> None:
    shaped(db, "plotq", 5)
    again, sql = shaped(db, "plotq", 5, cold=False)
    assert sum("catalog_token" in q for q in sql) == 1 and len(sql) == 2  # the token, the child count
    assert not [q for q in sql if "FROM schemas" in q or "FROM fields" in q or "FROM collections" in q]
    assert again[0]["collection"] == "shapelab"


def test_records_of_a_schema_without_child_schemas_are_not_counted(db: Database) -> None:
    leaves, sql = shaped(db, "obsq", 30)
    assert all(r["child_counts"] == {} for r in leaves)
    assert not [q for q in sql if "count(" in q.lower()]


def test_a_record_found_by_its_whole_id_costs_one_statement(db: Database) -> None:
    from benchbook.domain.records.rows import find_record

    with db.session() as s:
        rid = s.scalar(select(Record.id).limit(1))
        assert rid is not None
        with statements_sent(db.engine) as statements:
            assert find_record(s, rid.lower()).id == rid
            assert len(statements) == 1
            assert find_record(s, rid[-8:]).id == rid  # its short form: resolved, then read
            with pytest.raises(NotFound, match="not found"):
                find_record(s, "0" * 26)


def _chain_of_three(database: Database) -> dict[str, str]:
    """A plot, an obs under it and a tally under the obs; their ids by schema."""
    with database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=Path("."))
        create_schema(ctx, {"name": "tallyq", "parent": "obsq", "fields": [{"name": "k", "type": "integer"}]})
        s.execute(text("INSERT INTO collection_schemas (collection_id, schema_id, position) "
                       "SELECT c.id, s.id, 2 FROM collections c, schemas s "
                       "WHERE c.name = 'shapelab' AND s.name = 'tallyq'"))
        obs = s.scalar(select(Record).join(Schema, Schema.id == Record.schema_id).where(Schema.name == "obsq")
                       .order_by(Record.id).limit(1))
        assert obs is not None and obs.parent_id is not None
        tally = bulk_create_records(ctx, "shapelab", [{"schema_name": "tallyq", "parent_record_id": obs.id,
                                                       "data": {"k": 1}}])[0]
        return {"plotq": obs.parent_id, "obsq": obs.id, "tallyq": tally}


def test_a_single_record_and_its_ancestors_cost_one_statement_whatever_the_depth(db: Database) -> None:
    ids = _chain_of_three(db)
    with db.session() as s:
        for rid in ids.values():
            single_record(s, rid)  # the catalog kept
    costs = {}
    for schema, rid in ids.items():
        with db.session() as s, statements_sent(db.engine) as sql:
            body = single_record(s, rid)
        assert body["id"] == rid and body["schema_name"] == schema
        costs[schema] = len(sql)
        assert sum("catalog_token" in q for q in sql) == 1 and sum("WITH RECURSIVE" in q for q in sql) == 1
    # the leaf and the middle record cost the same; the middle one and the plot add their child count
    assert costs == {"plotq": 3, "obsq": 3, "tallyq": 2}
    with db.session() as s:
        tally = single_record(s, ids["tallyq"])
        plot_name = s.scalar(select(Record.natural_name).where(Record.id == ids["plotq"]))
    assert [(a["id"], a["schema_name"]) for a in tally["ancestors"]] == [(ids["plotq"], "plotq"), (ids["obsq"], "obsq")]
    assert tally["ancestors"][0]["natural_name"] == plot_name and tally["deleted_above"] == []
    assert tally["parent_record_id"] == ids["obsq"] and tally["child_counts"] == {}


def test_a_single_record_shows_the_deleted_records_above_it(db: Database) -> None:
    ids = _chain_of_three(db)
    with db.session() as s, s.begin():
        s.execute(text("UPDATE records SET deleted_at = '2026-01-02 03:04:05.000000' WHERE id = :id"),
                  {"id": ids["plotq"]})
    with db.session() as s:
        live = single_record(s, ids["tallyq"])
        plot = single_record(s, ids["plotq"][-10:].lower())  # a deleted record, by a short id
        with pytest.raises(NotFound, match="not found"):
            single_record(s, "0" * 26)
    assert [a["id"] for a in live["deleted_above"]] == [ids["plotq"]]
    assert plot["deleted_at"] is not None and plot["deleted_above"] is None and plot["ancestors"] == []


def test_a_cycle_of_parents_in_a_damaged_database_ends(db: Database) -> None:
    ids = _chain_of_three(db)
    with db.session() as s, s.begin():
        s.execute(text("UPDATE records SET parent_id = :tally WHERE id = :plot"),
                  {"tally": ids["tallyq"], "plot": ids["plotq"]})
    with db.session() as s:
        body = single_record(s, ids["tallyq"])
    assert len(body["ancestors"]) == LINEAGE_MOST


CATALOG_TABLES = ("FROM schemas", "FROM collections", "FROM collection_schemas", "FROM fields", "JOIN collection_schemas")


def _page(database: Database, schema: str) -> tuple[dict[str, Any], list[str]]:
    tree = {"and": [{"field": "n", "op": "gte", "value": 0}, {"field": "region", "op": "lt", "value": 2,
                                                               "schema": "plotq"}]}
    with database.session() as s, statements_sent(database.engine) as sql:
        page = list_page(s, "shapelab", RecordQuery(schema=schema, filter=json.dumps(tree), sort=["n"]),
                         limit=5, offset=0)
    return page, sql


def test_a_page_names_its_collection_and_schemas_from_what_an_earlier_request_kept(db: Database) -> None:
    shared.forget()
    first, cold = _page(db, "obsq")
    again, warm = _page(db, "obsq")
    assert first == again and first["total"] == 20  # the obs under plots of region 0 and 1
    assert [q for q in cold if any(t in q for t in CATALOG_TABLES)]
    assert not [q for q in warm if any(t in q for t in CATALOG_TABLES)], warm
    assert sum("catalog_token" in q for q in warm) == 1


def test_a_renamed_schema_is_found_by_its_new_name_at_once(db: Database) -> None:
    _page(db, "obsq")
    with db.session() as s, s.begin():
        update_schema(Ctx(session=s, actor="tester", files_dir=Path(".")), "obsq", {"rename": "obsr"})
    renamed, _ = _page(db, "obsr")
    assert renamed["total"] == 20 and {r["schema_name"] for r in renamed["items"]} == {"obsr"}
    with pytest.raises(NotFound, match="unknown schema 'obsq'"):
        _page(db, "obsq")
