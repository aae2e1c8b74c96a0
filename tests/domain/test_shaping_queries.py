"""Shaping records for a response costs a fixed number of statements, whatever the page size
(domain/records/shaping.py): child schemas are looked up once per schema, and records of a
schema without child schemas need no child count at all."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from benchbook.domain.catalog import shared
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.shaping import RecordShaper
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
    from benchbook.domain.errors import NotFound
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
