"""The run worker across app instances on one SQLite file: the server's worker drains after each
change and polls for runs queued elsewhere, one worker at a time through the lease, recovery of
runs a crash left running, a stop between steps, and the CLI import draining in-process."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from starlette.testclient import TestClient

from benchbook.cli.main import build_cli
from benchbook.http.app import create_app
from benchbook.persistence.tables import Job, WorkerLease, utcnow
from benchbook.runner import queue, worker
from benchbook.settings.config import Project
from tests.runner.automation_helpers import GATE_PLUGIN, SDK_MANIFEST, wait_file, wait_for
from tests.runner.rawplugin import folder
from tests.waiting import HANG

STATS = {"record_schema": "sample", "triggers": {"record_created": {}, "manual": {}},
         "steps": [{"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
         "save": {"words": "stats.words"}}


class Client:
    """An app instance on the project over ASGI: ``ok(method, path, status, **kw)``."""

    def __init__(self, client: TestClient, app: Any) -> None:
        self.client, self.app = client, app

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        r = self.client.request(method, "/api" + path, **kw)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return None if r.status_code == 204 else r.json()

    @property
    def holder(self) -> str:
        return worker.for_database(self.app.services.db, self.app.services.project).holder


@contextmanager
def instance(project: Project, *, serving: bool) -> Iterator[Client]:
    """An app on ``project`` (``serving``: as ``benchbook serve`` builds it), started and stopped."""
    app = create_app(project, resume_history=serving)
    try:
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            yield Client(client, app)
    finally:
        app.services.db.engine.dispose()


def lab(project: Project, gate: bool = False) -> None:
    """A sample schema (notes, words) in collection ``lab``, the count workflow, plugins found."""
    if gate:
        folder(project.root / "plugins", "gate", GATE_PLUGIN, manifest=SDK_MANIFEST)
    with instance(project, serving=False) as c:
        c.ok("POST", "/schemas", 201, json={"name": "sample", "fields": [
            {"name": "notes", "type": "string"}, {"name": "words", "type": "integer"}]})
        c.ok("POST", "/collections", 201, json={"name": "lab", "schemas": ["sample"]})
        c.ok("POST", "/plugins/refresh")
    (project.root / "workflows" / "count.yaml").write_text(yaml.safe_dump({"name": "count", **STATS}))


def held_workflow(project: Project, marks: Path, name: str = "held") -> None:
    """Workflow ``name``: a gate step waiting for ``marks``/open, then a count step."""
    (project.root / "workflows" / f"{name}.yaml").write_text(yaml.safe_dump({
        "name": name, "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "wait", "plugin": "gate", "config": {"wait": True}, "inputs": {"folder": str(marks)}},
                  {"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
        "save": {"words": "stats.words"}}))


def record(c: Client, notes: str = "a b") -> dict[str, Any]:
    return c.ok("POST", "/collections/lab/records", 201, json={"schema_name": "sample", "data": {"notes": notes}})


def test_the_server_worker_runs_what_a_change_queued_without_being_asked(tmp_project: Project) -> None:
    lab(tmp_project)
    with instance(tmp_project, serving=True) as server:
        rec = record(server, "one two three")
        [job] = server.ok("GET", "/jobs")
        job = wait_for(server, job["id"], "completed")
        assert f"started by worker {server.holder}" in job["log"]
        assert server.ok("GET", f"/records/{rec['id']}")["data"]["words"] == 3


def test_runs_queued_by_another_instance_are_picked_up_by_the_server_within_a_poll(
        tmp_project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab(tmp_project, gate=True)
    held_workflow(tmp_project, tmp_path)
    with instance(tmp_project, serving=True) as server, instance(tmp_project, serving=False) as cli:
        assert queue.live_holder(server.app.services.db.engine) == server.holder
        rec = record(cli, "a b")  # another session's change: it leaves the run to the server
        [job] = cli.ok("GET", "/jobs")
        job = wait_for(cli, job["id"], "completed")
        assert f"started by worker {server.holder}" in job["log"]
        assert cli.ok("GET", f"/records/{rec['id']}")["data"]["words"] == 2
        # a drain asked of the other instance waits for the server and reports how the runs ended:
        # the run is held at its gate until that drain has seen it waiting (it counts the runs
        # waiting when it starts), however soon the server takes it
        cli.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
        seen_active = queue.active_ids

        def active_then_open(s: Any) -> list[str]:
            active: list[str] = seen_active(s)
            (tmp_path / "open").touch()
            return active
        monkeypatch.setattr(queue, "active_ids", active_then_open)
        assert cli.ok("POST", "/jobs/drain") == {"ran": 1, "completed": 1, "failed": 0, "cancelled": 0}


def test_two_servers_on_one_file_never_run_runs_at_once_and_the_second_takes_over(tmp_project: Project) -> None:
    lab(tmp_project, gate=True)
    (tmp_project.root / "workflows" / "slow.yaml").write_text(yaml.safe_dump({
        "name": "slow", "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "g", "plugin": "gate", "config": {"sleep": 0.2}, "inputs": {}}]}))
    with ExitStack() as stack:
        first = stack.enter_context(instance(tmp_project, serving=True))
        with instance(tmp_project, serving=True) as second:
            assert queue.live_holder(first.app.services.db.engine) == first.holder != second.holder
            rec = record(second, "x")
            ids = [c.ok("POST", "/workflows/slow/run", 201, json={"record_id": rec["id"]})["id"]
                   for c in (first, second, second, first)]
            jobs = [wait_for(second, i, "completed") for i in ids]
            assert all(f"started by worker {first.holder}" in j["log"] for j in jobs)
            spans = sorted((j["started_at"], j["finished_at"]) for j in jobs)
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans  # one at a time
            assert queue.live_holder(second.app.services.db.engine) == first.holder
            stack.close()  # the first server stops and gives the lease up; the second goes on
            rec = record(second, "y z")
            [job] = second.ok("GET", "/jobs", params={"record_id": rec["id"]})
            job = wait_for(second, job["id"], "completed")
            assert f"started by worker {second.holder}" in job["log"]
            assert queue.live_holder(second.app.services.db.engine) == second.holder


def test_a_second_server_starting_leaves_the_first_ones_run_alone(tmp_project: Project, tmp_path: Path) -> None:
    lab(tmp_project, gate=True)
    held_workflow(tmp_project, tmp_path)
    with instance(tmp_project, serving=True) as first:
        rec = record(first, "a b")
        job = first.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
        wait_file(tmp_path / "started")
        with instance(tmp_project, serving=True) as second:
            assert second.ok("GET", f"/jobs/{job['id']}")["status"] == "running"  # not recovered
        (tmp_path / "open").touch()
        assert wait_for(first, job["id"], "completed")["status"] == "completed"


def _crashed(project: Project, *, lease_expired: bool) -> tuple[str, str]:
    """A run left ``running`` by a worker that died holding the lease (expired, or expiring a
    day from now: :func:`_expire` ends it when the test says so) and a run waiting behind it."""
    with instance(project, serving=False) as c:
        db = c.app.services.db
        with db.session() as s, s.begin():
            s.add(WorkerLease(name=queue.LEASE, holder="gone:1:dead", expires_at=utcnow() + timedelta(minutes=1)))
        rec = record(c)  # its own run waits too: the dead worker held the queue
        with db.session() as s, s.begin():
            dead = queue.enqueue(s, workflow="count", record_id=rec["id"], schema_name="sample", trigger="manual")
            dead.status, dead.started_at = "running", utcnow()
            dead.step_executions = [{"step_id": "stats", "status": "completed"}]
            waiting = queue.enqueue(s, workflow="count", record_id=rec["id"], schema_name="sample",
                                    trigger="manual")
            lease = s.get(WorkerLease, queue.LEASE)
            assert lease is not None
            lease.expires_at = utcnow() + (timedelta(seconds=-1) if lease_expired else timedelta(days=1))
        return dead.id, waiting.id


def _expire(c: Client) -> None:
    """The queue's lease runs out now (its holder did not renew it)."""
    with c.app.services.db.session() as s, s.begin():
        lease = s.get(WorkerLease, queue.LEASE)
        assert lease is not None
        lease.expires_at = utcnow() - timedelta(seconds=1)


def test_a_run_left_running_by_a_crash_is_marked_interrupted_when_the_server_starts(tmp_project: Project) -> None:
    lab(tmp_project)
    dead, waiting = _crashed(tmp_project, lease_expired=True)
    with instance(tmp_project, serving=True) as server:
        job = server.ok("GET", f"/jobs/{dead}")  # at start-up, before anything else
        assert job["status"] == "failed" and job["finished_at"]
        assert job["error_details"]["kind"] == "interrupted"
        assert "interrupted" in job["error"] and "1 step(s) had finished" in job["error"]
        assert wait_for(server, waiting, "completed")["status"] == "completed"


def test_a_crashed_workers_lease_is_taken_over_once_it_expires(tmp_project: Project) -> None:
    lab(tmp_project)
    dead, waiting = _crashed(tmp_project, lease_expired=False)
    with instance(tmp_project, serving=True) as server:
        assert server.ok("GET", f"/jobs/{dead}")["status"] == "running"  # its holder may still be alive
        assert server.ok("GET", f"/jobs/{waiting}")["status"] == "pending"
        _expire(server)  # now, and only now, may the server take the lease over
        assert wait_for(server, waiting, "completed")["status"] == "completed"
        assert server.ok("GET", f"/jobs/{dead}")["error_details"]["kind"] == "interrupted"
        assert queue.live_holder(server.app.services.db.engine) == server.holder


def test_a_server_stopping_ends_the_run_in_progress_before_its_next_step(
        tmp_project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab(tmp_project, gate=True)
    held_workflow(tmp_project, tmp_path)
    real_stop = worker.Worker.stop
    with instance(tmp_project, serving=True) as server:
        serving = worker.for_database(server.app.services.db, tmp_project)

        def stop(self: worker.Worker, timeout: float = 10.0) -> None:
            if self is not serving:
                real_stop(self, timeout)
                return
            self._stopping.set()  # asked to stop (what stop does first), and only then
            (tmp_path / "open").touch()  # does the step in progress finish
            real_stop(self, HANG)  # the run ends before the server does
        monkeypatch.setattr(worker.Worker, "stop", stop)
        rec = record(server, "a b")
        job = server.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
        wait_file(tmp_path / "started")
    with instance(tmp_project, serving=False) as c:
        after = c.ok("GET", f"/jobs/{job['id']}")
        assert after["status"] == "failed" and after["error_details"]["kind"] == "interrupted"
        assert after["error_details"]["step"] == "stats"
        assert [s["status"] for s in after["step_executions"]] == ["completed"]


def test_the_cli_import_runs_the_triggered_runs_unless_a_server_holds_the_queue(
        tmp_project: Project, tmp_path: Path) -> None:
    lab(tmp_project)
    csv_file = tmp_path / "samples.csv"
    csv_file.write_text("notes\none two\nthree four five\n")
    cli = ["--project", str(tmp_project.root), "import", str(csv_file), "--collection", "lab", "--schema", "sample"]
    out = CliRunner().invoke(build_cli(), cli, catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "workflow runs: 2 queued, 2 ran here (2 completed, 0 failed, 0 cancelled)" in out.output
    with instance(tmp_project, serving=False) as c:
        assert sorted(r["data"]["words"] for r in c.ok("GET", "/collections/lab/records")["items"]) == [2, 3]
        db = c.app.services.db
        with db.session() as s, s.begin():
            s.add(WorkerLease(name=queue.LEASE, holder="server:1:alive", expires_at=utcnow() + timedelta(minutes=5)))
    out = CliRunner().invoke(build_cli(), cli, catch_exceptions=False)
    assert "2 queued, 0 ran here" in out.output and "the server running this project runs the others" in out.output
    with instance(tmp_project, serving=False) as c:
        assert c.ok("GET", "/jobs/count", params={"status": "pending"}) == {"count": 2}
        with c.app.services.db.session() as s:
            assert s.query(Job).filter(Job.status == "completed").count() == 2
