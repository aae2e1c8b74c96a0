"""History benchmarks (issue: "History you can trust"), run on demand, never in the tests.

    python bench/history.py [--records 100000]

Prints, measured in the same run on fresh SQLite projects:
- the import rate through the domain's bulk path (``bulk_create_records``, one transaction) with
  history, and without it (the same path with the ``create`` entries neither built nor inserted,
  switched off in this process only), and their ratio (target >= 0.6);
- the time to delete every record of the collection as one batch (``delete_by_query``, what
  ``DELETE /collections/{name}/records`` runs) and bring them all back with restore-all
  (``restore_all``, what ``POST /audit/restore-all`` runs) (target < 10 s at 100,000 records);
- the room history takes, from SQLite's ``dbstat``: ``audit_entries`` and its indexes after the
  import (one ``create`` entry a record) and again after the delete and restore-all (a
  ``delete`` and a ``restore`` entry more), each against a bare JSON table of the same rows
  (``sqlite3`` ``executemany`` of ``json.dumps`` of the values, written in the same run);
- edits: ``--edits`` records (default 10,000) edited once each through ``update_record`` (what
  ``PATCH /records/{id}`` runs), in one transaction: the rate, and the bytes of history each
  edit adds (its own entry, and the record's values copied into its create entry by its first
  change, migration 0017);
- with ``--postgres URL`` (a server where the URL's user may create databases): the same import
  into a new database there (dropped afterwards), and ``audit_entries``' and ``records``' table
  and index sizes (``pg_table_size``, ``pg_indexes_size``).

Everything is timed in process (the domain called from this script on a SQLite file; no HTTP).
Each line ends with its target and the verdict, ``met`` or ``missed`` (the delete + restore-all
target is judged at 100,000 records only); the history targets this script does not measure
yet are listed at the end as such.
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries as audit
from benchbook.domain.history.restore_all import restore_all
from benchbook.domain.records import bulk
from benchbook.domain.records.deleting import delete_by_query
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.writes import update_record
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import Record
from benchbook.settings.config import Project

FIELDS = [{"name": "n", "type": "integer"}, {"name": "x", "type": "float"}, {"name": "label", "type": "string"},
          {"name": "day", "type": "date"}]
SLICE = 50_000
NOT_MEASURED = [
    "GET /api/audit/events first page at 1,000,000 history entries: p50 < 20 ms",
    "GET /api/records/{id}/audit (a record's history) at 1,000,000 history entries: p50 < 20 ms",
]


@contextmanager
def project_ctx() -> Iterator[tuple[Ctx, Session]]:
    with tempfile.TemporaryDirectory(prefix="benchbook-bench-") as folder:
        project = Project.init(folder)
        db = open_database(project.database_url)
        with db.session() as session:
            yield Ctx(session=session, actor="bench", files_dir=project.files_dir), session
        db.engine.dispose()


def rows(start: int, stop: int) -> list[dict[str, Any]]:
    return [{"schema_name": "item", "data": {"n": i, "x": i / 7, "label": f"item {i}",
                                             "day": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"}}
            for i in range(start, stop)]


def load(ctx: Ctx, session: Session, n: int) -> tuple[float, float]:
    """(wall, CPU) records per second of one import batch of ``n`` records."""
    with session.begin():
        create_schema(ctx, {"name": "item", "fields": FIELDS})
        create_collection(ctx, {"name": "bench", "schemas": ["item"]})
    wall, cpu = time.perf_counter(), time.process_time()
    with session.begin():
        ctx.batch_id = audit.open_batch(ctx, "import", label="bench").id
        for start in range(0, n, SLICE):
            bulk.bulk_create_records(ctx, "bench", rows(start, min(n, start + SLICE)))
    ctx.batch_id = None
    return n / (time.perf_counter() - wall), n / (time.process_time() - cpu)


def history_bytes(session: Session) -> tuple[int, int]:
    """``(audit_entries, its indexes)`` in bytes, from ``dbstat`` (the session's SQLite file)."""
    rows = session.execute(text("SELECT s.name, sum(s.pgsize) FROM dbstat s JOIN sqlite_schema m ON m.name = s.name "
                                "WHERE m.tbl_name = 'audit_entries' GROUP BY s.name")).all()
    session.rollback()  # a read: end it, the next step begins its own transaction
    table = sum(int(size) for name, size in rows if name == "audit_entries")
    return table, sum(int(size) for name, size in rows if name != "audit_entries")


def bare_bytes(n: int) -> int:
    """Bytes (``dbstat``) of the same ``n`` rows in one bare JSON table (id, values)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE rows (id TEXT PRIMARY KEY, data TEXT)")
        for start in range(0, n, SLICE):
            conn.executemany("INSERT INTO rows VALUES (?, ?)", ((f"R{start + i:025d}", json.dumps(r["data"]))
                                                                for i, r in enumerate(rows(start, min(n, start + SLICE)))))
        return int(conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'rows'").fetchone()[0])
    finally:
        conn.close()


def postgres_sizes(url: str, n: int) -> list[tuple[str, str, str, str]]:
    """Lines: table and index sizes after importing ``n`` records into a new database on the
    PostgreSQL server of ``url`` (created, then dropped)."""
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    name = f"benchbook_bench_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        db = open_database(make_url(url).set(database=name).render_as_string(hide_password=False))
        with tempfile.TemporaryDirectory(prefix="benchbook-bench-") as folder, db.session() as session:
            load(Ctx(session=session, actor="bench", files_dir=Path(folder)), session, n)
        with db.engine.connect() as conn:
            sizes = {t: conn.execute(text("SELECT pg_table_size(:t), pg_indexes_size(:t)"), {"t": t}).one()
                     for t in ("audit_entries", "records")}
        db.engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
    return [(f"PostgreSQL after the import: {t} + its indexes", f"{a / 1e6:,.1f} + {b / 1e6:,.1f} MB", "",
             "no target") for t, (a, b) in sizes.items()]


def timed(step: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = step()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def without_history() -> Any:
    """The bulk path with the ``create`` entries neither built nor inserted (this process only)."""
    return mock.patch.object(bulk._Bulk, "entries", lambda self, rows, now: [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3, help="imports each way, alternating; the best counts")
    parser.add_argument("--postgres", metavar="URL", help="also measure the history's size on this server")
    parser.add_argument("--edits", type=int, default=10_000, help="records edited once each, one by one")
    args = parser.parse_args()
    n = args.records
    with_runs, without_runs = [], []
    for _ in range(args.rounds):
        with project_ctx() as (ctx, session), without_history():
            without_runs.append(load(ctx, session, n))
        with project_ctx() as (ctx, session):
            with_runs.append(load(ctx, session, n))
    with project_ctx() as (ctx, session):
        load(ctx, session, n)
        after_import = history_bytes(session)

        def delete_all() -> int:
            with session.begin():
                return int(delete_by_query(ctx, "bench", RecordQuery(), force=True)["deleted"])

        def restore_everything() -> dict[str, Any]:
            with session.begin():
                return dict(restore_all(ctx))

        session.expunge_all()  # as in a fresh request
        deleted, delete_wall, delete_cpu = timed(delete_all)
        session.expunge_all()
        result, restore_wall, restore_cpu = timed(restore_everything)
        after_restore = history_bytes(session)

        def edit_some() -> int:
            with session.begin():
                ids = list(session.scalars(select(Record.id).order_by(Record.id).limit(args.edits)))
                for i, rid in enumerate(ids):
                    update_record(ctx, rid, {"data": {"x": -i - 0.5}})
                return len(ids)

        session.expunge_all()
        edited, edit_wall, edit_cpu = timed(edit_some)
        after_edits = history_bytes(session)
    bare = bare_bytes(n)
    with_h = (max(r[0] for r in with_runs), max(r[1] for r in with_runs))
    without_h = (max(r[0] for r in without_runs), max(r[1] for r in without_runs))
    ratio = with_h[0] / without_h[0]
    total = delete_wall + restore_wall
    lines = [
        ("import with history", f"{with_h[0]:,.0f} records/s", f"[{with_h[1]:,.0f}]", "no target"),
        ("import without history", f"{without_h[0]:,.0f} records/s", f"[{without_h[1]:,.0f}]", "no target"),
        ("ratio with / without", f"{ratio:.2f}", f"[{with_h[1] / without_h[1]:.2f}]",
         f"target >= 0.6: {'met' if ratio >= 0.6 else 'missed'}"),
        (f"delete {deleted:,} records as one batch", f"{delete_wall:.2f} s", f"[{delete_cpu:.2f}]", "no target"),
        (f"restore-all ({result['records']:,} back, {result['blocked']} blocked)", f"{restore_wall:.2f} s",
         f"[{restore_cpu:.2f}]", "no target"),
        ("delete + restore-all", f"{total:.2f} s", f"[{delete_cpu + restore_cpu:.2f}]",
         f"target < 10 s at 100,000: {'met' if total < 10 else 'missed'}" if n == 100_000 else
         "target < 10 s at 100,000: not judged at this size"),
        *((f"history ({what}): audit_entries + its indexes", f"{t / 1e6:,.1f} + {i / 1e6:,.1f} MB",
           f"[{t / bare:.2f}x + {i / bare:.2f}x the bare JSON table, {bare / 1e6:,.1f} MB]", "no target")
          for what, (t, i) in (("after the import", after_import), ("after delete + restore-all", after_restore))),
        (f"edit {edited:,} records one by one", f"{edited / edit_wall:,.0f} edits/s", f"[{edited / edit_cpu:,.0f}]",
         "no target"),
        ("history per edit (its entry, and the values copied into the create)",
         f"{(sum(after_edits) - sum(after_restore)) / max(edited, 1):,.0f} B", "[table and indexes]", "no target"),
        *(("not measured by this script", "—", "", f"target {target}") for target in NOT_MEASURED),
    ]
    if args.postgres:
        lines += postgres_sizes(args.postgres, n)
    print(f"bench/history.py --records {n:,}: in process, SQLite; wall clock, best of {args.rounds} alternating "
          "runs; CPU time in brackets")
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    for line in lines:
        print("  ".join(f"{cell:<{w}}" for cell, w in zip(line[:3], widths, strict=True)) + f"  {line[3]}")


if __name__ == "__main__":
    main()
