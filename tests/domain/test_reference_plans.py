"""Filters through references (docs/filters.md, *Through references*) read ``record_links`` by
its indexes, never the whole table: by target (the records pointing at the matching targets)
or, when those are many, by each listed record's own links (the primary key, source first)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records import paths
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.persistence.db import Database
from benchbook.settings.limits import Limits, use
from tests.domain.data_sets import DataSets
from tests.domain.test_query_indexes import plans_of


def flights(ctx: Ctx) -> None:
    """Collection ``nycx``: 4 airlines, 40 planes (half BOEING), 2,000 flights referencing both."""
    create_schema(ctx, {"name": "airlinex", "fields": [{"name": "name", "type": "string"}]})
    create_schema(ctx, {"name": "planex", "fields": [{"name": "maker", "type": "string"}]})
    create_schema(ctx, {"name": "flightx", "fields": [
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airlinex"}},
        {"name": "tailnum", "type": "reference", "restrictions": {"schema": "planex"}},
        {"name": "delay", "type": "integer"}]})
    create_collection(ctx, {"name": "nycx", "schemas": ["airlinex", "planex", "flightx"]})
    airlines = bulk_create_records(ctx, "nycx", [{"schema_name": "airlinex", "data": {"name": f"Air {i}"}}
                                                 for i in range(4)])
    planes = bulk_create_records(ctx, "nycx", [{"schema_name": "planex", "data": {"maker": ["BOEING", "AIRBUS"][i % 2]}}
                                               for i in range(40)])
    bulk_create_records(ctx, "nycx", [{"schema_name": "flightx", "data": {
        "carrier": airlines[i % 4], "tailnum": planes[i // 4 % 40], "delay": i % 97}} for i in range(2000)])


@pytest.fixture
def db(data_sets: DataSets) -> Iterator[Database]:
    with data_sets.shared(flights) as database:
        yield database


TREE = {"and": [{"field": "carrier.name", "op": "eq", "value": "Air 1"},
                {"field": "tailnum.maker", "op": "ne", "value": "AIRBUS"}]}


@pytest.mark.parametrize("sources", [paths.SOURCE_IDS, 0], ids=["referrers listed", "links per record"])
def test_a_reference_filter_reads_the_links_by_their_indexes(db: Database, sources: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "SOURCE_IDS", sources)
    query = RecordQuery(schema="flightx", filter=json.dumps(TREE))
    with use(Limits(count_ms=60_000)):
        found = plans_of(db, lambda s: list_page(s, "nycx", query, limit=50, offset=0))
        with db.session() as s:
            page: dict[str, Any] = list_page(s, "nycx", query, limit=50, offset=0)
    assert page["total"] == 250 and page["total_exact"]  # Air 1: flights 4k + 1, of plane k % 40: even ones BOEING
    assert found, "no count was run"
    for plan in found:
        assert "record_links" in plan
        if db.engine.dialect.name == "sqlite":
            assert "SCAN record_links" not in plan, plan
            assert ("ix_record_links_target" in plan) == (sources > 0), plan
            assert ("sqlite_autoindex_record_links_1 (source_id=? AND field_id=?)" in plan) == (sources == 0), plan
        else:  # plans_of prices sequential scans out: whichever index the planner takes, it has one
            assert "Seq Scan on record_links" not in plan, plan
            assert "ix_record_links_target" in plan or "pk_record_links" in plan, plan
