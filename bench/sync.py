"""Sync benchmark (issue 34), on demand: entries pushed and pulled per second over loopback HTTP
against the same writes made directly through the domain, the first sync (a copy) against an
import of the same records, and a sync with nothing to do.

    python bench/sync.py [--records 2000] [--copy 20000]

All on fresh SQLite projects in a temporary folder; the authority is served by uvicorn in a
thread of this process (as ``benchbook serve`` builds the app), devices are called in process
(``remote.syncing``), so the HTTP and the authority's work are what is timed.

- **push**: a device joined to an empty authority creates ``--records`` records offline (the
  bulk path, not timed), then one sync sends them: entries/s. **baseline**: the same records
  created on a fresh project through ``create_record``, 500 per transaction (a push batch's
  shape). Ratio push / baseline (target >= 0.5).
- **pull**: a second device, following since before the push, syncs and reads those entries
  through the feed (``--records`` entries): entries/s, ratio to the same baseline (target >= 0.5).
- **first sync**: ``--copy`` records imported on the authority (the bulk path), then a new,
  empty device joins and copies them (by snapshot: docs/sync.md *A first copy*): records/s,
  against ``import_table`` of the same rows into a fresh project (target >= 0.5x; both projects
  made before the clock starts), and this process's peak memory (RSS high-water, Linux) before
  and after it: the copy holds one page at a time, so it raises the peak little if at all.
- **no-op sync**: one more sync of that device with nothing to do: milliseconds (target < 50).

Each line prints its figure, the ratio or time against the target and ``met``/``missed``; a
ratio's CPU-time twin (this process's CPU seconds, every thread) moves less on a loaded machine.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import uvicorn

from benchbook.cli.serve import http_options
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.writes import create_record
from benchbook.domain.sync import devices
from benchbook.http.app import create_app
from benchbook.persistence.db import Database, open_database
from benchbook.remote import syncing
from benchbook.settings.config import Project

FIELDS = [{"name": "code", "type": "string"}, {"name": "site", "type": "string"}, {"name": "depth", "type": "float"}]


def _project(root: Path, catalog: bool) -> tuple[Project, Database]:
    project = Project.init(root)
    db = open_database(project.database_url)
    if catalog:
        with _write(db, project) as ctx:
            create_schema(ctx, {"name": "sample", "fields": FIELDS})
            create_collection(ctx, {"name": "lake", "schemas": ["sample"]})
    return project, db


@contextmanager
def _write(db: Database, project: Project) -> Iterator[Ctx]:
    with db.session() as s, s.begin():
        db.write_lock(s)
        yield Ctx(session=s, actor="bench", files_dir=project.files_dir)


def _rows(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"schema_name": "sample", "data": {"code": f"{tag}{i}", "site": "North", "depth": i / 10}}
            for i in range(n)]


def _invited(work: Path, authority: Project, adb: Database, name: str) -> tuple[Project, Database, str]:
    """A new, empty project ``name`` and an invite of the authority for it (not timed: an
    import's figure leaves the project's making out too)."""
    with _write(adb, authority) as ctx:
        invite = devices.invite(ctx.session, name)["invite"]
    project, db = _project(work / name, catalog=False)
    return project, db, invite


def _verdict(ok: bool) -> str:
    return "met" if ok else "missed"


class _Clock:
    """Wall and CPU seconds of a block (CPU: this process's, every thread: the authority served
    in a thread counts too). On a shared, loaded machine the CPU ratio moves less than the wall one."""

    def __enter__(self) -> Self:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def _peak_mib() -> float:
    """This process's peak resident memory so far (Linux: KiB), in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ratio(name: str, n: int, unit: str, timed: _Clock, base: _Clock, base_name: str) -> str:
    wall, cpu = base.wall / timed.wall, base.cpu / timed.cpu
    return (f"{name} {n:,} {unit}: {n / timed.wall:,.0f} {unit}/s, {wall:.2f}x {base_name} (CPU {cpu:.2f}x; "
            f"target >= 0.5x: {_verdict(wall >= 0.5)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000, help="entries pushed and pulled")
    parser.add_argument("--copy", type=int, default=20000, help="records copied by the first sync")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-sync-"))

    # baseline: the same creates through the domain, 500 per transaction
    base, bdb = _project(work / "baseline", catalog=True)
    rows = _rows(args.records, "B")
    with _Clock() as direct:
        for start in range(0, len(rows), 500):
            with _write(bdb, base) as ctx:
                for body in rows[start:start + 500]:
                    create_record(ctx, "lake", body)

    authority, adb = _project(work / "authority", catalog=True)
    with serve(authority) as url:
        laptop, ldb, invite = _invited(work, authority, adb, "laptop")
        syncing.connect(ldb, laptop, url, invite)
        field, fdb, invite = _invited(work, authority, adb, "field")
        syncing.connect(fdb, field, url, invite)
        with _write(ldb, laptop) as ctx:
            bulk_create_records(ctx, "lake", _rows(args.records, "L"))
        with _Clock() as pushed:
            summary = syncing.sync(ldb, laptop)
        assert summary["pushed"] == args.records, summary
        with _Clock() as pulled:  # a device following all along reads them through the feed
            summary = syncing.sync(fdb, field)
        assert summary["pulled"] == args.records, summary

        with _write(adb, authority) as ctx:
            bulk_create_records(ctx, "lake", _rows(args.copy, "C"))
        copier, cdb, invite = _invited(work, authority, adb, "copier")
        before = _peak_mib()
        with _Clock() as copied:
            syncing.connect(cdb, copier, url, invite)
        after = _peak_mib()
        with _Clock() as idle:
            syncing.sync(cdb, copier)

    imported_into, idb = _project(work / "imported", catalog=True)
    text = "code,site,depth\n" + "".join(f"I{i},North,{i / 10}\n" for i in range(args.copy))
    with _Clock() as imported, idb.session() as s, s.begin():
        import_table(Ctx(session=s, actor="bench", files_dir=imported_into.files_dir),
                     read_table(text.encode(), "rows.csv"), ImportOptions(collection="lake", schema="sample"))
    for d in (bdb, adb, ldb, fdb, cdb, idb):
        d.engine.dispose()

    print(f"baseline   {args.records:,} creates through the domain: {args.records / direct.wall:,.0f} entries/s")
    print(_ratio("push      ", args.records, "entries", pushed, direct, "baseline"))
    print(_ratio("pull      ", args.records, "entries", pulled, direct, "baseline"))
    print(f"import     {args.copy:,} records: {args.copy / imported.wall:,.0f} records/s")
    print(_ratio("first sync", args.copy, "records", copied, imported, "import")
          + f"; peak RSS {after:,.0f} MiB after it, {before:,.0f} MiB before")
    print(f"no-op sync at {args.copy + 2 * args.records:,} records: {idle.wall * 1000:.1f} ms "
          f"(target < 50 ms: {_verdict(idle.wall < 0.05)})")


@contextmanager
def serve(project: Project) -> Iterator[str]:
    """The app on ``project`` served by uvicorn in a thread on a free port; its base URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(project)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           **http_options(project.limits)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            sys.exit("uvicorn stopped before it started")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join()
        app.services.db.engine.dispose()


if __name__ == "__main__":
    main()
