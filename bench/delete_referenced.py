"""Deleting records that live records reference (issue 35 item 4), run on demand (never in the tests).

    python bench/delete_referenced.py [--flights 20000] [--planes 20] [--repeat 5] [--postgres URL]

The data: ``--planes`` ``plane`` records and ``--flights`` ``flight`` records, each referencing
one plane (``tailnum``, about flights / planes referrers per plane), plus one plane no flight
references. Each delete below runs in process (``writes.delete_records``, as the API's handler
calls it) and is rolled back, so every run meets the same data; the median of ``--repeat``:

- the delete of the unreferenced plane (the baseline: what a delete cost before referrers were
  looked up, plus the lookup that finds none);
- the 409 of a referenced plane (no choice given): the lookup and the count per schema;
- the same delete with ``references=keep``;
- the same delete with ``references=clear``: one update (with its history entry) per referrer.

Each is printed with its ratio to the baseline, and ``clear`` per referrer.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from records import fresh_project, slices  # bench/records.py

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.rows import find_record
from benchbook.domain.records.writes import delete_records
from benchbook.persistence.db import Database, open_database
from benchbook.settings.config import Project

SCHEMAS: list[dict[str, Any]] = [
    {"name": "plane", "display_template": "{tailnum}", "fields": [{"name": "tailnum", "type": "string"}]},
    {"name": "flight", "display_template": "F{number}", "fields": [
        {"name": "number", "type": "integer"},
        {"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}}]},
]


def build(db: Database, project: Project, flights: int, planes: int) -> tuple[str, str, int]:
    """(a referenced plane's id, the unreferenced plane's id, how many flights reference the first)."""
    with db.session() as s:
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        with s.begin():
            for schema in SCHEMAS:
                create_schema(ctx, schema)
            create_collection(ctx, {"name": "nyc", "schemas": ["plane", "flight"]})
        with s.begin():
            ids = bulk_create_records(ctx, "nyc", [{"schema_name": "plane", "data": {"tailnum": f"N{i:05d}"}}
                                                   for i in range(planes + 1)])
            for a, b in slices(flights):
                bulk_create_records(ctx, "nyc", [{"schema_name": "flight", "data": {
                    "number": i, "tailnum": ids[i % planes]}} for i in range(a, b)])
    return ids[0], ids[planes], len(range(0, flights, planes))


def timed(db: Database, project: Project, record_id: str, repeat: int, **choice: Any) -> float:
    """Median ms of deleting ``record_id`` with ``choice`` (rolled back each time); a 409 counts."""
    times: list[float] = []
    for _ in range(repeat + 1):  # the first warms the caches and is not counted
        with db.session() as s:
            ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
            s.begin()
            began = time.perf_counter()
            try:
                delete_records(ctx, [find_record(s, record_id)], force=False, **choice)
                s.flush()
            except Conflict:
                pass
            times.append((time.perf_counter() - began) * 1000)
            s.rollback()
    return statistics.median(times[1:])


def run(project: Project, flights: int, planes: int, repeat: int, say: Callable[[str], None]) -> None:
    db = open_database(project.database_url)
    try:
        say(f"building {planes + 1} planes and {flights:,} flights ...")
        referenced, alone, referrers = build(db, project, flights, planes)
        base = timed(db, project, alone, repeat)
        say(f"\ndelete of one plane, median of {repeat} (in process, {db.engine.dialect.name}, "
            f"{referrers:,} flights referencing it):")
        say(f"- unreferenced plane (baseline)   {base:9.1f} ms")
        for what, choice in (("409, no choice given", {}), ("references=keep", {"references": "keep"}),
                             ("references=clear", {"references": "clear"})):
            ms = timed(db, project, referenced, repeat, **choice)
            per = f"  ({ms / referrers:.2f} ms per referrer)" if choice.get("references") == "clear" else ""
            say(f"- {what:<31} {ms:9.1f} ms  ratio {ms / base:7.1f}{per}")
    finally:
        db.engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flights", type=int, default=20_000)
    parser.add_argument("--planes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL server URL: the project's database is a fresh one there")
    args = parser.parse_args()
    with fresh_project(args.postgres, "bench_delref") as project:
        run(project, args.flights, args.planes, args.repeat, print)


if __name__ == "__main__":
    main()
