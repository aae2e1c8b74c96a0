"""Workflow runs over HTTP with real plugins: what a run does (inputs, ``if``, saves, history,
log, steps, affected records, problems, failures) and every row of the run status table
(cancel, delete and rerun from each state)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.runner.automation_helpers import STATS, auto, gate, runs, wait_file, wait_for, workflow
from tests.waiting import HANG

__all__ = ["auto", "gate"]  # fixtures


def test_a_new_record_runs_its_workflow_once_and_the_run_tells_everything_it_did(
        api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)
    rec = auto["make"]({"notes": "one two three"})
    assert api.ok("POST", "/jobs/drain")["ran"] in (0, 1)  # it may already have run after the commit
    [job] = runs(api)
    assert job["status"] == "completed" and job["summary"] == "completed" and job["error"] is None
    assert (job["workflow_name"], job["record_id"], job["schema_name"], job["trigger"], job["depth"]) == (
        "count-words", rec["id"], "sample", "record_created", 0)
    assert job["trigger_detail"]["caused_by"] is None
    assert {"field": "notes", "label": "notes", "before": None, "after": "one two three", "watched": False} in \
        job["trigger_detail"]["changes"]
    assert job["created_at"] <= job["started_at"] <= job["finished_at"]
    [step] = job["step_executions"]
    assert (step["step_id"], step["plugin"], step["status"], step["error"]) == (
        "stats", "benchbook.text-stats", "completed", None)
    assert step["duration_ms"] >= 0 and step["started_at"] <= step["finished_at"]
    assert job["affected_records"] == [{"record_id": rec["id"], "schema_name": "sample", "action": "updated"}]
    assert "[stats] running benchbook.text-stats" in job["log"] and "[stats] saved chars, words" in job["log"]
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert (data["words"], data["chars"]) == (3, 13)
    # its writes are one workflow batch in history: label = the workflow, ref = the run
    batches = [e["batch"] for e in api.ok("GET", "/audit/events")["items"] if e["kind"] == "batch"]
    assert [(b["kind"], b["label"], b["ref"]) for b in batches] == [("workflow", "count-words", job["id"])]
    assert api.ok("GET", f"/jobs/{job['id'][:10]}")["id"] == job["id"]  # a prefix finds it


def test_inputs_are_literals_own_inherited_fields_the_record_id_and_earlier_outputs(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "inputs", {
        "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "lead", "plugin": "benchbook.text-stats", "inputs": {"text": "record.lead"}},
                  {"id": "ident", "plugin": "benchbook.text-stats", "inputs": {"text": "record.id"}},
                  {"id": "echo", "plugin": "gate", "inputs": {"text": "record.notes", "when": "record.taken_on"}},
                  {"id": "again", "plugin": "gate", "inputs": {"text": "echo.text", "when": "2024-02-29"}},
                  {"id": "literal", "plugin": "benchbook.text-stats", "inputs": {"text": "a b c d e"}}],
        "save": {"words": "lead.words", "chars": "ident.characters", "summary": "again.text",
                 "checksum": "echo.when", "site": "again.when"}})
    rec = auto["make"]({"notes": "hi", "taken_on": "2024-05-03"})
    job = api.ok("POST", "/workflows/inputs/run", 201, json={"record_id": rec["id"]})
    assert job["status"] == "pending" and job["trigger"] == "manual" and job["trigger_detail"] is None
    job = wait_for(api, job["id"], "completed", "failed")
    assert job["status"] == "completed", job
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert data["words"] == 2  # "Ada Lovelace", the study's field, inherited
    assert data["chars"] == 26  # the record's id
    assert data["summary"] == "hi x x"  # the first gate step's output fed the second
    assert (data["checksum"], data["site"]) == ("2024-05-03", "2024-02-29")  # dates reach a date input
    assert [s["status"] for s in job["step_executions"]] == ["completed"] * 5


def test_an_sdk_plugin_keeps_one_process_for_the_run_and_its_logs_reach_the_run_log(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "twice", {
        "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "one", "plugin": "gate", "inputs": {"text": "record.notes"}},
                  {"id": "two", "plugin": "gate", "inputs": {"text": "one.text"}}],
        "save": {"words": "one.pid", "chars": "two.pid"}})
    rec = auto["make"]({"notes": "hello"})
    first = api.ok("POST", "/workflows/twice/run", 201, json={"record_id": rec["id"]})
    job = wait_for(api, first["id"], "completed", "failed")
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert job["status"] == "completed" and data["words"] == data["chars"]  # one tier-1 process, both steps
    assert "[one] log: text is 'hello'" in job["log"] and "[two] log: text is 'hello x'" in job["log"]
    # a step's answer comes after the stderr lines it wrote reach the log (the process may serve
    # later runs warm: runner.plugin_host.pool, tests/runner/test_plugin_pool.py)
    assert "[one] stderr: a line on stderr" in job["log"] and "[two] stderr: a line on stderr" in job["log"]


def test_a_step_whose_if_the_record_does_not_match_is_skipped(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "north-only", {
        "record_schema": "sample", "triggers": {"record_created": {}},
        "steps": [{"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"},
                   "if": {"and": [{"field": "site", "op": "eq", "value": "North"},
                                  {"field": "lead", "op": "contains", "value": "ada"}]}},
                  {"id": "after", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
        "save": {"words": "stats.words", "chars": "after.characters"}})
    south = auto["make"]({"notes": "a b", "site": "South"})
    north = auto["make"]({"notes": "a b c", "site": "North"})
    api.ok("POST", "/jobs/drain")
    by_record = {j["record_id"]: j for j in runs(api)}
    assert [s["status"] for s in by_record[south["id"]]["step_executions"]] == ["skipped", "completed"]
    assert [s["status"] for s in by_record[north["id"]]["step_executions"]] == ["completed", "completed"]
    assert by_record[south["id"]]["status"] == "completed"
    assert api.ok("GET", f"/records/{south['id']}")["data"].get("words") is None
    assert api.ok("GET", f"/records/{south['id']}")["data"]["chars"] == 3
    assert api.ok("GET", f"/records/{north['id']}")["data"]["words"] == 3


def test_a_failing_step_fails_the_run_and_what_the_steps_before_it_did_stays(
        api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "two-steps", {
        "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "one", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}},
                  {"id": "two", "plugin": "benchbook.text-stats", "inputs": {"text": "record.site"}},
                  {"id": "three", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
        "save": {"words": "one.words", "chars": "two.characters"}})
    rec = auto["make"]({"notes": "a b"})  # no site: step two misses its required input
    job = api.ok("POST", "/workflows/two-steps/run", 201, json={"record_id": rec["id"]})
    job = wait_for(api, job["id"], "failed", "completed")
    assert job["status"] == "failed" and job["summary"] == "failed"
    assert job["error_details"]["kind"] == "invalid_input" and job["error_details"]["step"] == "two"
    assert "'text' is required" in job["error_details"]["message"]
    assert job["error"].startswith("step 'two' failed: ")
    assert [(s["step_id"], s["status"]) for s in job["step_executions"]] == [("one", "completed"), ("two", "failed")]
    assert job["step_executions"][1]["error"].startswith("invalid_input: ")
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert data["words"] == 2 and data.get("chars") is None


def test_a_plugin_error_and_a_refused_save_fail_the_step(api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "fails", {"record_schema": "sample", "triggers": {"manual": {}},
                            "steps": [{"id": "g", "plugin": "gate", "config": {"fail": True}, "inputs": {}}]})
    workflow(api, "bad-save", {"record_schema": "sample", "triggers": {"manual": {}},
                               "steps": [{"id": "g", "plugin": "gate", "inputs": {"text": "record.notes"}}],
                               "save": {"words": "g.text"}})
    rec = auto["make"]({"notes": "n"})
    failed = api.ok("POST", "/workflows/fails/run", 201, json={"record_id": rec["id"]})
    failed = wait_for(api, failed["id"], "failed", "completed")
    assert failed["error_details"] == {"kind": "plugin_error", "step": "g", "message": "asked to fail"}
    assert api.ok("POST", f"/jobs/{failed['id']}/cancel") == failed  # failed: returned as it is
    bad = api.ok("POST", "/workflows/bad-save/run", 201, json={"record_id": rec["id"]})
    bad = wait_for(api, bad["id"], "failed", "completed")
    assert bad["error_details"]["kind"] == "save_failed" and "words" in bad["error_details"]["message"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"].get("words") is None
    assert bad["affected_records"] == []


def test_a_step_reporting_problems_leaves_the_run_completed_with_problems(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "picky", {"record_schema": "sample", "triggers": {"manual": {}},
                            "steps": [{"id": "g", "plugin": "gate", "config": {"problems": 3}, "inputs": {}},
                                      {"id": "h", "plugin": "gate", "config": {"problems": 0}, "inputs": {}}]})
    rec = auto["make"]()
    job = api.ok("POST", "/workflows/picky/run", 201, json={"record_id": rec["id"]})
    job = wait_for(api, job["id"], "completed", "failed")
    assert (job["status"], job["problems"], job["summary"]) == ("completed", 3, "completed with 3 problems")
    assert [s["problems"] for s in job["step_executions"]] == [3, None]
    assert "[g] finished with 3 problem(s)" in job["log"]


def _held(api: Any, auto: dict[str, Any], gate: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A running two-step run held inside its first step (the gate), and its record."""
    workflow(api, "held", {
        "record_schema": "sample", "triggers": {"manual": {}},
        "steps": [{"id": "wait", "plugin": "gate", "config": {"wait": True},
                   "inputs": {"folder": str(gate), "text": "record.notes"}},
                  {"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
        "save": {"summary": "wait.text", "words": "stats.words"}})
    rec = auto["make"]({"notes": "a b"})
    job = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    wait_file(gate / "started")
    assert api.ok("GET", f"/jobs/{job['id']}")["status"] == "running"
    return job, rec


def test_cancel_a_waiting_run_never_starts_it_and_runs_go_one_at_a_time(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    held, rec = _held(api, auto, gate)
    waiting = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    behind = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    assert api.ok("GET", f"/jobs/{waiting['id']}")["status"] == "pending"  # one at a time
    cancelled = api.ok("POST", f"/jobs/{waiting['id']}/cancel")
    assert cancelled["status"] == "cancelled" and cancelled["finished_at"] and cancelled["started_at"] is None
    (gate / "open").touch()
    done = wait_for(api, held["id"], "completed")
    after = wait_for(api, behind["id"], "completed")
    assert done["finished_at"] <= after["started_at"]  # never two at once
    assert api.ok("GET", f"/jobs/{waiting['id']}")["started_at"] is None  # it never started
    assert api.ok("POST", f"/jobs/{done['id']}/cancel") == api.ok("GET", f"/jobs/{done['id']}")  # finished: as is


def test_cancel_a_running_run_stops_it_before_its_next_step_and_keeps_what_it_did(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    held, rec = _held(api, auto, gate)
    asked = api.ok("POST", f"/jobs/{held['id']}/cancel")
    assert (asked["status"], asked["cancel_requested"]) == ("running", True)  # the step in progress goes on
    assert asked["summary"] == "running (stops before its next step)"
    (gate / "open").touch()
    job = wait_for(api, held["id"], "cancelled")
    assert [(s["step_id"], s["status"]) for s in job["step_executions"]] == [("wait", "completed"),
                                                                           ("stats", "cancelled")]
    assert job["finished_at"] and "cancelled before step 'stats'" in job["log"]
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert data["summary"] == "a b x" and data.get("words") is None
    assert api.ok("POST", f"/jobs/{held['id']}/cancel")["status"] == "cancelled"  # finished: unchanged


def test_delete_a_run_in_each_state(api: Any, auto: dict[str, Any], gate: Path) -> None:
    held, rec = _held(api, auto, gate)
    waiting = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    api.ok("DELETE", f"/jobs/{waiting['id']}", 204)  # waiting: never starts
    api.ok("DELETE", f"/jobs/{held['id']}", 204)  # running: stops before its next step
    assert api.get(f"/jobs/{held['id']}").status_code == 404
    (gate / "open").touch()
    assert api.ok("POST", "/jobs/drain")["ran"] == 0
    assert runs(api) == []
    data = api.ok("GET", f"/records/{rec['id']}")["data"]
    assert data["summary"] == "a b x" and data.get("words") is None  # the first step's save stays
    workflow(api, "count-words", STATS)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"notes": "c d e"}})
    api.ok("POST", "/jobs/drain")
    [finished] = runs(api, workflow="count-words")
    api.ok("DELETE", f"/jobs/{finished['id']}", 204)  # finished: gone with its steps, its changes stay
    assert api.get(f"/jobs/{finished['id']}").status_code == 404
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["words"] == 3
    refs = [e["batch"]["ref"] for e in api.ok("GET", "/audit/events")["items"] if e["kind"] == "batch"]
    assert finished["id"] in refs and held["id"] in refs  # their history remains
    assert api.delete(f"/jobs/{finished['id']}").status_code == 404


def test_rerun_a_finished_run_queues_a_new_one_and_leaves_the_original(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)
    rec = auto["make"]({"notes": "a b"})
    api.ok("POST", "/jobs/drain")
    [original] = runs(api)
    again = api.ok("POST", f"/jobs/{original['id']}/rerun", 201)
    assert again["id"] != original["id"] and again["status"] == "pending"
    assert (again["workflow_name"], again["record_id"], again["trigger"]) == ("count-words", rec["id"], "manual")
    assert wait_for(api, again["id"], "completed")["status"] == "completed"
    assert api.ok("GET", f"/jobs/{original['id']}") == original
    api.ok("DELETE", f"/records/{rec['id']}", 204)
    gone = api.post(f"/jobs/{original['id']}/rerun")
    assert gone.status_code == 409 and "no longer exists" in gone.json()["detail"]
    assert api.post("/jobs/01ARZ3NDEKTSV4RRFFQ69G5FAV/rerun").status_code == 404
    assert api.get("/jobs/nope").status_code == 404


def test_rerun_of_a_run_not_finished_is_refused(api: Any, auto: dict[str, Any], gate: Path) -> None:
    held, rec = _held(api, auto, gate)
    waiting = api.ok("POST", "/workflows/held/run", 201, json={"record_id": rec["id"]})
    for job_id, word in ((held["id"], "running"), (waiting["id"], "waiting")):
        r = api.post(f"/jobs/{job_id}/rerun")
        assert r.status_code == 409 and word in r.json()["detail"]


def test_a_plugins_own_writes_are_part_of_the_run_and_commit_keeps_them_even_if_the_step_fails(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    for name, config in (("writes", {"write": "West"}), ("writes-fails", {"write": "East", "fail": True}),
                         ("commits-fails", {"write": "South", "commit": True, "fail": True})):
        workflow(api, name, {"record_schema": "sample", "triggers": {"manual": {}},
                             "steps": [{"id": "g", "plugin": "gate", "config": config, "inputs": {}}]})
    workflow(api, "count-words", {**STATS, "triggers": {"record_updated": {"fields": ["site"]}}})
    rec = auto["make"]({"notes": "a b", "site": "North"})

    def run(name: str) -> dict[str, Any]:
        job = api.ok("POST", f"/workflows/{name}/run", 201, json={"record_id": rec["id"]})
        return wait_for(api, job["id"], "completed", "failed")
    writes = run("writes")
    assert writes["status"] == "completed"
    assert writes["affected_records"] == [{"record_id": rec["id"], "schema_name": "sample", "action": "updated"}]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["site"] == "West"
    assert run("writes-fails")["status"] == "failed"
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["site"] == "West"  # the failed step left nothing
    kept = run("commits-fails")
    assert kept["status"] == "failed" and kept["affected_records"][0]["record_id"] == rec["id"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["site"] == "South"  # committed before it failed
    api.ok("POST", "/jobs/drain")
    caused = runs(api, workflow="count-words")  # the plugin's writes trigger like any other
    assert [j["trigger_detail"]["caused_by"]["workflow"] for j in caused] == ["writes", "commits-fails"]
    assert {j["depth"] for j in caused} == {1}
    batches = {e["batch"]["ref"]: e for e in api.ok("GET", "/audit/events")["items"] if e["kind"] == "batch"}
    assert writes["id"] in batches and kept["id"] in batches


def test_a_step_past_its_timeout_a_deleted_record_and_a_deleted_workflow_fail_the_run_with_their_kind(
        api: Any, auto: dict[str, Any], gate: Path) -> None:
    workflow(api, "slow", {"record_schema": "sample", "triggers": {"manual": {}},
                           "steps": [{"id": "nap", "plugin": "gate", "config": {"sleep": HANG}, "inputs": {},
                                      "timeout": 0.5}]})
    workflow(api, "count-words", {**STATS, "triggers": {"manual": {}}})
    workflow(api, "vanishing", {**STATS, "triggers": {"manual": {}}})
    one, two = auto["make"]({"notes": "a"}), auto["make"]({"notes": "b"})
    slow = api.ok("POST", "/workflows/slow/run", 201, json={"record_id": one["id"]})
    slow = wait_for(api, slow["id"], "failed", "completed")
    assert (slow["error_details"]["kind"], slow["error_details"]["step"]) == ("timeout", "nap")
    # the plugin sleeps HANG: only the step's timeout can have ended it (and long before)
    assert slow["step_executions"][0]["duration_ms"] < HANG * 1000 / 2
    held, _ = _held(api, auto, gate)
    gone_record = api.ok("POST", "/workflows/count-words/run", 201, json={"record_id": one["id"]})
    gone_workflow = api.ok("POST", "/workflows/vanishing/run", 201, json={"record_id": two["id"]})
    api.ok("DELETE", f"/records/{one['id']}", 204)
    (api.project.root / "workflows" / "vanishing.yaml").unlink()
    (gate / "open").touch()
    assert wait_for(api, held["id"], "completed")["status"] == "completed"
    failed = wait_for(api, gone_record["id"], "failed")
    assert (failed["error_details"]["kind"], failed["error_details"]["step"]) == ("record_not_found", "stats")
    assert wait_for(api, gone_workflow["id"], "failed")["error_details"] == {
        "kind": "workflow_not_found", "step": None, "message": "workflow 'vanishing' not found"}
    assert api.post(f"/jobs/{gone_record['id']}/rerun").status_code == 409  # its record is gone
    assert api.post(f"/jobs/{gone_workflow['id']}/rerun").status_code == 404  # its workflow is gone
