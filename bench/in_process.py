"""A request's cost in process, without sockets: the ASGI app of ``create_app`` called
directly, now and at a baseline commit, in the same run (issue 15: single record GET).

    python bench/in_process.py PROJECT [--baseline REF] [--requests 3000] [--rounds 2]

PROJECT is a project folder that ``bench/records.py --keep DIR`` left in ``DIR/project``.
Each round times, in a fresh process for the current code and one for the baseline's
(``git archive`` of REF, run with ``PYTHONPATH``; the two alternate, so both see the machine
as it is at that moment): ``GET /api/health`` (the framework alone), ``GET /api/records/{id}``
of records with a parent, ``--requests`` each after 100 warm-ups, and the record handler
alone (``handlers.records.get_record`` timed by a wrapper); then ``--pages`` of
``bench/records.py``'s 3-leaf filtered page sorted by ``n`` and as many with its ancestor
leaf (the same requests in both processes). Prints each median in µs and the ratios
current / baseline.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from cli_startup import extract

CHILD = "--child"


def measure(project_dir: str, requests: int, pages: int) -> dict[str, float]:
    """The medians (µs) of this process's code: health, record, handler, page, ancestor page."""
    import random
    import urllib.parse

    from records import ANCESTOR, FILTERED, benchbook_queries  # bench/records.py: the same pages

    import benchbook.handlers.records as handlers
    from benchbook.http.app import create_app
    from benchbook.settings.config import Project

    project = Project.open(project_dir)
    if not project.database_url.startswith("sqlite"):
        raise SystemExit("in_process.py reads the record ids from the project's SQLite file")
    with sqlite3.connect(project.database_url.removeprefix("sqlite:///")) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM records WHERE parent_id IS NOT NULL LIMIT ?",
                                          (requests,))]
    handler_times: list[float] = []
    original = handlers.get_record

    def timed(record_id: str) -> Any:
        begin = time.perf_counter()
        try:
            return original(record_id)
        finally:
            handler_times.append(time.perf_counter() - begin)

    handlers.get_record = timed  # before create_app: Connexion resolves the operation then
    app = create_app(project)

    async def call(path: str, query: bytes = b"") -> None:
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
                 "root_path": "", "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", b"application/json")],
                 "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8000)}
        status: list[int] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await app(scope, receive, send)
        if status != [200]:
            raise SystemExit(f"GET {path}: {status}")

    async def medians() -> dict[str, float]:
        paths = {"health": ["/api/health"] * len(ids), "record": [f"/api/records/{i}" for i in ids]}
        out = {}
        for name, chosen in paths.items():
            for path in chosen[:100]:
                await call(path)
            times = []
            for path in chosen:
                begin = time.perf_counter()
                await call(path)
                times.append(time.perf_counter() - begin)
            out[name] = statistics.median(times) * 1e6
        out["handler"] = statistics.median(handler_times[-len(ids):]) * 1e6
        with sqlite3.connect(project.database_url.removeprefix("sqlite:///")) as conn:
            n = conn.execute("SELECT count(*) FROM records WHERE parent_id IS NOT NULL").fetchone()[0]
        queries = benchbook_queries(n, ids)
        for name, query_name in (("page", FILTERED), ("ancestor", ANCESTOR)):
            rnd, times = random.Random(7), []
            for i in range(pages + 3):
                path, params = queries[query_name](rnd)
                begin = time.perf_counter()
                await call(path, urllib.parse.urlencode(params).encode())
                if i >= 3:
                    times.append(time.perf_counter() - begin)
            out[name] = statistics.median(times) * 1e6
        return out

    return asyncio.run(medians())


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == CHILD:
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--baseline", default="HEAD", help="commit to compare with (default HEAD)")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--pages", type=int, default=100, help="filtered pages a round, of each kind")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchbook-in-process-") as tmp:
        base_src = extract(args.baseline, Path(tmp))
        runs: dict[str, list[dict[str, float]]] = {"current": [], "baseline": []}
        for _ in range(args.rounds):
            for label, path in (("baseline", base_src), ("current", ROOT / "src")):
                out = subprocess.run([sys.executable, __file__, CHILD, str(args.project), str(args.requests),
                                      str(args.pages)],
                                     check=True, capture_output=True, text=True,
                                     env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"})
                runs[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"bench/in_process.py {args.project} --baseline {args.baseline} ({args.requests:,} requests a round)")
    for name in ("health", "record", "handler", "page", "ancestor"):
        now = [r[name] for r in runs["current"]]
        then = [r[name] for r in runs["baseline"]]
        ratio = statistics.median(now) / statistics.median(then)
        print(f"{name:<8} current {' '.join(f'{v:7.0f}' for v in now)} µs   baseline "
              f"{' '.join(f'{v:7.0f}' for v in then)} µs   ratio {ratio:.3f}")


if __name__ == "__main__":
    main()
