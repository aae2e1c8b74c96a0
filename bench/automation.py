"""Automation benchmark (issue #11): how fast the worker drains queued runs, run on demand (never
in the tests).

    python bench/automation.py [--records 10000]

On a fresh SQLite project: a collection of ``sample`` records (``notes`` string, ``words``
integer) and a one-step workflow, ``count-words`` (the built-in ``benchbook.text-stats`` over
``record.notes``, ``save: {words: stats.words}``), triggered by ``record_created``.

- **queue**: ``--records`` records are created with the domain's bulk path
  (``bulk_create_records``, one transaction) and ``triggers.on_changes`` queues their runs in
  that transaction, as ``benchbook import`` does: one ``pending`` run per record (not timed).
- **drain**: the queue is drained with ``worker.for_database(db, project).drain(wait=True)`` —
  what ``POST /jobs/drain`` runs — in this process; every run must end ``completed`` and every
  record hold its word count. Timed: runs per second (target >= 500 runs/s on SQLite).
- **baseline**, in the same run on the same records: ``--records`` bare updates of the same field
  (``words``) through the domain's ``update_record``, one transaction each (``BEGIN IMMEDIATE`` as
  the unit of work and the run take it, then commit; no trigger check), timed the same way.
  The per-run overhead is (drain time - baseline time) / records: what a run costs beyond the
  record update its save makes (no target).
- **statements**: SQL statements sent per run and per bare update (counted on the engine): a
  figure the other work on the machine does not move, unlike the times.
- **plugins** (``--plugin-runs``, ``--cold-runs``; ``bench/automation_plugins.py``): runs/s of
  a one-step workflow whose step is the Python SDK plugin ``benchbook plugins new`` writes, or
  the JS starter, warm (one process serves the drain) and cold (a process per run), beside the
  built-in step on the same records, with the ratios (targets: Python >= 200, JS >= 300 runs/s
  warm; issue 36); and ``--batched-runs`` of each as a batch plugin (target: Python >= 1,000 runs/s).
- **chained claim, A/B** (``--ab-chain SLICES``): ``--records`` more runs queued, then drained
  by ``execution.execute_next`` in ``2 x SLICES`` alternating slices (A B B A …), half with a
  chaining ``drain.Drain`` (a run's final commit claims the next run, as the worker's drains
  do) and half without (each run claimed in its own commit): CPU time per run of each, in the
  same process, so the load of other work falls on both alike.

Everything is timed in process (the domain and the worker called from this script on a SQLite
file; no HTTP): wall clock, CPU time in brackets. Each line ends with its target and the
verdict, ``met`` or ``missed``, or ``no target``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import automation_plugins  # bench/automation_plugins.py, next to this script
import yaml
from sqlalchemy import event, func, select

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records import bulk
from benchbook.domain.records.writes import update_record
from benchbook.persistence.db import Database, open_database, write_lock
from benchbook.persistence.tables import Job, Record
from benchbook.runner import drain as drain_module
from benchbook.runner import execution, triggers, worker, workflows
from benchbook.runner.plugin_host import discovery
from benchbook.settings.config import Project

RUNS_TARGET = 500.0
"""Runs per second the drain must reach on SQLite."""
SLICE = 50_000
WORKFLOW = {
    "name": "count-words",
    "description": "Count the words of a sample's notes when it is created",
    "record_schema": "sample",
    "triggers": {"record_created": {}},
    "steps": [{"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
    "save": {"words": "stats.words"},
}


def notes(i: int) -> str:
    return " ".join(f"w{i}" for _ in range(1 + i % 7))


@contextmanager
def project_db() -> Iterator[tuple[Project, Database]]:
    with tempfile.TemporaryDirectory(prefix="benchbook-bench-automation-") as folder:
        project = Project.init(folder)
        db = open_database(project.database_url)
        try:
            yield project, db
        finally:
            worker.stop(db)
            db.engine.dispose()


def ctx_for(project: Project, session: Any) -> Ctx:
    return Ctx(session=session, actor="bench", files_dir=project.files_dir)


def set_up(project: Project, db: Database) -> None:
    """The schema, the collection, the built-in plugins registered, the workflow file (checked)."""
    with db.session() as s, s.begin():
        ctx = ctx_for(project, s)
        create_schema(ctx, {"name": "sample", "fields": [{"name": "notes", "type": "string"},
                                                         {"name": "words", "type": "integer"}]})
        create_collection(ctx, {"name": "bench", "schemas": ["sample"]})
    with db.session() as s, s.begin():
        discovery.refresh(s, Path(project.root) / "plugins")
    where = workflows.folder(Path(project.root))
    where.mkdir(exist_ok=True)
    (where / "count-words.yaml").write_text(yaml.safe_dump(WORKFLOW, sort_keys=False))
    with db.session() as s:
        wf = workflows.find(s, Path(project.root), "count-words")
    if wf.problems:
        raise SystemExit(f"the workflow has problems: {wf.problems}")


def queue_runs(project: Project, db: Database, n: int) -> list[str]:
    """Create ``n`` records in one transaction with their runs queued in it; returns the ids."""
    ids: list[str] = []
    with db.session() as s, s.begin():
        write_lock(s)
        ctx = ctx_for(project, s)
        for start in range(0, n, SLICE):
            rows = [{"schema_name": "sample", "data": {"notes": notes(i)}} for i in range(start, min(n, start + SLICE))]
            ids += bulk.bulk_create_records(ctx, "bench", rows)
        queued = len(triggers.on_changes(ctx, Path(project.root)).jobs)
    if queued != n:
        raise SystemExit(f"{n} records queued {queued} runs")
    return ids


def timed(step: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    return result, time.perf_counter() - wall, time.process_time() - cpu


class Statements:
    """Counts the SQL statements ``db`` sends (``before_cursor_execute``)."""

    def __init__(self, db: Database) -> None:
        self.count = 0
        event.listen(db.engine, "before_cursor_execute", self._seen)

    def _seen(self, *_: Any) -> None:
        self.count += 1

    def since(self, start: int) -> int:
        return self.count - start


def bare_updates(project: Project, db: Database, ids: list[str]) -> None:
    """One ``update_record`` of ``words`` per record, one transaction each."""
    for i, record_id in enumerate(ids):
        with db.session() as s, s.begin():
            write_lock(s)
            update_record(ctx_for(project, s), record_id, {"data": {"words": 1_000_000 + i}})


def check_drain(db: Database, tally: worker.Tally, ids: list[str]) -> None:
    """Every run ran and completed, and every record holds its word count."""
    n = len(ids)
    if (tally.ran, tally.completed) != (n, n):
        raise SystemExit(f"the drain ran {tally.response()}, expected {n} completed runs")
    with db.session() as s:
        statuses = dict(s.execute(select(Job.status, func.count()).group_by(Job.status)).all())
        if statuses != {"completed": n}:
            raise SystemExit(f"runs by status after the drain: {statuses}")
        schema_id = s.scalar(select(Record.schema_id).where(Record.id == ids[0]))
        assert schema_id is not None
        words = SchemaCache(s).meta(schema_id).by_name["words"].id
        got = dict(s.execute(select(Record.id, Record.data)).all())
    wrong = [i for i, record_id in enumerate(ids) if got[record_id].get(words) != len(notes(i).split())]
    if wrong:
        raise SystemExit(f"{len(wrong)} record(s) without their word count, e.g. record {ids[wrong[0]]}")


def ab_chain(project: Project, db: Database, n: int, slices: int) -> dict[bool, tuple[float, float, int]]:
    """Drain ``n`` new runs in ``2 * slices`` alternating slices with and without the chained
    claim; returns chained → (wall s, CPU s, runs)."""
    queue_runs(project, db, n)
    per = max(1, n // (2 * slices))
    totals: dict[bool, list[float]] = {True: [0.0, 0.0, 0], False: [0.0, 0.0, 0]}
    for i in range(2 * slices):
        chained = i % 4 in (0, 3)  # A B B A: a drift in the load falls on both alike
        with drain_module.Drain(chain=db if chained else None) as drain:
            wall, cpu = time.perf_counter(), time.process_time()
            ran = sum(execution.execute_next(db, project, drain=drain) is not None for _ in range(per))
            spent = (time.perf_counter() - wall, time.process_time() - cpu)
        totals[chained][0] += spent[0]
        totals[chained][1] += spent[1]
        totals[chained][2] += ran
    with db.session() as s:
        failed = s.scalar(select(func.count()).select_from(Job).where(Job.status.not_in(("completed", "pending"))))
    if failed:
        raise SystemExit(f"{failed} run(s) of the A/B drain did not complete")
    return {k: (v[0], v[1], int(v[2])) for k, v in totals.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000, help="records created, so runs queued and drained")
    parser.add_argument("--ab-chain", type=int, default=0, metavar="SLICES",
                        help="also time the chained claim against a claim in its own commit (see above)")
    parser.add_argument("--plugin-runs", type=int, default=1000,
                        help="runs of each plugin workflow drained warm, and of the built-in one beside them (0: none)")
    parser.add_argument("--cold-runs", type=int, default=50, help="runs of each plugin workflow drained cold")
    parser.add_argument("--batched-runs", type=int, default=10_000,
                        help="runs of each batch plugin workflow drained in batches")
    args = parser.parse_args()
    n = args.records

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    with project_db() as (project, db):
        set_up(project, db)
        say(f"creating {n:,} records with their runs queued …")
        ids = queue_runs(project, db, n)
        statements = Statements(db)
        say(f"draining {n:,} runs …")
        start = statements.count
        tally, drain_wall, drain_cpu = timed(lambda: worker.for_database(db, project).drain(wait=True))
        drain_sql = statements.since(start)
        check_drain(db, tally, ids)
        say(f"{n:,} bare updates …")
        start = statements.count
        _, base_wall, base_cpu = timed(lambda: bare_updates(project, db, ids))
        base_sql = statements.since(start)
        ab = {}
        if args.ab_chain:
            say(f"A/B of the chained claim over {n:,} more runs …")
            ab = ab_chain(project, db, n, args.ab_chain)
        plugin_lines = automation_plugins.measure(project, db, args.plugin_runs, args.cold_runs, args.batched_runs,
                                                  say) \
            if args.plugin_runs else []

    rate, rate_cpu = n / drain_wall, n / drain_cpu
    overhead = (drain_wall - base_wall) / n * 1e3
    overhead_cpu = (drain_cpu - base_cpu) / n * 1e3
    lines = [
        (f"drain {n:,} runs (worker.drain, as POST /jobs/drain)", f"{rate:,.0f} runs/s", f"[{rate_cpu:,.0f}]",
         f"target >= {RUNS_TARGET:,.0f} runs/s: {'met' if rate >= RUNS_TARGET else 'missed'}"),
        ("  per run", f"{drain_wall / n * 1e3:.3f} ms", f"[{drain_cpu / n * 1e3:.3f}]", "no target"),
        (f"baseline: {n:,} bare update_record of words, 1 transaction each", f"{n / base_wall:,.0f} updates/s",
         f"[{n / base_cpu:,.0f}]", "no target"),
        ("  per update", f"{base_wall / n * 1e3:.3f} ms", f"[{base_cpu / n * 1e3:.3f}]", "no target"),
        ("per-run overhead (run - bare update)", f"{overhead:.3f} ms", f"[{overhead_cpu:.3f}]", "no target"),
        ("  ratio run / bare update", f"{drain_wall / base_wall:.1f}x", f"[{drain_cpu / base_cpu:.1f}x]",
         "no target"),
        ("SQL statements per run / per bare update", f"{drain_sql / n:.1f} / {base_sql / n:.1f}", "", "no target"),
    ]
    if ab:
        (cw, cc, cn), (ow, oc, on) = ab[True], ab[False]
        lines += [
            (f"A/B, {cn:,} runs claimed by the previous run's commit", f"{cw / cn * 1e3:.3f} ms", f"[{cc / cn * 1e3:.3f}]",
             "no target"),
            (f"A/B, {on:,} runs claimed in their own commit", f"{ow / on * 1e3:.3f} ms", f"[{oc / on * 1e3:.3f}]",
             "no target"),
            ("  ratio chained / own commit", f"{cw / cn / (ow / on):.2f}x", f"[{cc / cn / (oc / on):.2f}x]",
             "no target"),
        ]
    print(f"bench/automation.py --records {n:,}: in process, SQLite; 1-step workflow (benchbook.text-stats, save "
          f"into an integer field) triggered by record_created; wall clock, CPU time in brackets "
          f"(Python {sys.version.split()[0]}, cpus: {os.cpu_count()}, load average now: {os.getloadavg()[0]:.1f})")
    lines += plugin_lines
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    for line in lines:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(line[:3], widths, strict=True)) + f"  {line[3]}")


if __name__ == "__main__":
    main()
