"""The automation switch (spec *Automation switch*, *Errors* 4–5, *Events* 4–5): stop and resume,
what paused refuses, the status with its stretch of work, and ``paused`` kept in benchbook.toml
across a restart."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from benchbook.http.app import create_app
from benchbook.runner import switch
from benchbook.settings.config import CONFIG_NAME, DEFAULT_CONFIG
from tests.conftest import statements_sent
from tests.runner.automation_helpers import STATS, auto, gate, runs, wait_file, wait_for, workflow

__all__ = ["auto", "gate"]  # fixtures


def _slow(api: Any, gate: Path) -> None:
    workflow(api, "held", {
        "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "wait", "plugin": "gate", "config": {"wait": True},
                   "inputs": {"folder": str(gate), "text": "record.notes"}},
                  {"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
        "save": {"summary": "wait.text", "words": "stats.words"}})


def test_the_status_of_an_idle_queue(api: Any, auto: dict[str, Any]) -> None:
    assert api.ok("GET", "/automation") == {"paused": False, "pending": 0, "running": 0, "cancelled": 0,
                                            "batch": None}


def test_stop_pauses_cancels_the_waiting_runs_and_stops_the_running_one_before_its_next_step(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    _slow(api, gate)
    rec = auto["make"]({"notes": "a b"})
    held = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    wait_file(gate / "started")
    waiting = [api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]}) for _ in range(2)]
    busy = api.ok("GET", "/automation")
    assert (busy["paused"], busy["pending"], busy["running"]) == (False, 2, 1)
    assert {k: busy["batch"][k] for k in ("pending", "succeeded", "failed")} == {"pending": 3, "succeeded": 0,
                                                                                "failed": 0}
    assert busy["batch"]["started_at"] == held["created_at"]
    stopped = api.ok("POST", "/automation/stop")
    assert (stopped["paused"], stopped["cancelled"], stopped["pending"], stopped["running"]) == (True, 2, 0, 1)
    assert [api.ok("GET", f"/jobs/{w['id']}")["status"] for w in waiting] == ["cancelled", "cancelled"]
    (gate / "open").touch()
    job = wait_for(api, held["id"], "cancelled")
    assert [s["status"] for s in job["step_executions"]] == ["completed", "cancelled"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["summary"] == "a b x"  # what it did stays
    assert api.ok("GET", "/automation") == {"paused": True, "pending": 0, "running": 0, "cancelled": 0,
                                            "batch": None}


def unnamed(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``jobs`` without ``record_name``, which follows the record's name as it is now."""
    return [{k: v for k, v in j.items() if k != "record_name"} for j in jobs]


def test_while_paused_edits_start_nothing_and_runs_by_hand_are_refused(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)
    rec = auto["make"]({"notes": "a"})
    api.ok("POST", "/jobs/drain")
    [done] = runs(api)
    api.ok("POST", "/automation/stop")
    auto["make"]({"notes": "b"})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "a b c"}})
    assert api.ok("POST", "/jobs/drain") == {"ran": 0, "completed": 0, "failed": 0, "cancelled": 0}
    assert unnamed(runs(api)) == unnamed([done])  # the record's name is read live: the edit renamed it
    manual = api.post("/workflows/count-words/run", json={"record_id": rec["id"]})
    assert manual.status_code == 409 and "automation is paused" in manual.json()["detail"]
    many = api.post("/workflows/count-words/run-many", json={"record_ids": [rec["id"]]})
    assert many.status_code == 409
    for path, body in ((f"/jobs/{done['id']}/rerun", None), ("/jobs/rerun", {"ids": [done["id"]]})):
        refused = api.post(path, json=body)
        assert refused.status_code == 422 and "automation is paused" in refused.json()["detail"], path
    assert unnamed(runs(api)) == unnamed([done])
    resumed = api.ok("POST", "/automation/resume")
    assert resumed["paused"] is False
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "d"}})  # triggers fire again
    api.ok("POST", "/jobs/drain")
    assert [j["trigger"] for j in runs(api)] == ["record_created", "record_updated"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["words"] == 1


def test_runs_waiting_when_paused_are_taken_again_after_resume(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", {**STATS, "triggers": {"manual": {}}})
    rec = auto["make"]({"notes": "a b"})
    api.ok("POST", "/automation/stop")
    # a run queued by another session before it saw the switch: waits while paused
    with api.app.services.db.session() as s, s.begin():
        from benchbook.runner import queue
        job_id = queue.enqueue(s, workflow="count-words", record_id=rec["id"], schema_name="sample",
                               trigger="manual").id
    assert api.ok("POST", "/jobs/drain")["ran"] == 0
    assert api.ok("GET", f"/jobs/{job_id}")["status"] == "pending"
    assert api.ok("GET", "/automation")["batch"]["pending"] == 1
    api.ok("POST", "/automation/resume")
    assert wait_for(api, job_id, "completed")["status"] == "completed"


def test_the_batch_counts_what_succeeded_and_failed_since_the_queue_last_was_empty(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "fails", {"record_schema": "sample", "triggers": {"manual": {}},
                            "steps": [{"id": "g", "plugin": "gate", "config": {"fail": True}, "inputs": {}}]})
    workflow(api, "ok", {"record_schema": "sample", "triggers": {"manual": {}},
                         "steps": [{"id": "g", "plugin": "gate", "inputs": {}}]})
    _slow(api, gate)
    second = gate / "second"
    second.mkdir()
    workflow(api, "held-too", {"record_schema": "sample", "triggers": {"manual": {}},
                               "steps": [{"id": "wait", "plugin": "gate", "config": {"wait": True},
                                          "inputs": {"folder": str(second)}}]})
    rec = auto["make"]({"notes": "n"})

    def run(name: str) -> dict[str, Any]:
        return api.ok("POST", f"/workflows/{name}/run", 201, json={"record_id": rec["id"]})  # type: ignore[no-any-return]
    wait_for(api, run("ok")["id"], "completed")  # a stretch that ended before: not counted
    held = run("held")
    wait_file(gate / "started")
    run("fails"), run("ok"), run("held-too")
    assert api.ok("GET", "/automation")["batch"] == {"started_at": held["created_at"], "pending": 4, "succeeded": 0,
                                                    "failed": 0, "cancelled": 0}
    (gate / "open").touch()
    wait_file(second / "started")  # the last one of the stretch runs now; the others have ended
    status = api.ok("GET", "/automation")
    assert (status["pending"], status["running"]) == (0, 1)
    assert status["batch"] == {"started_at": held["created_at"], "pending": 1, "succeeded": 2, "failed": 1,
                               "cancelled": 0}
    (second / "open").touch()
    api.ok("POST", "/jobs/drain")
    assert api.ok("GET", "/automation")["batch"] is None


def test_the_counts_and_the_batch_are_read_in_one_statement_so_they_never_disagree(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    """Read in several statements, a run finishing between them counted as both waiting and done
    (the CLI's bar showed 354/354 for 344 runs); one statement is one snapshot on both backends."""
    _slow(api, gate)
    rec = auto["make"]({"notes": "n"})
    held = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    wait_file(gate / "started")
    db = api.app.services.db
    with db.session() as s, statements_sent(db.engine) as sent:
        found = switch.status(s, api.project.root)
    (gate / "open").touch()
    wait_for(api, held["id"], "completed")
    assert len([q for q in sent if "jobs" in q]) == 1, sent  # the worker's lease renewals are not ours
    assert (found["pending"], found["running"], found["batch"]["pending"]) == (0, 1, 1)


def test_paused_is_kept_in_benchbook_toml_and_survives_a_restart(api: Any, auto: dict[str, Any]) -> None:
    config = api.project.root / CONFIG_NAME
    before = config.read_text()
    api.ok("POST", "/automation/stop")
    text = config.read_text()
    assert tomllib.loads(text)["automation"]["paused"] is True
    assert "# benchbook project settings" in text and "# name = " in text  # comments kept
    assert text == before.replace("paused = false", "paused = true")  # and everything else
    restarted = create_app(api.project)
    try:
        with TestClient(restarted, base_url="http://127.0.0.1") as client:
            assert client.get("/api/automation").json()["paused"] is True
            assert client.post("/api/automation/resume").json()["paused"] is False
    finally:
        restarted.services.db.engine.dispose()
    assert tomllib.loads(config.read_text())["automation"]["paused"] is False
    assert api.ok("GET", "/automation")["paused"] is False  # one switch for every session


def test_a_config_without_an_automation_table_gets_one(api: Any, auto: dict[str, Any]) -> None:
    config = api.project.root / CONFIG_NAME
    config.write_text('[user]\nname = "Ada"  # me\n')
    try:
        assert api.ok("GET", "/automation")["paused"] is False
        api.ok("POST", "/automation/stop")
        assert tomllib.loads(config.read_text()) == {"user": {"name": "Ada"}, "automation": {"paused": True}}
        assert '"Ada"  # me' in config.read_text()
    finally:
        config.write_text(DEFAULT_CONFIG)
