"""Filters through references (issue 35 item 3), run on demand (never in the tests).

    python bench/reference_filters.py [--records 100000] [--repeat 15] [--keep DIR [--reuse]]
                                      [--postgres URL]

The data, flights as nycflights13 has them: 16 ``airline`` records (``code``, ``name``), 3,000
``plane`` records (``tailnum``, ``manufacturer``, ``year``) and N ``flight`` records, each
referencing its ``carrier`` and its plane (``tailnum``) and holding ``arr_delay``, plus plain
copies of the airline's name and the plane's manufacturer (``carrier_name``, ``maker``), so that
the same question can be asked both ways in the same database. Airlines are drawn with skewed
shares (the first one about a sixth of the flights), manufacturers half ``BOEING``.

Prints, each the median of ``--repeat`` runs in process (``list_page`` called from this
script, a page of 50 in id order as the list's first page):

- the first page of the 2-leaf filter through references
  (``carrier.name = <first airline>`` AND ``tailnum.manufacturer = BOEING``) and of the same
  filter on the plain copies (``carrier_name``, ``maker``), and their ratio;
- the same two with a third leaf (``arr_delay > 60``) and sorted by ``arr_delay`` (a sorted
  page), and their ratio;
- the 1-leaf filter ``carrier.name`` sorted by ``tailnum.year`` (a sort through a reference)
  beside the plain sort by ``arr_delay``, for scale.

The target (issue 35): the 2-leaf reference filter's first page under 100 ms on SQLite at
1,000,000 records (``--records 1000000``); not judged at other sizes.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from records import postgres_database, project_on, slices  # bench/records.py

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries as audit
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.persistence.db import open_database
from benchbook.settings.config import Project

AT = 1_000_000
TARGET_MS = 100.0
PLANES = 3000
AIRLINES = [(f"A{i}", f"Airline {chr(65 + i)} Inc.") for i in range(16)]
MAKERS = ["BOEING", "BOEING", "AIRBUS", "EMBRAER", "BOMBARDIER", "BOEING"]
SCHEMAS: list[dict[str, Any]] = [
    {"name": "airline", "display_template": "{code}",
     "fields": [{"name": "code", "type": "string"}, {"name": "name", "type": "string"}]},
    {"name": "plane", "display_template": "{tailnum}",
     "fields": [{"name": "tailnum", "type": "string"}, {"name": "manufacturer", "type": "string"},
                {"name": "year", "type": "integer"}]},
    {"name": "flight", "fields": [
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}},
        {"name": "arr_delay", "type": "integer"},
        {"name": "carrier_name", "type": "string"}, {"name": "maker", "type": "string"}]},
]


def leaf(field: str, op: str, value: Any) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value}


FIRST = AIRLINES[0][1]
QUERIES: list[tuple[str, RecordQuery, RecordQuery]] = [  # (what, through references, on plain fields)
    ("2-leaf filter, first page in id order",
     RecordQuery(schema="flight", filter=json.dumps({"and": [leaf("carrier.name", "eq", FIRST),
                                                             leaf("tailnum.manufacturer", "eq", "BOEING")]})),
     RecordQuery(schema="flight", filter=json.dumps({"and": [leaf("carrier_name", "eq", FIRST),
                                                             leaf("maker", "eq", "BOEING")]}))),
    ("3-leaf filter sorted by arr_delay:desc",
     RecordQuery(schema="flight", sort=["arr_delay:desc"], filter=json.dumps({"and": [
         leaf("carrier.name", "eq", FIRST), leaf("tailnum.manufacturer", "eq", "BOEING"),
         leaf("arr_delay", "gt", 60)]})),
     RecordQuery(schema="flight", sort=["arr_delay:desc"], filter=json.dumps({"and": [
         leaf("carrier_name", "eq", FIRST), leaf("maker", "eq", "BOEING"), leaf("arr_delay", "gt", 60)]}))),
    ("1-leaf filter sorted through a reference (tailnum.year) vs by arr_delay",
     RecordQuery(schema="flight", sort=["tailnum.year"], filter=json.dumps(leaf("carrier.name", "eq", FIRST))),
     RecordQuery(schema="flight", sort=["arr_delay"], filter=json.dumps(leaf("carrier_name", "eq", FIRST)))),
]


def airline_of(rnd: random.Random) -> int:
    """An airline index, skewed: the first about a sixth of the flights."""
    return 0 if rnd.random() < 0.17 else rnd.randrange(16)


def build(project: Project, n: int, say: Callable[[str], None]) -> None:
    """The airlines, planes and ``n`` flights, through the bulk path (history on)."""
    db = open_database(project.database_url)
    rnd = random.Random(35)
    with db.session() as s:
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        with s.begin():
            for schema in SCHEMAS:
                create_schema(ctx, schema)
            create_collection(ctx, {"name": "nyc", "schemas": ["airline", "plane", "flight"]})
        began = time.perf_counter()
        with s.begin():
            ctx.batch_id = audit.open_batch(ctx, "import", label="bench").id
            airlines = bulk_create_records(ctx, "nyc", [{"schema_name": "airline", "data": {"code": c, "name": nm}}
                                                        for c, nm in AIRLINES])
            makers = [MAKERS[i % len(MAKERS)] for i in range(PLANES)]
            planes = bulk_create_records(ctx, "nyc", [{"schema_name": "plane", "data": {
                "tailnum": f"N{i:05d}", "manufacturer": makers[i], "year": 1960 + i % 55}} for i in range(PLANES)])

            def flights(a: int, b: int) -> Iterator[dict[str, Any]]:
                for _ in range(a, b):
                    carrier, plane = airline_of(rnd), rnd.randrange(PLANES)
                    yield {"schema_name": "flight", "data": {
                        "carrier": airlines[carrier], "tailnum": planes[plane], "arr_delay": rnd.randrange(-60, 240),
                        "carrier_name": AIRLINES[carrier][1], "maker": makers[plane]}}
            for a, b in slices(n):
                bulk_create_records(ctx, "nyc", list(flights(a, b)))
                say(f"  {b:,} / {n:,} flights ({b / (time.perf_counter() - began):,.0f} records/s)")
    db.engine.dispose()


def timed(project: Project, query: RecordQuery, repeat: int) -> tuple[float, int, bool]:
    """(median ms, total, total exact) of the first page of 50 of ``query``."""
    db = open_database(project.database_url)
    times: list[float] = []
    page: dict[str, Any] = {}
    try:
        for _ in range(repeat + 1):  # the first one warms the caches and is not counted
            with db.session() as s:
                began = time.perf_counter()
                page = list_page(s, "nyc", query, limit=50, offset=0)
                times.append((time.perf_counter() - began) * 1000)
    finally:
        db.engine.dispose()
    assert len(page["items"]) == 50, "the page should be full"
    return statistics.median(times[1:]), page["total"], page["total_exact"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="flights (default 100,000)")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--keep", type=Path, help="build the project in DIR/project and keep it")
    parser.add_argument("--reuse", action="store_true", help="with --keep: use the project already there")
    parser.add_argument("--postgres", help="a PostgreSQL server URL: the project's database is a fresh one there")
    args = parser.parse_args()
    n = args.records
    with tempfile.TemporaryDirectory() as tmp:
        folder = (args.keep or Path(tmp)) / "project"
        if args.postgres:
            with postgres_database(args.postgres, "bench_refs") as url:
                run(project_on(folder, {"database": {"url": url}}), n, args.repeat, build_it=True, sqlite=False)
        elif args.reuse and folder.exists():
            run(Project.locate(str(folder)), n, args.repeat, build_it=False, sqlite=True)
        else:
            folder.mkdir(parents=True, exist_ok=args.keep is not None)
            run(project_on(folder, {}), n, args.repeat, build_it=True, sqlite=True)


def run(project: Project, n: int, repeat: int, *, build_it: bool, sqlite: bool) -> None:
    backend = "SQLite" if sqlite else "PostgreSQL"
    if build_it:
        print(f"building {n:,} flights on {backend} ...", flush=True)
        began = time.perf_counter()
        build(project, n, lambda line: print(line, flush=True))
        print(f"built in {time.perf_counter() - began:,.0f} s")
    print(f"\nfirst page of 50, median of {repeat} (in process, {backend}, {n:,} flights):")
    for i, (what, through, plain) in enumerate(QUERIES):
        ms_ref, total_ref, exact_ref = timed(project, through, repeat)
        ms_plain, total_plain, exact_plain = timed(project, plain, repeat)
        if i < 2 and exact_ref and exact_plain:
            assert total_ref == total_plain, (total_ref, total_plain)
        print(f"- {what}\n    through references {ms_ref:8.1f} ms  (total {total_ref:,}{'' if exact_ref else '+'})"
              f"\n    plain fields       {ms_plain:8.1f} ms  (total {total_plain:,}{'' if exact_plain else '+'})"
              f"\n    ratio {ms_ref / ms_plain:.2f}")
        if i == 0 and sqlite:
            judged = ("met" if ms_ref < TARGET_MS else "missed") if n == AT else "not judged at this size"
            print(f"    target < {TARGET_MS:.0f} ms at {AT:,} on SQLite: {judged}")


if __name__ == "__main__":
    main()
