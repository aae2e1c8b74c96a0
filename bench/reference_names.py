"""References read by name (issue 35 item 2), run on demand (never in the tests).

    python bench/reference_names.py [--records 100000] [--repeat 9] [--postgres URL]

The data: 16 ``airline`` records (``code``, template ``{code}``) and N flights of each of two
schemas with the same values, a ``carrier`` reference and a ``flight`` number (airlines drawn
with skewed shares, the first about a sixth of the flights):

- ``flight``, named ``{carrier}-{flight}``: its names show the airline's name;
- ``leg``, named ``{flight}`` and holding ``alias``, a plain word per airline (``X0`` …).

Prints, each measured in this run:

- the import (bulk path, history on) of the N flights against the N legs: records/s and the
  ratio (the cost of naming rows from their targets' names);
- renaming the first airline (its flights' names follow, each with a history entry): ms in all
  and per renamed flight, against an edit of an airline no template shows (the bare edit);
- a search of a word only the airline's name holds (``leg``: ``A0``, through the reference)
  against a word of the same selectivity among the records' own values (``X0``): first page of
  50 and the count, median of ``--repeat``, and the ratios.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from records import fresh_project, slices  # bench/records.py

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries as audit
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import list_page
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.writes import update_record
from benchbook.persistence.db import open_database
from benchbook.settings.config import Project

AIRLINES = [f"A{i}" for i in range(16)]
SCHEMAS: list[dict[str, Any]] = [
    {"name": "airline", "display_template": "{code}", "fields": [{"name": "code", "type": "string"}]},
    {"name": "other", "display_template": "{code}", "fields": [{"name": "code", "type": "string"}]},
    {"name": "flight", "display_template": "{carrier}-{flight}", "fields": [
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "flight", "type": "integer"}]},
    {"name": "leg", "display_template": "{flight}", "fields": [
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "flight", "type": "integer"}, {"name": "alias", "type": "string"}]},
]


def airline_of(rnd: random.Random) -> int:
    return 0 if rnd.random() < 0.17 else rnd.randrange(16)


def build(project: Project, n: int, say: Callable[[str], None]) -> tuple[dict[str, float], list[str], str]:
    """Import the airlines and the ``n`` flights and legs; ``({schema: records/s}, airline ids,
    the id of an airline no template shows)``."""
    db = open_database(project.database_url)
    rnd = random.Random(35)
    with db.session() as s:
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        with s.begin():
            for schema in SCHEMAS:
                create_schema(ctx, schema)
            create_collection(ctx, {"name": "nyc", "schemas": ["airline", "other", "flight", "leg"]})
            ctx.batch_id = audit.open_batch(ctx, "import", label="bench").id
            airlines = bulk_create_records(ctx, "nyc", [{"schema_name": "airline", "data": {"code": c}}
                                                        for c in AIRLINES])
            [other] = bulk_create_records(ctx, "nyc", [{"schema_name": "other", "data": {"code": "O"}}])
        drawn = [airline_of(rnd) for _ in range(n)]

        def rows(schema: str, a: int, b: int) -> Iterator[dict[str, Any]]:
            for i in range(a, b):
                data: dict[str, Any] = {"carrier": airlines[drawn[i]], "flight": i}
                if schema == "leg":
                    data["alias"] = f"X{drawn[i]}"
                yield {"schema_name": schema, "data": data}
        spent = {"leg": 0.0, "flight": 0.0}
        for a, b in slices(n):  # the two in turns, so that neither meets a larger database than the other
            for schema in ("leg", "flight"):
                began = time.perf_counter()
                with s.begin():
                    ctx.batch_id = audit.open_batch(ctx, "import", label=schema).id
                    bulk_create_records(ctx, "nyc", list(rows(schema, a, b)))
                spent[schema] += time.perf_counter() - began
        rates = {schema: n / seconds for schema, seconds in spent.items()}
        say(f"  {n:,} legs: {rates['leg']:,.0f} records/s; {n:,} flights: {rates['flight']:,.0f} records/s")
    db.engine.dispose()
    return rates, airlines, other


def edit_ms(project: Project, record_id: str, code: str) -> float:
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
            began = time.perf_counter()
            with s.begin():
                update_record(ctx, record_id, {"data": {"code": code}})
            return (time.perf_counter() - began) * 1000
    finally:
        db.engine.dispose()


def timed(project: Project, query: RecordQuery, repeat: int, limit: int) -> tuple[float, int]:
    db = open_database(project.database_url)
    times: list[float] = []
    total = 0
    try:
        for _ in range(repeat + 1):  # the first one warms the caches and is not counted
            with db.session() as s:
                began = time.perf_counter()
                total = list_page(s, "nyc", query, limit=limit, offset=0)["total"]
                times.append((time.perf_counter() - began) * 1000)
    finally:
        db.engine.dispose()
    return statistics.median(times[1:]), total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="flights, and as many legs (default 100,000)")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--postgres", help="a PostgreSQL server URL: the project's database is a fresh one there")
    args = parser.parse_args()
    with fresh_project(args.postgres, "bench_names") as project:
        run(project, args.records, args.repeat, "PostgreSQL" if args.postgres else "SQLite")


def run(project: Project, n: int, repeat: int, backend: str) -> None:
    print(f"{backend}, {n:,} flights and {n:,} legs")
    rates, airlines, other = build(project, n, lambda line: print(line, flush=True))
    print(f"- import: flights named from their airline {rates['flight']:,.0f} records/s, legs named from "
          f"their own values {rates['leg']:,.0f} records/s, ratio {rates['flight'] / rates['leg']:.2f}")
    renamed = timed(project, RecordQuery(schema="flight", where=[f"carrier={airlines[0]}"]), 1, 0)[1]
    bare = statistics.median(edit_ms(project, other, f"O{i}") for i in range(repeat))
    followed = edit_ms(project, airlines[0], "Z0")
    print(f"- renaming an airline {renamed:,} flights show: {followed:,.0f} ms "
          f"({followed / max(renamed, 1) * 1000:.1f} us per flight renamed with its entry); "
          f"an edit nothing follows {bare:.1f} ms; ratio {followed / bare:.0f}")
    for limit, what in ((50, "first page of 50"), (0, "count")):
        ms_label, n_label = timed(project, RecordQuery(schema="leg", search="Z0"), repeat, limit)
        ms_own, n_own = timed(project, RecordQuery(schema="leg", search="X0"), repeat, limit)
        assert limit or n_label == n_own, (n_label, n_own)  # a page's total may be a lower bound
        print(f"- search, {what} ({n_own:,} matches): by the airline's name {ms_label:.1f} ms, by an own value "
              f"{ms_own:.1f} ms, ratio {ms_label / ms_own:.2f}")


if __name__ == "__main__":
    main()
