"""Every read a user's pages make, timed over HTTP on a project ``bench/records.py`` kept; run
on demand (never in the tests), to find the reads that grow with the data.

    python bench/records.py --records 1000000 --keep DIR        # once: DIR/project
    python bench/sweep.py DIR/project [--repeat 4]

Serves the project (``benchbook serve`` as a subprocess on a free port, on the database its
``benchbook.toml`` names, SQLite or PostgreSQL) and sends each GET of the list below
``--repeat`` times: collections, record counts, the reference picker with and without a
search, pages sorted by base columns and by a field in both directions, a deep offset, a
parent's children, a record and its referrers and restore plan, the history lists and storage
figures, the analytics charts, orphans, schemas and jobs. Prints per request the median of all
but the first (warm) and the first (cold), in ms, and the status. No targets: what is slow here
is looked into (docs/performance.md R21, the sweep).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import free_port, start, stop  # the benchmark beside this file


def requests(client: httpx.Client) -> list[tuple[str, dict[str, Any]]]:
    """The GETs to time, with ids read from the served project (an obs record, a plot)."""
    base = "/api/collections/bench/records"
    obs = client.get(base, params={"schema": "obs", "limit": 1}).json()["items"][0]["id"]
    plot = client.get(base, params={"schema": "plot", "limit": 1}).json()["items"][0]["id"]
    return [
        ("/api/collections", {}), ("/api/collections/bench", {}), ("/api/collections/bench/record-counts", {}),
        ("/api/records", {"limit": 20}), ("/api/records", {"limit": 20, "search": "alpha"}),
        ("/api/records", {"limit": 20, "schema": "obs"}),
        (base, {"schema": "obs", "sort": "updated_at:desc", "limit": 50}),
        (base, {"sort": "created_at:desc", "limit": 50}),
        (base, {"schema": "obs", "sort": "natural_name", "limit": 50}),
        (base, {"schema": "obs", "sort": "n:desc", "limit": 50}),
        (base, {"schema": "obs", "sort": "label:desc", "limit": 50}),
        (base, {"schema": "obs", "limit": 50, "offset": 500000}),
        (base, {"parent_record_id": plot, "limit": 50, "child_counts": "true"}),
        (f"/api/records/{plot}", {}), (f"/api/records/{obs}/referrers", {}), (f"/api/records/{plot}/restore-plan", {}),
        ("/api/audit", {"limit": 50}), ("/api/audit/events", {"limit": 50}), ("/api/audit/storage", {}),
        ("/api/audit/filter-fields", {}),
        ("/api/analytics/records/growth", {"bucket": "day"}), ("/api/analytics/records/counts", {}),
        ("/api/analytics/audit/events", {}),
        ("/api/records/orphans", {}), ("/api/schemas", {}), ("/api/schemas/obs", {}), ("/api/collections/deleted", {}),
        ("/api/jobs", {"limit": 50}), ("/api/jobs/count", {}),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path, help="a project folder bench/records.py kept (DIR/project)")
    parser.add_argument("--repeat", type=int, default=4, help="requests of each GET (the first is shown apart)")
    args = parser.parse_args()
    port = free_port()
    server = start([sys.executable, "-c", "from benchbook.cli.main import main; main()", "--project",
                    str(args.project), "serve", "--port", str(port), "--log-level", "WARNING"],
                   f"http://127.0.0.1:{port}/api/health", args.project / "sweep-server.log")
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
            for path, params in requests(client):
                times, status = [], 0
                for _ in range(max(2, args.repeat)):
                    begin = time.perf_counter()
                    status = client.get(path, params=params).status_code
                    times.append((time.perf_counter() - begin) * 1000)
                print(f"{statistics.median(times[1:]):9.1f} ms (first {times[0]:8.1f})  {status}  {path} {params}",
                      flush=True)
    finally:
        stop(server)


if __name__ == "__main__":
    main()
