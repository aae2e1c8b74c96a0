"""Failure groups over many failed runs (issue 36 item 3), run on demand (never in the tests).

    python bench/failure_groups.py [--runs 100000] [--repeat 5] [--postgres URL]

The data: ``--runs`` failed runs of 4 workflows, each failing at one of 3 steps with one of 5
messages that name per-record values (a ULID, a quoted tail number, a delay, a path), so about
60 groups. Timed, median of ``--repeat``, in process (``failure_groups.failure_groups``, what the
handler calls):

- baseline: the same rows grouped on the exact message, as groups were before (one group per
  distinct message: about as many groups as runs);
- the groups on the message template (the database normalises every message).

Each is printed with its ratio to the baseline and the number of groups.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from records import fresh_project  # bench/records.py

from benchbook.domain.ids import new_id
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.tables import Job, utcnow
from benchbook.runner.failure_groups import failure_groups
from benchbook.settings.config import Project

MESSAGES = [
    "ValueError: flight {id} ('N{n}UA') has dep_delay {d} not in /data/run{n}/delays.csv",
    "KeyError: 'carrier_{n}'",
    "record {id} has no value for 'origin' (row {n})",
    "the step ran longer than {n} s",
    "invalid_input: arr_delay {d} is out of range [-60, 1440] for {id}",
]


def build(db: Database, runs: int) -> None:
    """Insert ``runs`` failed runs in one transaction."""
    start = utcnow()
    rows: list[dict[str, Any]] = []
    for n in range(runs):
        message = MESSAGES[n % 5].format(id=new_id(), n=n, d=n * 0.25)
        rows.append({"id": new_id(), "workflow_name": f"wf{n % 4}", "record_id": new_id(), "schema_name": "flight",
                     "trigger": "manual", "status": "failed", "error": message, "created_at": start,
                     "finished_at": start + timedelta(milliseconds=n), "depth": 0, "problems": 0, "inputs": {},
                     "cancel_requested": False,
                     "error_details": {"kind": "plugin_error", "step": f"s{n % 3}", "message": message}})
    with db.session() as s, s.begin():
        for at in range(0, runs, 5000):
            s.execute(insert(Job), rows[at:at + 5000])


def exact_groups(session: Any) -> list[Any]:
    """The groups as they were: on the exact message."""
    message = Job.error_details["message"].as_string()
    kind, step = Job.error_details["kind"].as_string(), Job.error_details["step"].as_string()
    last = func.max(func.coalesce(Job.finished_at, Job.created_at))
    return list(session.execute(select(Job.workflow_name, kind, step, message, func.count(), last)
                                .where(Job.status == "failed").group_by(Job.workflow_name, kind, step, message)
                                .order_by(func.count().desc(), last.desc())))


def timed(db: Database, what: Callable[[Any], list[Any]], repeat: int) -> tuple[float, int]:
    """Median milliseconds of ``what(session)`` and how many groups it gave."""
    times, groups = [], 0
    for _ in range(repeat):
        with db.session() as s:
            began = time.perf_counter()
            groups = len(what(s))
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), groups


def run(project: Project, runs: int, repeat: int, say: Callable[[str], None]) -> None:
    db = open_database(project.database_url)
    try:
        say(f"building {runs:,} failed runs ...")
        build(db, runs)
        base, exact = timed(db, exact_groups, repeat)
        say(f"\nfailure groups over {runs:,} failed runs, median of {repeat} (in process, {db.engine.dialect.name}):")
        say(f"- on the exact message (baseline) {base:9.1f} ms  {exact:7,} groups")
        ms, groups = timed(db, failure_groups, repeat)
        say(f"- on the message template         {ms:9.1f} ms  {groups:7,} groups  ratio {ms / base:5.2f}")
    finally:
        db.engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL server URL: the project's database is a fresh one there")
    args = parser.parse_args()
    with fresh_project(args.postgres, "bench_fgroups") as project:
        run(project, args.runs, args.repeat, print)


if __name__ == "__main__":
    main()
