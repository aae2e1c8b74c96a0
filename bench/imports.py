"""Import benchmark (issue #14 *Import*): what ``benchbook import`` adds to the set-based create
it writes with, run on demand (never in the tests).

    python bench/imports.py [--rows 20000]

On a fresh SQLite project with a ``day`` schema (a date, four floats, a string) and two empty
collections, in this process (no CLI, no HTTP), in the same run:

- **import**: a CSV of ``--rows`` daily rows with ``2012/01/31``-style dates is read
  (``readers.read_table``) and imported (``run.import_table``: each row checked, dates read,
  problems collected, then ``bulk_create_records``) in one transaction;
- **baseline**: the same rows, already as RecordCreate bodies with ISO dates, given straight to
  ``bulk_create_records`` in one transaction.

Prints rows per second of each (wall clock) and the ratio import / baseline: the cost of reading
and checking the file on top of writing it (no target; 0.90 to 1.09 measured on a shared
2-core machine when this was written: reading and checking cost about as much as the noise).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from benchbook.config import Project
from benchbook.domain.catalog import collections, schemas
from benchbook.domain.context import Ctx
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.persistence.db import open_database

FIELDS = [{"name": "date", "type": "date"}, {"name": "precipitation", "type": "float"},
          {"name": "temp_max", "type": "float"}, {"name": "temp_min", "type": "float"},
          {"name": "wind", "type": "float"}, {"name": "weather", "type": "string"}]
KINDS = ("sun", "rain", "fog")


def rows(n: int) -> list[tuple[date, str, str, str, str, str]]:
    start = date(1900, 1, 1)
    return [(start + timedelta(days=i), f"{i % 7 * 0.3:.1f}", f"{i % 30}.5", f"{i % 20}.1", f"{i % 9}.2", KINDS[i % 3])
            for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    n = parser.parse_args().rows
    project = Project.init(str(Path(tempfile.mkdtemp(prefix="bench-imports-")) / "project"))
    db = open_database(project.database_url)
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        schemas.create_schema(ctx, {"name": "day", "fields": FIELDS})
        collections.create_collection(ctx, {"name": "imported", "schemas": ["day"]})
        collections.create_collection(ctx, {"name": "baseline", "schemas": ["day"]})
    data = rows(n)
    text = "date,precipitation,temp_max,temp_min,wind,weather\n" + "".join(
        f"{d:%Y/%m/%d},{p},{hi},{lo},{w},{k}\n" for d, p, hi, lo, w, k in data)
    bodies = [{"schema_name": "day", "data": dict(zip([f["name"] for f in FIELDS], (d.isoformat(), p, hi, lo, w, k)))}
              for d, p, hi, lo, w, k in data]

    started = time.perf_counter()
    table = read_table(text.encode(), "days.csv")
    with db.session() as s, s.begin():
        result = import_table(Ctx(session=s, actor="bench", files_dir=project.files_dir), table,
                              ImportOptions(collection="imported", schema="day"))
    imported = time.perf_counter() - started
    assert result.created == n and not result.problems, result.problems

    started = time.perf_counter()
    with db.session() as s, s.begin():
        bulk_create_records(Ctx(session=s, actor="bench", files_dir=project.files_dir), "baseline", bodies)
    baseline = time.perf_counter() - started
    db.engine.dispose()
    print(f"import   {n:,} rows: {imported:.2f} s, {n / imported:,.0f} rows/s (read, check, write)")
    print(f"baseline {n:,} rows: {baseline:.2f} s, {n / baseline:,.0f} rows/s (bulk_create_records alone)")
    print(f"ratio import/baseline: {imported / baseline:.2f} (no target)")


if __name__ == "__main__":
    main()
