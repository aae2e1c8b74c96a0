"""Steps in batches (issue 36 item 2; ``plugin-protocol/README.md``, row *batch*;
:mod:`benchbook.runner.batch_runs`): a plugin that says ``batch: true`` gets many waiting runs of
a workflow in one ``run`` frame and answers a list; each run keeps its own status, failure, log
and history batch.

A real subprocess plugin written against the raw protocol throughout: through
:class:`StepRunner` for how answers are read, and through the worker's drain on both backends.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select

from benchbook.persistence.tables import AuditBatch
from benchbook.runner import batch_runs, queue, workflows
from benchbook.runner import drain as drain_module
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host.frames import violation
from benchbook.runner.plugin_host.steps import StepRunner
from benchbook.settings.limits import Limits
from tests.api.helpers import make_collection, make_record, make_schema
from tests.runner.automation_helpers import register_plugins
from tests.runner.rawplugin import contract, folder, runnable, script

# Each frame: a log line and a stderr line naming the batch's size; per item, by its minutes:
# None → the item's own error; 666 → an output of the wrong type; 13 → asks the host for its
# context record (refused in a batch) and returns the refusal's kind; else a label. The
# config's "mode" breaks the whole answer instead: "error" (an error frame), "short" (one
# output too few), "twice" (an index named twice).
BATCHER = """
DESCRIBED = json.loads({described!r})
incoming = frames()
for f in incoming:
    if f["type"] == "describe":
        send(DESCRIBED)
        continue
    items, mode = f["inputs"], f["config"].get("mode")
    with open(os.path.join(os.environ["BENCHBOOK_SCRATCH"], "..", "frames.log"), "a") as fh:
        fh.write(json.dumps(f) + "\\n")
    send({{"type": "log", "message": "a batch of %d" % len(items), "stream": "log"}})
    sys.stderr.write("stderr of a batch of %d\\n" % len(items))
    sys.stderr.flush()
    if mode == "error":
        send({{"type": "error", "call_id": None, "error": {{"kind": "plugin_error", "message": "no", "retryable": True}}}})
        continue
    outputs, errors = [], []
    for index, item in enumerate(items):
        minutes = item.get("minutes")
        if minutes is None:
            outputs.append(None)
            errors.append({{"index": index, "kind": "invalid_input", "message": "no delay", "retryable": False}})
            continue
        asked = None
        if minutes == 13:
            send({{"type": "rpc_call", "call_id": "c%d" % index, "method": "call_tool",
                   "params": {{"tool": "get_context_record", "args": {{}}}}}})
            asked = next(incoming)["error"]["kind"]
        label = 123 if minutes == 666 else ("late" if minutes > 15 else "on time")
        outputs.append({{"label": label, "size": len(items), "pid": os.getpid(), "asked": asked, "code": minutes}})
    if mode == "short":
        outputs.pop()
    if mode == "twice":
        errors = [{{"index": 0, "kind": "x", "message": "x", "retryable": False}}] * 2
    send({{"type": "result", "outputs": outputs, **({{"errors": errors}} if errors else {{}})}})
"""
PORTS = {"inputs": {"minutes": {"type": "integer"}},
         "outputs": {"label": {"type": "string"}, "size": {"type": "integer"}, "pid": {"type": "integer"},
                     "asked": {"type": "string"}, "code": {"type": "integer"}},
         "capabilities": ["get_context_record"], "batch": True,
         "config_schema": {"type": "object", "properties": {"mode": {"type": "string"}}}}
DESCRIBED = contract("batcher", **PORTS)
WORKFLOW = {"name": "classify", "record_schema": "flight", "triggers": {"manual": {}},
            "steps": [{"id": "classify", "plugin": "batcher", "inputs": {"minutes": "record.delay"}}],
            "save": {"label": "classify.label", "size": "classify.size", "pid": "classify.pid",
                     "asked": "classify.asked", "code": "classify.code"}}


def test_the_describe_result_says_batch_and_the_vectors_frames_conform() -> None:
    assert violation(DESCRIBED, "describe_result") is None


@pytest.fixture(scope="module")
def batcher(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("batch")
    return runnable(folder(root / "plugins", "batcher", script(BATCHER.format(described=json.dumps(DESCRIBED)))))


def batch(plugin: dict[str, Any], minutes: list[int | None], **config: Any) -> tuple[list[Any], list[str]]:
    lines: list[str] = []
    with StepRunner(project_root=Path(plugin["launch"]["folder"]).parents[1]) as runner:
        answers = runner.run_batch(plugin, [{"minutes": m} for m in minutes], config,
                                   log=lambda stream, line: lines.append(f"{stream}: {line}"))
    return answers, lines


def test_one_frame_carries_every_item_and_each_answer_comes_back_in_its_place(batcher: dict[str, Any]) -> None:
    answers, lines = batch(batcher, [3, None, 95, 666])
    assert [a["label"] if isinstance(a, dict) else (a.kind, a.message) for a in answers] == [
        "on time", ("invalid_input", "no delay"), "late",
        ("invalid_output", ("plugin 'batcher' returned outputs that break its contract: "
                           "'label': expected string, got 123"))]
    assert {a["size"] for a in answers if isinstance(a, dict)} == {4}
    # the two streams are read apart: which line comes first is not fixed
    assert sorted(lines) == ["log: a batch of 4", "stderr: stderr of a batch of 4"]


def test_an_item_whose_inputs_break_the_ports_is_not_sent_and_fails_alone(batcher: dict[str, Any]) -> None:
    answers, _ = batch(batcher, [3, "three", 20])  # type: ignore[list-item]
    assert isinstance(answers[1], StepFailed) and answers[1].kind == "invalid_input"
    assert [answers[0]["size"], answers[2]["label"]] == [2, "late"]  # type: ignore[index]


@pytest.mark.parametrize(("mode", "kind", "message"), [
    ("error", "plugin_error", "the batch of 2 failed: no"),
    ("short", "invalid_output", "plugin 'batcher' answered a batch wrongly: outputs is a list of 1 for a batch of 2"),
    ("twice", "invalid_output", ("plugin 'batcher' answered a batch wrongly: errors name an index twice or past the "
                                "batch of 2")),
])
def test_an_answer_that_fails_the_whole_batch_fails_every_item(batcher: dict[str, Any], mode: str, kind: str,
                                                               message: str) -> None:
    answers, _ = batch(batcher, [1, 2], mode=mode)
    assert [(a.kind, a.message) for a in answers] == [(kind, message)] * 2  # type: ignore[union-attr]


def test_a_single_run_step_of_a_batch_plugin_is_a_batch_of_one(batcher: dict[str, Any]) -> None:
    with StepRunner(project_root=Path(batcher["launch"]["folder"]).parents[1]) as runner:
        assert runner.run_step(batcher, {"minutes": 40}, {})["size"] == 1
        with pytest.raises(StepFailed, match="no delay"):
            runner.run_step(batcher, {"minutes": None}, {})


# ------------------------------------------------------------------ through the drain
@pytest.fixture
def flights(api: Any) -> Iterator[dict[str, Any]]:
    """The batcher in the project's ``plugins/``, a ``flight`` schema and the ``classify``
    workflow; yields ``enqueue(delays) -> [(record id, run id)]``."""
    root = api.project.root
    shutil.rmtree(root / "plugins", ignore_errors=True)
    folder(root / "plugins", "batcher", script(BATCHER.format(described=json.dumps(DESCRIBED))))
    make_schema(api, "flight", [{"name": "delay", "type": "integer"}, {"name": "label", "type": "string"},
                                {"name": "size", "type": "integer"}, {"name": "pid", "type": "integer"},
                                {"name": "asked", "type": "string"},
                                {"name": "code", "type": "integer", "restrictions": {"min": 0}}])
    make_collection(api, "ops", ["flight"])
    register_plugins(api)
    workflows.folder(root).mkdir(exist_ok=True)
    (workflows.folder(root) / "classify.yaml").write_text(yaml.safe_dump(WORKFLOW, sort_keys=False))
    db = api.app.services.db

    def enqueue(delays: list[int | None]) -> list[tuple[str, str]]:
        made = [make_record(api, "ops", "flight", {"delay": d})["id"] for d in delays]
        with db.session() as s, s.begin():
            jobs = [queue.enqueue(s, workflow="classify", record_id=r, schema_name="flight", trigger="manual").id
                    for r in made]
        return list(zip(made, jobs, strict=True))
    yield {"enqueue": enqueue, "db": db}
    (workflows.folder(root) / "classify.yaml").unlink()
    shutil.rmtree(root / "plugins")


def test_the_worker_gives_waiting_runs_to_a_batch_plugin_together_and_each_run_ends_on_its_own(
        api: Any, flights: dict[str, Any]) -> None:
    made = flights["enqueue"]([3, None, 95, 666, 13, -5])
    drained = api.ok("POST", "/jobs/drain")
    assert (drained["completed"], drained["failed"]) == (3, 3)
    runs = {job: api.ok("GET", f"/jobs/{job}") for _, job in made}
    records = {rec: api.ok("GET", f"/records/{rec}")["data"] for rec, _ in made}
    statuses = [(runs[job]["status"], (runs[job]["error_details"] or {}).get("kind")) for _, job in made]
    assert statuses == [("completed", None), ("failed", "invalid_input"), ("completed", None),
                        ("failed", "invalid_output"), ("completed", None), ("failed", "save_failed")]
    saved = [records[rec] for rec, _ in made]
    assert [d.get("label") for d in saved] == ["on time", None, "late", None, "on time", None]
    assert {d.get("size") for d in saved} - {None} == {6}  # one frame for all six
    assert len({d.get("pid") for d in saved} - {None}) == 1
    assert saved[4]["asked"] == "capability_denied"  # a batch holds no one run's record
    for (rec, job), (status, _) in zip(made, statuses, strict=True):
        run = runs[job]
        assert "[classify] log: a batch of 6" in run["log"] and "stderr of a batch of 6" in run["log"]
        assert "with 5 other run(s) of the workflow" in run["log"]
        assert [e["status"] for e in run["step_executions"]] == ["completed" if status == "completed" else "failed"]
        # a run that saved something has its own history batch; a failed one left nothing
        with flights["db"].session() as s:
            kept = s.execute(select(AuditBatch.kind, AuditBatch.entry_count).where(AuditBatch.ref == job)).all()
        assert [tuple(row) for row in kept] == ([("workflow", 1)] if status == "completed" else [])
    assert "code" not in records[made[5][0]] and "label" not in records[made[5][0]]  # the refused save left nothing


def test_a_batch_holds_at_most_plugin_batch_size_runs_the_oldest_first(api: Any, flights: dict[str, Any]) -> None:
    made = flights["enqueue"]([1, 2, 3, 4, 5])
    db = flights["db"]
    with drain_module.Drain(project_root=api.project.root, limits=Limits(plugin_batch_size=2)) as drain:
        first = batch_runs.execute_waiting(db, api.project, drain=drain)
        second = batch_runs.execute_waiting(db, api.project, drain=drain)
        third = batch_runs.execute_waiting(db, api.project, drain=drain)
        assert batch_runs.execute_waiting(db, api.project, drain=drain) == []
    jobs = [job for _, job in made]
    assert [first, second, third] == [[(jobs[0], "completed"), (jobs[1], "completed")],
                                      [(jobs[2], "completed"), (jobs[3], "completed")], [(jobs[4], "completed")]]
    assert [api.ok("GET", f"/records/{rec}")["data"]["size"] for rec, _ in made] == [2, 2, 2, 2, 1]


def test_a_whole_batch_failure_fails_every_run_of_it(api: Any, flights: dict[str, Any]) -> None:
    root = api.project.root
    failing = {**WORKFLOW, "steps": [{**WORKFLOW["steps"][0], "config": {"mode": "error"}}]}
    (workflows.folder(root) / "classify.yaml").write_text(yaml.safe_dump(failing, sort_keys=False))
    made = flights["enqueue"]([1, 2, 3])
    assert api.ok("POST", "/jobs/drain")["failed"] == 3
    for _, job in made:
        run = api.ok("GET", f"/jobs/{job}")
        assert run["error_details"] == {"kind": "plugin_error", "step": "classify",
                                        "message": "the batch of 3 failed: no"}
