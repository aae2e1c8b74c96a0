"""Analytics benchmark (issue: "AI assistant and analytics"), run on demand, never in the tests.

    python bench/analytics.py [--records 1000000] [--repeat 20] [--keep DIR]

Measures ``GET /analytics/records/growth`` over HTTP against a live ``benchbook serve`` on a
SQLite project holding ``--records`` records, spread over twelve months of one year, every hour
of the day. The records are written straight into the ``records`` table (one ``executemany``; no
history, which this endpoint never reads), so building a million takes under a minute.

For each query (``bucket=month``, ``week``, ``day`` and a three-month ``start``/``end`` range) it
prints p50 and p95 in ms with the growth index (migration 0007) and without it (dropped for the
baseline, made again afterwards), both measured in this run, and their ratio. Target (issue 12):
p50 under 200 ms for ``bucket=month`` at 1,000,000 records.
"""
from __future__ import annotations

import argparse
import json
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

QUERIES = ("bucket=month", "bucket=week", "bucket=day",
           "bucket=month&start=2025-03-01T00:00:00Z&end=2025-06-01T00:00:00Z")


GROWTH_INDEX = "ix_records_created_day"
GROWTH_INDEX_DDL = (f"CREATE INDEX IF NOT EXISTS {GROWTH_INDEX} ON records "
                    "(substr(created_at, 1, 10), dataset_id, schema_id, created_at)")
"""The records' creation day index as migration 0007 made it (0020 dropped it on SQLite)."""

def cli(project: Path, *args: str) -> None:
    """Run a ``benchbook`` command on ``project`` in a subprocess (the installed package)."""
    subprocess.run([sys.executable, "-m", "benchbook.cli.main", "--project", str(project), *args],
                   check=True, capture_output=True)


def build(project: Path, count: int) -> None:
    """A project with schema ``obs`` (two fields) in collection ``lab`` and ``count`` records."""
    subprocess.run([sys.executable, "-m", "benchbook.cli.main", "init", str(project)], check=True,
                   capture_output=True)
    cli(project, "schemas", "create", "--name", "obs", "--body",
        '{"fields": [{"name": "v", "type": "float"}, {"name": "site", "type": "string"}]}')
    cli(project, "collections", "create", "--name", "lab", "--schemas", '["obs"]')
    with sqlite3.connect(project / "benchbook.db") as conn:
        dataset = conn.execute("SELECT id FROM collections").fetchone()[0]
        schema = conn.execute("SELECT id FROM schemas").fetchone()[0]
        value, site = (row[0] for row in conn.execute("SELECT id FROM fields ORDER BY created_at"))

        def rows() -> object:
            for i in range(count):
                moment = f"2025-{1 + i % 12:02d}-{1 + i % 28:02d} {i % 24:02d}:00:00.000000"
                yield (f"bench{i:027d}", dataset, schema, json.dumps({value: i / 7, site: f"s{i % 40}"}),
                       moment, moment)

        conn.executemany("INSERT INTO records (id, dataset_id, schema_id, data, created_at, updated_at) "
                         "VALUES (?, ?, ?, ?, ?, ?)", rows())  # type: ignore[arg-type]
        conn.execute("ANALYZE")


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure(project: Path, repeat: int) -> dict[str, tuple[float, float]]:
    """p50 and p95 in ms of each query against a live server on ``project``."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "benchbook.cli.main", "--project", str(project), "serve",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/api"
    try:
        for _ in range(200):
            try:
                httpx.get(f"{base}/health")
                break
            except httpx.TransportError:
                time.sleep(0.1)
        found = {}
        with httpx.Client(timeout=120) as client:
            for query in QUERIES:
                url = f"{base}/analytics/records/growth?{query}"
                for _ in range(3):
                    client.get(url).raise_for_status()
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    client.get(url).raise_for_status()
                    times.append((time.perf_counter() - start) * 1000)
                times.sort()
                found[query] = (statistics.median(times), times[max(0, round(len(times) * 0.95) - 1)])
        return found
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    """Build (or reuse with ``--keep``) the project, measure without and with the index, print."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=20, help="timed requests per query")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-analytics-"))
    project = folder / "project"
    if not (project / "benchbook.db").exists():
        started = time.perf_counter()
        build(project, args.records)
        print(f"built {args.records:,} records in {time.perf_counter() - started:.0f} s")
    database = project / "benchbook.db"
    ddl = GROWTH_INDEX_DDL
    with sqlite3.connect(database) as conn:
        conn.execute(f"DROP INDEX IF EXISTS {GROWTH_INDEX}")
    without = measure(project, args.repeat)
    with sqlite3.connect(database) as conn:
        conn.execute(ddl)
    with_index = measure(project, args.repeat)
    print(f"GET /analytics/records/growth, {args.records:,} records, {args.repeat} requests each (ms)")
    for query in QUERIES:
        (p50, p95), (b50, b95) = with_index[query], without[query]
        print(f"  {query:<70} p50 {p50:7.0f} p95 {p95:7.0f}   without the index p50 {b50:7.0f} "
              f"p95 {b95:7.0f}   ratio {p50 / b50:.2f}")
    verdict = "met" if with_index[QUERIES[0]][0] < 200 else "missed"
    print(f"target: bucket=month p50 < 200 ms at 1,000,000 records: {verdict}")


if __name__ == "__main__":
    main()
