"""Fault benchmark (issue #13): ``kill -9`` the server in the middle of long writes, restart it,
and check what is left. Run on demand (never in the tests).

    python bench/faults.py [--records 30000] [--import-rows 100000] [--edits 20000]
                           [--only import,delete,restore-all,workflow,conversion,plugin-orphan,backup] [--keep DIR]

Each scenario uses a fresh SQLite project served by ``benchbook serve`` (a uvicorn subprocess)
while a writer thread creates records one by one over HTTP; each create the server acknowledged
(201) is remembered. The server is killed with SIGKILL at a point where the long write is known
to be under way (the import: the WAL has grown 20 MB; a delete or restore-all: a writer has held
SQLite's write lock for 0.5 s without a break, with the request not yet answered; the workflow:
the run is ``running``; the conversion: it has converted some entries), then started again on the
same folder. Scenarios:

- **import**: ``benchbook import`` of ``--import-rows`` rows runs in its own process; the server
  and the import are both killed while it writes. The import must have left nothing (it is one
  transaction), no ``import`` batch either;
- **delete**: ``DELETE /collections/big/records?force=true`` over ``--records`` records; killed
  while the request runs: all of them live, or none, and as many ``delete`` entries as deleted;
- **restore-all**: those records deleted first, then ``POST /audit/restore-all``; killed while
  it runs: all of them back, or none;
- **workflow**: a manual run of a workflow whose one step (a tier-1 SDK plugin) sleeps 60 s;
  killed while the step runs: after the restart the run is ``failed`` with error kind
  ``interrupted`` (once the dead server's lease has expired, ``runner.worker.LEASE_TTL``);
- **conversion**: ``--edits`` whole history edits (written with the unchanged values kept, as
  older versions did); the server converts them at start-up; killed while converting: after the
  restart the conversion resumes by itself and ends with no whole edit left;
- **plugin-orphan**: a manual run of a workflow whose one step (a tier-1 SDK plugin) starts three
  processes (one in its process group, one in a new session, one daemon whose parent exits) and
  writes their pids to a file, then sleeps; the server (started with ``TMPDIR`` of its own) is
  killed once that file exists. Printed: what is left before the restart (the plugin must have
  died with the server; its three children are still running, the server's scratch area is
  left; ``benchbook doctor`` must report both) and after it (target: nothing: no process, no
  stale scratch area under ``.benchbook/scratch``, nothing in the server's ``TMPDIR``);
- **backup**: ``benchbook backup`` of the project while it is served, killed with SIGKILL once its
  database snapshot is written (the process waits there: :data:`PAUSED_BACKUP`, so the point is
  exact): what it left (its ``.benchbook-backup-*`` work folder, about the database's size, and its
  pointer in the project folder) is printed, ``benchbook doctor`` must report it and the next
  backup to the same folder remove it; killed again, ``doctor --fix`` must remove it. Target:
  nothing left.

After each restart: ``PRAGMA integrity_check`` is ``ok``, ``PRAGMA foreign_key_check`` finds
nothing, and every acknowledged create is there. Prints one line per check with ``ok`` or
``FAILED`` and the figures; the exit status is 1 when a check failed.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import obs_row, write_csv
from records import free_port, start

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.persistence.db import open_database
from benchbook.runner.plugin_host import scratch
from benchbook.runner.worker import LEASE_TTL
from benchbook.settings.config import Project

SLEEPER = '''
import time
from benchbook.plugin import Plugin

plugin = Plugin(id="sleeper", name="Sleeper", category="test", description="Sleeps, then counts.",
                inputs={"text": {"type": "string"}}, outputs={"n": {"type": "integer"}},
                config_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
                capabilities=[])


@plugin.run
def run(ctx, inputs, config):
    time.sleep(config.get("seconds", 60))
    return {"n": len(inputs.get("text") or "")}
'''
BENCHBOOK = [sys.executable, "-c", "from benchbook.cli.main import main; main()"]
PAUSED_BACKUP = """
import sys
from benchbook.cli.main import main
from benchbook.maintenance import backup as backups

snapshot = backups.sqlite_snapshot


def paused(*args, **kwargs):
    found = snapshot(*args, **kwargs)
    print("snapshot taken", flush=True)
    sys.stdin.readline()
    return found


backups.sqlite_snapshot = paused
main()
"""
"""``benchbook backup`` that says ``snapshot taken`` on stdout once its snapshot is written, then
waits for a line on stdin: where the backup scenario kills it."""
ORPHANER = '''
import json, os, subprocess, sys, time
from benchbook.plugin import Plugin

plugin = Plugin(id="orphaner", name="Orphaner", category="test", description="Starts processes, then sleeps.",
                inputs={"text": {"type": "string"}}, outputs={"n": {"type": "integer"}}, capabilities=[])


@plugin.run
def run(ctx, inputs, config):
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    same = subprocess.Popen(["sleep", "3000"], **quiet)
    away = subprocess.Popen(["sleep", "3000"], start_new_session=True, **quiet)
    middle = subprocess.run([sys.executable, "-c", "import subprocess as s; print(s.Popen(['sleep', '3000'], "
                             "start_new_session=True, stdout=s.DEVNULL, stderr=s.DEVNULL).pid)"],
                            capture_output=True, text=True, check=True)
    pids = {"plugin": os.getpid(), "same_group": same.pid, "new_session": away.pid, "daemon": int(middle.stdout)}
    with open("pids.json.part", "w") as fh:
        json.dump(pids, fh)
    os.rename("pids.json.part", "pids.json")
    time.sleep(600)
    return {"n": 0}
'''
"""A tier-1 SDK plugin whose step starts three processes (its group, a new session, a daemon),
writes their pids and its own to ``pids.json`` in its folder, then sleeps: the plugin-orphan case."""
PLOTS = 300


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Checks:
    """Check lines printed as they come; ``failed`` counts the ones that failed."""

    def __init__(self) -> None:
        self.failed = 0

    def __call__(self, scenario: str, what: str, ok: bool, figures: str = "") -> None:
        self.failed += not ok
        print(f"{scenario:<12} {what:<58} {'ok' if ok else 'FAILED'}  {figures}", flush=True)


class Server:
    """``benchbook serve`` on the project; ``kill()`` sends SIGKILL, ``start()`` starts it again."""

    def __init__(self, project: Project, log: Path) -> None:
        self.project, self.log = project, log
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env: dict[str, str] | None = None  # None: this process's environment

    def start(self) -> None:
        self.proc = start([*BENCHBOOK, "--project", str(self.project.root), "serve", "--port", str(self.port),
                           "--log-level", "WARNING"], f"{self.base}/api/health", self.log, self.env)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Writer(threading.Thread):
    """Creates ``ack`` records one by one until stopped (or the server is gone); ``acked`` holds
    the ids the server answered 201 for."""

    def __init__(self, base: str, plot: str) -> None:
        super().__init__(daemon=True)
        self.base, self.plot = base, plot
        self.acked: list[str] = []
        self.halt = threading.Event()

    def run(self) -> None:
        import random
        rnd = random.Random(3)
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self.halt.is_set():
                try:
                    r = client.post("/api/collections/ack/records", json={
                        "schema_name": "obs", "parent_record_id": self.plot, "data": obs_row(rnd, len(self.acked))})
                except httpx.HTTPError:
                    time.sleep(0.05)
                    continue
                if r.status_code == 201:
                    self.acked.append(r.json()["id"])


def make_project(root: Path, records: int) -> tuple[Project, list[str], str]:
    """Schemas ``plot`` → ``obs``; collection ``big`` with :data:`PLOTS` plots and ``records``
    obs; collection ``ack`` with one plot (the writer's). Returns the project, big's plots and
    ack's plot."""
    project = Project.init(root)
    db = open_database(project.database_url)
    try:
        with db.session() as s, s.begin():
            ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
            create_schema(ctx, {"name": "plot", "fields": [{"name": "name", "type": "string"}]})
            create_schema(ctx, {"name": "obs", "parent": "plot", "fields": [
                {"name": "n", "type": "integer"}, {"name": "x", "type": "float"}, {"name": "label", "type": "string"},
                {"name": "day", "type": "date"}]})
            create_collection(ctx, {"name": "big", "schemas": ["plot", "obs"]})
            create_collection(ctx, {"name": "ack", "schemas": ["plot", "obs"]})
            plots = bulk_create_records(ctx, "big", [{"schema_name": "plot", "data": {"name": f"p{i}"}}
                                                     for i in range(PLOTS)])
            import random
            rnd = random.Random(5)
            bulk_create_records(ctx, "big", [{"schema_name": "obs", "parent_record_id": plots[i % PLOTS],
                                              "data": obs_row(rnd, i)} for i in range(records)])
            ack_plot = bulk_create_records(ctx, "ack", [{"schema_name": "plot", "data": {"name": "ack"}}])[0]
    finally:
        db.engine.dispose()
    return project, plots, ack_plot


def db_path(project: Project) -> Path:
    return Path(project.database_url.removeprefix("sqlite:///"))


def query(project: Project, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db_path(project), timeout=60)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def live(project: Project, collection: str) -> int:
    return int(query(project, "SELECT count(*) FROM records r JOIN collections d ON d.id = r.dataset_id "
                     "WHERE d.name = ? AND r.deleted_at IS NULL", collection)[0][0])


def common_checks(name: str, project: Project, writer: Writer) -> None:
    integrity = query(project, "PRAGMA integrity_check")
    check(name, "integrity_check", integrity == [("ok",)], str(integrity[:3]))
    fks = query(project, "PRAGMA foreign_key_check")
    check(name, "foreign_key_check", fks == [], f"{len(fks)} problem(s)")
    have = {r[0] for r in query(project, "SELECT id FROM records WHERE deleted_at IS NULL AND dataset_id = "
                                         "(SELECT id FROM collections WHERE name = 'ack')")}
    missing = [i for i in writer.acked if i not in have]
    check(name, "every acknowledged create is there", not missing,
          f"{len(writer.acked)} acknowledged, {len(missing)} missing")


def wait_until(what: str, ready: Callable[[], bool], timeout: float = 300) -> float:
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(0.05)
    return time.monotonic() - started


def request_in_thread(base: str, method: str, url: str, **kw: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            box["response"] = httpx.request(method, base + url, timeout=600, **kw)
        except httpx.HTTPError as exc:
            box["error"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, box


def writing_for(project: Project, seconds: float) -> Callable[[], bool]:
    """True once some writer has held SQLite's write lock for ``seconds`` without a break (a
    ``BEGIN IMMEDIATE`` that does not wait fails every time meanwhile): the long write is under
    way (the writer thread's creates hold it for milliseconds). A transaction smaller than the page
    cache writes nothing to the WAL before its commit, so the WAL's size cannot tell."""
    conn = sqlite3.connect(db_path(project), timeout=0, isolation_level=None)
    since: list[float] = []

    def ready() -> bool:
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            since.clear()
            return False
        except sqlite3.OperationalError:
            since[:] = since or [time.monotonic()]
            return time.monotonic() - since[0] >= seconds
    return ready


def wal_grows(project: Project, by: int) -> Callable[[], bool]:
    """True once the WAL has grown ``by`` bytes past its size now: the long write is writing."""
    wal = Path(f"{db_path(project)}-wal")
    start_size = wal.stat().st_size if wal.exists() else 0
    return lambda: (wal.stat().st_size if wal.exists() else 0) > start_size + by


check = Checks()


# ------------------------------------------------------------------------------- scenarios
def scenario(args: argparse.Namespace, work: Path, name: str,
             act: Callable[[Project, Server, list[str]], Callable[[], None]]) -> None:
    """Fresh project, server and writer; ``act`` starts the long write and waits until it is
    under way, returning the checks to run after the restart; then kill -9, restart, check."""
    say(f"[{name}] building the project …")
    project, plots, ack_plot = make_project(work / name, args.records)
    server = Server(project, work / f"{name}-server.log")
    server.start()
    writer = Writer(server.base, ack_plot)
    writer.start()
    try:
        wait_until("the writer's first create", lambda: bool(writer.acked), 60)
        after = act(project, server, plots)
        say(f"[{name}] kill -9 the server")
        server.kill()
        writer.halt.set()
        writer.join(30)
        server.start()
        common_checks(name, project, writer)
        after()
    finally:
        writer.halt.set()
        server.stop()


def act_import(args: argparse.Namespace) -> Callable[[Project, Server, list[str]], Callable[[], None]]:
    def act(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
        path = write_csv(project.root / "import.csv", args.import_rows, plots)
        before = live(project, "big")
        proc = subprocess.Popen([*BENCHBOOK, "--project", str(project.root), "import", str(path), "-c", "big",
                                 "-s", "obs"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        waited = wait_until("the import writing", wal_grows(project, 20 << 20))
        say(f"[import] the import is writing after {waited:.1f} s: kill -9 it too")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

        def after() -> None:
            now = live(project, "big")
            batches = query(project, "SELECT count(*) FROM audit_batches WHERE kind = 'import'")[0][0]
            check("import", "no half-import: none of its rows, no import batch",
                  now == before and batches == 0, f"{now - before} of {args.import_rows:,} rows, {batches} batch(es)")
        return after
    return act


def act_delete(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
    total = live(project, "big")
    _, box = request_in_thread(server.base, "DELETE", "/api/collections/big/records", params={"force": "true"})
    held = writing_for(project, 0.5)
    waited = wait_until("the delete writing", lambda: bool(box) or held())
    if box:
        r = box.get("response")
        raise SystemExit(f"the delete answered before it could be killed: {r.status_code if r else box}")
    say(f"[delete] the delete is writing after {waited:.1f} s")

    def after() -> None:
        now = live(project, "big")
        deletes = query(project, "SELECT count(*) FROM audit_entries WHERE action = 'delete' AND entity_type = "
                                 "'record'")[0][0]
        check("delete", "all or nothing: every record live, or none", now in (0, total),
              f"{now:,} of {total:,} live; answered: {'response' in box}")
        check("delete", "one delete entry per deleted record", deletes == total - now, f"{deletes:,} entries")
    return after


def act_restore_all(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
    total = live(project, "big")
    r = httpx.delete(f"{server.base}/api/collections/big/records", params={"force": "true"}, timeout=600)
    assert r.status_code == 200, r.text
    _, box = request_in_thread(server.base, "POST", "/api/audit/restore-all", json={})
    held = writing_for(project, 0.5)
    waited = wait_until("restore-all writing", lambda: bool(box) or held())
    if box:
        r = box.get("response")
        raise SystemExit(f"restore-all answered before it could be killed: {r.status_code if r else box}: "
                         f"{r.text[:200] if r else ''}")
    say(f"[restore-all] restore-all is writing after {waited:.1f} s")

    def after() -> None:
        now = live(project, "big")
        check("restore-all", "all or nothing: every record back, or none", now in (0, total),
              f"{now:,} of {total:,} live; answered: {'response' in box}")
    return after


def act_workflow(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
    where = project.root / "plugins" / "sleeper"
    where.mkdir(parents=True, exist_ok=True)
    (where / "plugin.py").write_text(SLEEPER)
    (where / "plugin.toml").write_text('command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    (project.root / "workflows" / "slow.yaml").write_text(yaml.safe_dump({
        "name": "slow", "record_schema": "plot", "triggers": {"manual": {}},
        "steps": [{"id": "sleep", "plugin": "sleeper", "inputs": {"text": "record.name"}, "config": {"seconds": 60}}],
        "save": {"name": "sleep.n"}}, sort_keys=False))
    with httpx.Client(base_url=server.base, timeout=60) as client:
        r = client.post("/api/plugins/refresh")
        assert r.status_code == 200, r.text
        r = client.post("/api/workflows/slow/run", json={"record_id": plots[0]})
        assert r.status_code == 201, r.text
        job = r.json()["id"]
        wait_until("the run running", lambda: client.get(f"/api/jobs/{job}").json()["status"] == "running", 60)
    say(f"[workflow] run {job} is running")

    def after() -> None:
        with httpx.Client(base_url=server.base, timeout=60) as client:
            waited = wait_until("the run marked failed",
                                lambda: client.get(f"/api/jobs/{job}").json()["status"] != "running",
                                LEASE_TTL * 4)
            found = client.get(f"/api/jobs/{job}").json()
        kind = (found.get("error_details") or {}).get("kind")
        check("workflow", "the interrupted run is marked failed (interrupted)",
              found["status"] == "failed" and kind == "interrupted",
              f"{found['status']}/{kind} {waited:.1f} s after the restart (lease {LEASE_TTL:.0f} s)")
    return after


def act_conversion(args: argparse.Namespace) -> Callable[[Project, Server, list[str]], Callable[[], None]]:
    def act(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
        server.stop()
        # whole edits, as older versions wrote them: one per record, old and new holding every value
        conn = sqlite3.connect(db_path(project))
        with conn:
            conn.execute(
                "INSERT INTO audit_entries (id, action, entity_type, entity_id, timestamp, actor, changes, old_data, "
                "new_data, dataset_id, schema_id) "
                "SELECT 'W' || substr(e.id, 2), 'update', 'record', e.entity_id, e.timestamp, e.actor, "
                "json_array(json_object('field', 'x', 'label', 'x', 'dtype', 'float', 'before', 1, 'after', 2, "
                "'deleted', NULL)), json_set(e.new_data, '$.data.same', 'kept'), "
                "json_set(e.new_data, '$.data.same', 'kept'), e.dataset_id, e.schema_id "
                "FROM audit_entries e WHERE e.action = 'create' AND e.entity_type = 'record' LIMIT ?", (args.edits,))
        conn.close()
        say(f"[conversion] {args.edits:,} whole edits written; restarting the server (it converts at start-up)")
        server.start()
        with httpx.Client(base_url=server.base, timeout=60) as client:
            first = client.get("/api/audit/storage").json()
            wait_until("the conversion under way", lambda: (client.get("/api/audit/storage").json().get("done") or 0)
                       > 0, 120)
            during = client.get("/api/audit/storage").json()
        say(f"[conversion] converting: {during.get('done')} of {during.get('total')} (whole at first: "
            f"{first['whole_entries']})")

        def after() -> None:
            with httpx.Client(base_url=server.base, timeout=120) as client:
                left_at_restart = client.get("/api/audit/storage").json()["whole_entries"]
                waited = wait_until("the conversion finished",
                                    lambda: not client.get("/api/audit/storage").json()["converting"], 600)
                end = client.get("/api/audit/storage").json()
            written = during.get("total") or first["whole_entries"]
            check("conversion", "resumed after the restart and finished with no whole edit left",
                  0 < left_at_restart < written and end["whole_entries"] == 0,
                  f"{written:,} whole at first, {left_at_restart:,} at the restart, "
                  f"{end['whole_entries']} at the end ({waited:.1f} s)")
        return after
    return act


def started(pid: int) -> str | None:
    """``pid``'s start time (clock ticks since boot), None once it ended (gone or a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def act_plugin_orphan(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
    where = project.root / "plugins" / "orphaner"
    where.mkdir(parents=True, exist_ok=True)
    (where / "plugin.py").write_text(ORPHANER)
    (where / "plugin.toml").write_text('command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    (project.root / "workflows" / "orphans.yaml").write_text(yaml.safe_dump({
        "name": "orphans", "record_schema": "plot", "triggers": {"manual": {}},
        "steps": [{"id": "spawn", "plugin": "orphaner", "inputs": {"text": "record.name"}}],
        "save": {"name": "spawn.n"}}, sort_keys=False))
    temp = project.root.parent / "plugin-orphan-tmp"
    temp.mkdir(exist_ok=True)
    server.stop()
    server.env = {**os.environ, "TMPDIR": str(temp)}  # whatever benchbook puts in the temporary folder lands here
    server.start()
    with httpx.Client(base_url=server.base, timeout=60) as client:
        r = client.post("/api/plugins/refresh")
        assert r.status_code == 200, r.text
        r = client.post("/api/workflows/orphans/run", json={"record_id": plots[0]})
        assert r.status_code == 201, r.text
    wait_until("the plugin's pids", lambda: (where / "pids.json").exists(), 120)
    pids = {name: (pid, started(pid)) for name, pid in json.loads((where / "pids.json").read_text()).items()}
    say(f"[plugin-orphan] the step is running: {pids}")
    scratch_root = project.root / ".benchbook" / "scratch"

    def left_behind() -> tuple[dict[str, int], list[str], list[str]]:
        alive = {name: pid for name, (pid, start) in pids.items() if start is not None and started(pid) == start}
        areas = sorted(p.name for p in scratch_root.iterdir()) if scratch_root.is_dir() else []
        return alive, areas, sorted(p.name for p in temp.iterdir())

    def shown(found: tuple[dict[str, int], list[str], list[str]]) -> str:
        alive, areas, temps = found
        return (f"processes: {', '.join(f'{k} {v}' for k, v in alive.items()) or 'none'}; "
                f".benchbook/scratch: {', '.join(areas) or 'empty'}; TMPDIR: {', '.join(temps) or 'empty'}")

    killing = server.kill

    def kill_and_look() -> None:
        killing()
        plugin = {"plugin": pids["plugin"]}
        try:
            wait_until("the plugin to die with the server",
                       lambda: started(plugin["plugin"][0]) != plugin["plugin"][1], 60)
        except SystemExit:
            pass  # reported below
        found = left_behind()
        say(f"[plugin-orphan] left by kill -9: {shown(found)}")
        check("plugin-orphan", "kill -9 the server: its plugin dies with it", "plugin" not in found[0], shown(found))
        doctor = subprocess.run([*BENCHBOOK, "--project", str(project.root), "doctor"], capture_output=True,
                                text=True, check=False)
        reported = [name for name, pid in found[0].items() if f"pid {pid} " in doctor.stdout]
        check("plugin-orphan", "doctor reports the children and the scratch area left",
              sorted(reported) == sorted(found[0]) and ("scratch folder(s)" in doctor.stdout) == bool(found[1]),
              f"{len(reported)} of {len(found[0])} process(es) reported")
    server.kill = kill_and_look  # type: ignore[method-assign]

    def after() -> None:
        alive, _, temps = found = left_behind()
        stale = scratch.stale(scratch_root)  # the restarted server's own area, if it made one, is not stale
        say(f"[plugin-orphan] left after the restart: {shown(found)}")
        check("plugin-orphan", "after the restart: nothing left (processes, stale scratch, TMPDIR)",
              not alive and not stale and not temps, f"{shown(found)}; {len(stale)} stale area(s)")
    return after


def act_backup(project: Project, server: Server, plots: list[str]) -> Callable[[], None]:
    target = project.root.parent / f"{project.root.name}-backups"
    target.mkdir(exist_ok=True)
    root = str(project.root)

    def killed_backup(name: str) -> None:
        proc = subprocess.Popen([sys.executable, "-c", PAUSED_BACKUP, "--project", root, "backup", str(target / name)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        if proc.stdout.readline() != "snapshot taken\n":
            raise SystemExit(f"the backup ended before its snapshot was written (exit {proc.wait()})")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()

    def left_behind() -> tuple[list[Path], str]:
        left = sorted([*target.glob(".benchbook-backup-*"), *project.root.glob(".benchbook-backup-*")])
        size = sum(f.stat().st_size for p in left for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())
        return left, f"{len(left)} left ({size:,} bytes): {', '.join(p.name for p in left) or 'nothing'}"

    killed_backup("killed-1.tar")
    say(f"[backup] kill -9 the backup once its snapshot was written: {left_behind()[1]}")

    def after() -> None:
        left, figures = left_behind()
        check("backup", "kill -9 leaves its work folder (for the next steps)", bool(left), figures)
        doctor = subprocess.run([*BENCHBOOK, "--project", root, "doctor"], capture_output=True, text=True, check=False)
        check("backup", "doctor reports it", all(str(p) in doctor.stdout for p in left if p.is_dir()),
              f"exit {doctor.returncode}")
        done = subprocess.run([*BENCHBOOK, "--project", root, "backup", str(target / "next.tar")],
                              capture_output=True, text=True, check=False)
        left, figures = left_behind()
        check("backup", "the next backup removes it: nothing left", done.returncode == 0 and not left,
              f"exit {done.returncode}; {figures}")
        killed_backup("killed-2.tar")
        fixed = subprocess.run([*BENCHBOOK, "--project", root, "doctor", "--fix"], capture_output=True, text=True,
                               check=False)
        left, figures = left_behind()
        check("backup", "killed again, doctor --fix removes it: nothing left", not left,
              f"exit {fixed.returncode}; {figures}")
    return after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=30_000, help="obs records in collection big")
    parser.add_argument("--import-rows", type=int, default=100_000)
    parser.add_argument("--edits", type=int, default=20_000, help="whole history edits for the conversion")
    parser.add_argument("--only", default="import,delete,restore-all,workflow,conversion,plugin-orphan,backup",
                        help="comma-separated scenarios to run")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="benchbook-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    acts: dict[str, Callable[[Project, Server, list[str]], Callable[[], None]]] = {
        "import": act_import(args), "delete": act_delete, "restore-all": act_restore_all,
        "workflow": act_workflow, "conversion": act_conversion(args)}
    acts["plugin-orphan"] = act_plugin_orphan
    acts["backup"] = act_backup
    for name in args.only.split(","):
        try:
            scenario(args, work, name.strip(), acts[name.strip()])
        except SystemExit as exc:
            check(name.strip(), "scenario ran", False, str(exc))
    print(f"{check.failed} check(s) failed" if check.failed else "all checks passed")
    sys.exit(1 if check.failed else 0)


if __name__ == "__main__":
    main()
