"""Load benchmark (issue #13): readers and writers at once against a live ``benchbook serve``,
run on demand (never in the tests).

    python bench/load.py [--seconds 60] [--readers 8] [--writers 1] [--records 20000] [--baseline 15]
                         [--import-rows 200000] [--import-at 5] [--import-alongside]
                         [--postgres URL] [--page-requests N] [--keep DIR]

A fresh project gets ``--records`` ``obs`` records under 200 ``plot`` records (the domain's
bulk path) and a few files, then ``benchbook serve`` starts as a subprocess (uvicorn) on a free
port. For ``--seconds``:

- ``--readers`` threads (httpx, one connection each) loop over five kinds of read: a page of 50
  (**list**), a page with a 2-leaf filter tree sorted by ``n`` (**filter**), one record
  (**single**), one record's history (**history**) and a file's bytes (**download**);
- ``--writers`` threads loop over **create**, **edit** (PATCH) and **upload** (a new 64 KiB
  file); the first writer also runs, ``--import-at`` seconds in, one **import**: ``benchbook
  import`` of a ``--import-rows`` CSV as a subprocess against the same project (while it runs,
  that writer waits for it, as one person would). With ``--import-alongside`` the import runs
  in its own process while the writers go on: their writes then wait for it, up to the bound
  (``persistence.db.WRITE_WAIT``), and are refused with 503 + ``Retry-After`` past it — the
  behaviour chosen in ``docs/decisions.md``, measured here.

Before the load, the readers run alone for ``--baseline`` seconds: the single-record read's p50
and p99 then, and the ratios of the load's to them, tell the load's cost apart from the machine's
(the same run, the same machine). Prints per kind: requests, throughput (/s over ``--seconds``),
p50 and p99 latency (ms, wall clock at the client), errors; then every error (status and message, counted), the WAL size before and after, and the
issue's targets (0 errors with 8 readers + 1 writer for 60 s including a 200,000-row import;
p99 of a single-record read < 50 ms) with the verdict, judged only at those settings.
``--postgres URL`` (e.g. ``postgresql+psycopg://postgres@127.0.0.1:5432/postgres``) runs the
same on a fresh database created on that server (dropped afterwards); the issue asks for 4
writers there.
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import free_port, postgres_database, project_on, start, stop

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.persistence.db import open_database, wal_size
from benchbook.settings.config import Project

PLOTS = 200
READS = ("list", "filter", "single", "history", "download")
WRITES = ("create", "edit", "upload")
PLOT = {"name": "plot", "display_template": "{name}", "fields": [{"name": "name", "type": "string"}]}
OBS = {"name": "obs", "parent": "plot", "fields": [
    {"name": "n", "type": "integer"}, {"name": "x", "type": "float"}, {"name": "label", "type": "string"},
    {"name": "day", "type": "date"}]}
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def obs_row(rnd: random.Random, i: int) -> dict[str, Any]:
    return {"n": i, "x": round(rnd.uniform(0, 1000), 2), "label": " ".join(rnd.choices(WORDS, k=6)),
            "day": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"}


# ---------------------------------------------------------------------------------- setup
def make_project(work: Path, records: int, pg_url: str | None,
                 page_requests: int | None = None) -> tuple[Project, list[str], list[str]]:
    """The project, ids of the plots, ids of some obs."""
    project = project_on(work / "project", {"database": {"url": pg_url}, "limits": {"page_requests": page_requests}})
    db = open_database(project.database_url)
    rnd = random.Random(7)
    try:
        with db.session() as s, s.begin():
            ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
            create_schema(ctx, PLOT)
            create_schema(ctx, OBS)
            create_collection(ctx, {"name": "bench", "schemas": ["plot", "obs"]})
            plots = bulk_create_records(ctx, "bench", [
                {"schema_name": "plot", "data": {"name": f"plot {i}"}} for i in range(PLOTS)])
            obs = bulk_create_records(ctx, "bench", [
                {"schema_name": "obs", "parent_record_id": plots[i % PLOTS], "data": obs_row(rnd, i)}
                for i in range(records)])
    finally:
        db.engine.dispose()
    return project, plots, obs[:: max(len(obs) // 2000, 1)]


def write_csv(path: Path, rows: int, plots: list[str]) -> Path:
    rnd = random.Random(11)
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["parent_record_id", "n", "x", "label", "day"])
        for i in range(rows):
            row = obs_row(rnd, 10_000_000 + i)
            out.writerow([plots[i % len(plots)], row["n"], row["x"], row["label"], row["day"]])
    return path


# ---------------------------------------------------------------------------------- load
class Tally:
    """Latencies (seconds) and errors per kind, shared by the threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.times: dict[str, list[float]] = collections.defaultdict(list)
        self.errors: collections.Counter[tuple[str, str]] = collections.Counter()

    def add(self, kind: str, seconds: float, error: str | None = None) -> None:
        with self.lock:
            self.times[kind].append(seconds)
            if error:
                self.errors[(kind, error)] += 1


def timed(tally: Tally, kind: str, client: httpx.Client, method: str, url: str, **kw: Any) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        r = client.request(method, url, **kw)
    except httpx.HTTPError as exc:
        tally.add(kind, time.perf_counter() - started, f"{type(exc).__name__}: {exc}")
        return None
    elapsed = time.perf_counter() - started
    error = None
    if r.status_code >= 300:
        retry = r.headers.get("retry-after")
        error = f"{r.status_code}{' Retry-After ' + retry if retry else ''}: {r.text[:160]}"
    tally.add(kind, elapsed, error)
    return r if error is None else None


def reader(base: str, tally: Tally, stop_at: float, obs: list[str], shas: list[str], seed: int) -> None:
    rnd = random.Random(seed)
    with httpx.Client(base_url=base, timeout=120) as client:
        while time.monotonic() < stop_at:
            kind = rnd.choice(READS)
            if kind == "list":
                timed(tally, kind, client, "GET", "/api/collections/bench/records",
                      params={"limit": 50, "offset": rnd.randrange(1000)})
            elif kind == "filter":
                tree = {"and": [{"field": "n", "op": "gt", "value": rnd.randrange(20_000)},
                                {"field": "x", "op": "lt", "value": rnd.uniform(100, 900)}]}
                timed(tally, kind, client, "GET", "/api/collections/bench/records",
                      params={"schema": "obs", "filter": json.dumps(tree), "sort": "n", "limit": 50})
            elif kind == "single":
                timed(tally, kind, client, "GET", f"/api/records/{rnd.choice(obs)}")
            elif kind == "history":
                timed(tally, kind, client, "GET", f"/api/records/{rnd.choice(obs)}/audit", params={"limit": 20})
            else:
                timed(tally, kind, client, "GET", f"/api/files/{rnd.choice(shas)}")


def run_import(tally: Tally, command: list[str]) -> None:
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    error = None if proc.returncode == 0 else f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-300:]}"
    tally.add("import", time.perf_counter() - started, error)


def writer(base: str, tally: Tally, stop_at: float, plots: list[str], obs: list[str], seed: int,
           import_command: list[str] | None, import_at: float) -> None:
    rnd = random.Random(seed)
    mine: list[str] = []
    with httpx.Client(base_url=base, timeout=120) as client:
        while time.monotonic() < stop_at:
            if import_command and time.monotonic() >= import_at:
                run_import(tally, import_command)
                import_command = None
                continue
            kind = WRITES[rnd.randrange(3)]
            if kind == "create" or not mine:
                r = timed(tally, "create", client, "POST", "/api/collections/bench/records", json={
                    "schema_name": "obs", "parent_record_id": rnd.choice(plots), "data": obs_row(rnd, rnd.randrange(10**6))})
                if r is not None:
                    mine.append(r.json()["id"])
            elif kind == "edit":
                target = rnd.choice(mine + obs[:50])
                timed(tally, kind, client, "PATCH", f"/api/records/{target}",
                      json={"data": {"x": round(rnd.uniform(0, 1000), 2)}})
            else:
                content = os.urandom(64 * 1024)
                timed(tally, kind, client, "POST", "/api/files",
                      files={"file": (f"f{rnd.randrange(10**9)}.bin", content, "application/octet-stream")})


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1000


# ---------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--baseline", type=float, default=15,
                        help="seconds of readers alone before the load (the same run's baseline; 0: none)")
    parser.add_argument("--writers", type=int, default=1)
    parser.add_argument("--records", type=int, default=20_000, help="obs records before the load starts")
    parser.add_argument("--import-rows", type=int, default=200_000, help="rows of the import (0: no import)")
    parser.add_argument("--import-at", type=float, default=5, help="seconds into the load the import starts")
    parser.add_argument("--import-alongside", action="store_true",
                        help="run the import in its own process while the writers go on")
    parser.add_argument("--postgres", metavar="URL", help="a PostgreSQL server URL: run on a fresh database there")
    parser.add_argument("--page-requests", type=int, metavar="N",
                        help="[limits] page_requests of the served project (default: the project's default)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args()

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="benchbook-load-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.postgres:
        with postgres_database(args.postgres, "benchbook_load") as pg_url:
            run(args, work, pg_url)
    else:
        run(args, work, None)


def run(args: argparse.Namespace, work: Path, pg_url: str | None) -> None:
    backend = "PostgreSQL" if pg_url else "SQLite"
    say(f"building the project in {work} ({backend}, {args.records:,} obs records) …")
    project, plots, obs = make_project(work, args.records, pg_url, args.page_requests)
    import_command = None
    if args.import_rows:
        say(f"writing a {args.import_rows:,}-row CSV …")
        path = write_csv(work / "import.csv", args.import_rows, plots)
        import_command = [sys.executable, "-c", "from benchbook.cli.main import main; main()", "--project",
                          str(project.root), "import", str(path), "--collection", "bench", "--schema", "obs"]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start([sys.executable, "-c", "from benchbook.cli.main import main; main()", "--project",
                    str(project.root), "serve", "--port", str(port), "--log-level", "WARNING"],
                   f"{base}/api/health", work / "server.log")
    db_file = None if pg_url else Path(project.database_url.removeprefix("sqlite:///"))
    tally, baseline = Tally(), Tally()
    wal = {}
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            shas = [client.post("/api/files", files={"file": (f"seed{i}.bin", os.urandom(256 * 1024))}).json()["sha256"]
                    for i in range(5)]
        if db_file:
            wal["before"] = os.path.getsize(f"{db_file}-wal") if Path(f"{db_file}-wal").exists() else 0
        if args.baseline:
            say(f"baseline: {args.readers} reader(s), no writer, for {args.baseline:.0f} s …")
            until = time.monotonic() + args.baseline
            alone = [threading.Thread(target=reader, args=(base, baseline, until, obs, shas, 100 + i))
                     for i in range(args.readers)]
            for t in alone:
                t.start()
            for t in alone:
                t.join()
        say(f"load: {args.readers} reader(s) + {args.writers} writer(s) for {args.seconds:.0f} s on {backend}"
            + (f", {args.import_rows:,}-row import at {args.import_at:.0f} s"
               + (" in its own process" if args.import_alongside else " by writer 1") if import_command else ""))
        started = time.monotonic()
        stop_at = started + args.seconds
        threads = [threading.Thread(target=reader, args=(base, tally, stop_at, obs, shas, i))
                   for i in range(args.readers)]
        threads += [threading.Thread(target=writer, args=(
            base, tally, stop_at, plots, obs, 1000 + i, import_command if i == 0 and not args.import_alongside else None,
            started + args.import_at)) for i in range(args.writers)]
        if import_command and args.import_alongside:
            def alongside() -> None:
                time.sleep(args.import_at)
                run_import(tally, import_command)
            threads.append(threading.Thread(target=alongside))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - started
        if db_file:
            engine_db = open_database(project.database_url)
            wal["after"] = wal_size(engine_db.engine)
            engine_db.engine.dispose()
    finally:
        stop(server)
    report(args, tally, wall, wal, backend, baseline)


def report(args: argparse.Namespace, tally: Tally, wall: float, wal: dict[str, int], backend: str,
           baseline: Tally) -> None:
    """The table, the errors and the verdicts. Readers and writers stop at ``--seconds``, so rates
    are over that; the import (and the last requests) may end later (``wall``)."""
    print(f"\n{backend}: {args.readers} readers + {args.writers} writer(s) for {args.seconds:.0f} s; {wall:.1f} s "
          f"wall clock (the import may run past --seconds; rates are over --seconds)")
    print(f"{'kind':<10} {'requests':>9} {'per s':>8} {'p50 ms':>9} {'p99 ms':>9} {'errors':>7}")
    total_errors = sum(tally.errors.values())
    for kind in (*READS, *WRITES, "import"):
        times = tally.times.get(kind, [])
        if not times:
            continue
        errors = sum(n for (k, _), n in tally.errors.items() if k == kind)
        print(f"{kind:<10} {len(times):>9,} {len(times) / args.seconds:>8.1f} {pct(times, 0.5):>9.1f} {pct(times, 0.99):>9.1f} "
              f"{errors:>7}")
    reads = sum(len(tally.times.get(k, [])) for k in READS)
    writes = sum(len(tally.times.get(k, [])) for k in WRITES)
    print(f"all reads {reads / args.seconds:,.1f}/s, all writes {writes / args.seconds:,.1f}/s")
    if tally.times.get("import"):
        print(f"import of {args.import_rows:,} rows: {tally.times['import'][0]:.1f} s "
              f"({args.import_rows / tally.times['import'][0]:,.0f} rows/s)")
    if wal:
        print(f"WAL: {wal.get('before', 0) / 1e6:,.1f} MB before the load, {wal.get('after', 0) / 1e6:,.1f} MB after")
    print(f"errors: {total_errors}")
    for (kind, message), n in tally.errors.most_common():
        print(f"  {n:>5} × {kind}: {message}")
    single = tally.times.get("single", [])
    at_target = (backend == "SQLite" and args.readers == 8 and args.writers == 1 and args.seconds >= 60
                 and args.import_rows >= 200_000 and not args.import_alongside)
    p99 = pct(single, 0.99) if single else float("nan")
    if at_target:
        print(f"target 0 errors: {total_errors} — {'met' if total_errors == 0 else 'missed'}")
        print(f"target p99 single-record read < 50 ms: {p99:.1f} ms — {'met' if p99 < 50 else 'missed'}")
    else:
        print(f"targets (0 errors; p99 single < 50 ms) are judged at 8 readers + 1 writer, 60 s, a 200,000-row "
              f"import by the writer on SQLite; here: {total_errors} errors, p99 single {p99:.1f} ms (not judged)")
    print(f"median single-record read {statistics.median(single) * 1000 if single else float('nan'):.1f} ms")
    alone = baseline.times.get("single", [])
    if alone and single:
        print(f"single-record read with readers only ({args.baseline:.0f} s before the load, same run): p50 "
              f"{pct(alone, 0.5):.1f} ms, p99 {pct(alone, 0.99):.1f} ms; under the load ÷ readers only: p50 "
              f"{pct(single, 0.5) / pct(alone, 0.5):.2f}, p99 {p99 / pct(alone, 0.99):.2f} "
              f"(baseline errors: {sum(baseline.errors.values())})")


if __name__ == "__main__":
    main()
