"""Warm plugin processes across runs (issue 36 item 1, :mod:`benchbook.runner.plugin_host.pool`): a
pool serves run after run from one process, which is started afresh after every failure kind
that leaves it in doubt, after ``plugin_warm_runs`` runs, after ``plugin_idle_seconds`` unused
(a fake clock and an explicit sweep: no waiting) and when the plugin changed (``plugins
refresh``); no run sees what the run before it left in its scratch folder, nor its record.

Real subprocess plugins throughout: a raw-protocol plugin (quick to start) through
:class:`StepRunner` with a :class:`Pool`, and an SDK plugin through the drain on both backends.
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchbook.runner import drain as drain_module
from benchbook.runner import execution, queue, workflows
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host import discovery
from benchbook.runner.plugin_host.pool import Pool
from benchbook.runner.plugin_host.steps import StepRunner
from tests.api.helpers import make_collection, make_record, make_schema
from tests.runner.automation_helpers import register_plugins
from tests.runner.rawplugin import contract, folder, runnable, script

# Each run: what its scratch folder held when it started ("seen"), a file left there, how many
# runs this process served ("runs": its own memory, which a plugin may keep), its pid; the
# text of the input picks a failure instead, or an RPC call ("ask") whose answer it returns.
POOLED = """
import threading
DESCRIBED = json.loads({described!r})
RUNS = []
incoming = frames()
for f in incoming:
    if f["type"] == "describe":
        send(DESCRIBED)
        continue
    what = f["inputs"]["text"]
    where = os.environ["BENCHBOOK_SCRATCH"]
    seen = sorted(os.listdir(where))
    with open(os.path.join(where, "left-by-run-%d" % len(RUNS)), "w") as fh:
        fh.write(what)
    RUNS.append(what)
    if what == "exit":
        os._exit(3)
    if what == "hang":
        threading.Event().wait()
    if what == "garbage":
        out.write("this is not a frame\\n")
        out.flush()
        continue
    if what in ("refuse", "fail"):
        send({{"type": "error", "call_id": None, "error": {{
            "kind": "protocol_error" if what == "refuse" else "plugin_error", "message": what, "retryable": False}}}})
        continue
    if what == "ask":
        send({{"type": "rpc_call", "call_id": "1", "method": "call_tool",
               "params": {{"tool": "get_schema", "args": {{"name": "x"}}}}}})
        next(incoming)
    sys.stderr.write("stderr of run %d\\n" % len(RUNS))
    sys.stderr.flush()
    send({{"type": "result", "outputs": {{"pid": os.getpid(), "seen": seen, "runs": len(RUNS)}}}})
"""
PORTS = {"inputs": {"text": {"type": "string", "required": True}},
         "outputs": {"pid": {"type": "integer"}, "seen": {"type": "json"}, "runs": {"type": "integer"}}}


@pytest.fixture(scope="module")
def pooled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The raw plugin's folder (``plugins/pooled`` of a project folder)."""
    root = tmp_path_factory.mktemp("pool")
    return folder(root / "plugins", "pooled", script(POOLED.format(described=json.dumps(contract("pooled", **PORTS)))))


@pytest.fixture(scope="module")
def plugin(pooled: Path) -> dict[str, Any]:
    return runnable(pooled)


def new_pool(plugin: dict[str, Any], **settings: Any) -> Pool:
    """A pool whose processes make their scratch folders in the plugin's project folder."""
    return Pool(project_root=Path(plugin["launch"]["folder"]).parents[1], **settings)


def run(pool: Pool, plugin: dict[str, Any], text: str = "go", *, timeout: float | None = None,
        rpc: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[dict[str, Any], list[str]]:
    """One run of one step through a :class:`StepRunner` with ``pool``: its outputs and log lines."""
    lines: list[str] = []
    with StepRunner(pool=pool, project_root=Path(plugin["launch"]["folder"]).parents[1]) as runner:
        outputs = runner.run_step(plugin, {"text": text}, {}, timeout=timeout, log=lambda s, m: lines.append(f"{s}: {m}"),
                                  rpc_for=(lambda _scratch: rpc) if rpc else None)
    return outputs, lines


def failing(pool: Pool, plugin: dict[str, Any], text: str, **options: Any) -> StepFailed:
    with pytest.raises(StepFailed) as caught:
        run(pool, plugin, text, **options)
    return caught.value


# ------------------------------------------------------------------ serving in turn
def test_one_warm_process_serves_run_after_run_each_with_an_emptied_scratch_folder(plugin: dict[str, Any]) -> None:
    with new_pool(plugin) as pool:
        served = [run(pool, plugin) for _ in range(3)]
        assert pool.started == 1 and len(pool.idle("pooled")) == 1
    pids = {outputs["pid"] for outputs, _ in served}
    assert len(pids) == 1 and pool.ended == {"closed": 1}
    assert [outputs["runs"] for outputs, _ in served] == [1, 2, 3]  # its own memory lives on: allowed, not relied on
    assert [outputs["seen"] for outputs, _ in served] == [[], [], []]  # what run 1 left is gone for run 2
    # every run's standard error lines reach that run's log, not the next one's
    assert [lines for _, lines in served] == [[f"stderr: stderr of run {n}"] for n in (1, 2, 3)]


@pytest.mark.parametrize(("text", "kind", "options"), [
    ("exit", "process_exit", {}),
    ("hang", "timeout", {"timeout": 0.5}),
    ("garbage", "protocol_error", {}),
    ("refuse", "protocol_error", {}),  # the plugin's own error frame of that kind
])
def test_a_process_whose_step_failed_in_doubt_never_serves_the_next_run(
        plugin: dict[str, Any], text: str, kind: str, options: dict[str, Any]) -> None:
    with new_pool(plugin) as pool:
        first, _ = run(pool, plugin)
        assert failing(pool, plugin, text, **options).kind == kind
        assert pool.idle("pooled") == [] and pool.ended == {"failed": 1}
        after, _ = run(pool, plugin)
    assert after["pid"] != first["pid"] and after["runs"] == 1 and after["seen"] == []
    assert pool.started == 2


def test_a_plugin_error_keeps_the_process_and_so_does_a_denied_call(plugin: dict[str, Any]) -> None:
    with new_pool(plugin) as pool:
        first, _ = run(pool, plugin)
        assert failing(pool, plugin, "fail").kind == "plugin_error"
        asked, _ = run(pool, plugin, "ask")  # no host operations here: answered capability_denied
    assert asked["pid"] == first["pid"] and asked["runs"] == 3 and pool.started == 1


def test_a_process_handed_back_in_the_middle_of_a_turn_is_ended(plugin: dict[str, Any]) -> None:
    def broken(call: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("the host failed while answering")
    with new_pool(plugin) as pool:
        first, _ = run(pool, plugin)
        with pytest.raises(RuntimeError):
            run(pool, plugin, "ask", rpc=broken)  # the plugin still waits for its answer
        assert pool.ended == {"failed": 1}
        after, _ = run(pool, plugin)
    assert after["pid"] != first["pid"]


# ------------------------------------------------------------------ ending on purpose
def test_an_idle_process_is_ended_at_the_next_check_point_past_the_idle_setting(plugin: dict[str, Any]) -> None:
    now = [0.0]
    with new_pool(plugin, idle_seconds=60, clock=lambda: now[0]) as pool:
        first, _ = run(pool, plugin)
        now[0] += 59.9
        assert pool.sweep() == 0
        again, _ = run(pool, plugin)  # idle for less than the setting: served warm
        now[0] += 60
        assert pool.sweep() == 1 and pool.idle("pooled") == [] and pool.ended == {"idle": 1}
        after, _ = run(pool, plugin)
        now[0] += 60
        later, _ = run(pool, plugin)  # a run is a check point too: the idle one is ended first
        assert pool.ended == {"idle": 2}
    assert first["pid"] == again["pid"] != after["pid"] != later["pid"]


def test_a_process_is_started_afresh_after_the_runs_setting(plugin: dict[str, Any]) -> None:
    with new_pool(plugin, warm_runs=2) as pool:
        pids = [run(pool, plugin)[0]["pid"] for _ in range(5)]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    assert pool.ended == {"runs": 2, "closed": 1}


def test_a_changed_plugin_is_started_afresh(pooled: Path, plugin: dict[str, Any]) -> None:
    with new_pool(plugin) as pool:
        first, _ = run(pool, plugin)
        assert run(pool, runnable(pooled))[0]["pid"] == first["pid"]  # described again, unchanged
        (pooled / "helper.txt").write_text("a file of the plugin changed")
        try:
            changed = runnable(pooled)  # what plugins refresh registers
            assert changed["launch"]["fingerprint"] != plugin["launch"]["fingerprint"]
            after, _ = run(pool, changed)
        finally:
            (pooled / "helper.txt").unlink()
    assert after["pid"] != first["pid"] and pool.ended == {"changed": 1, "closed": 1}


@pytest.mark.parametrize("size", [1, 2])
def test_a_plugin_keeps_at_most_its_pool_size_of_idle_processes(plugin: dict[str, Any], size: int) -> None:
    sized = {**plugin, "launch": {**plugin["launch"], "pool_size": size}}
    with new_pool(plugin) as pool:
        one, two = StepRunner(pool=pool), StepRunner(pool=pool)  # two runs at once: two processes
        pids = {r.run_step(sized, {"text": "go"}, {})["pid"] for r in (one, two)}
        one.close()
        two.close()
        assert len(pids) == 2 and len(pool.idle("pooled")) == size
        assert pool.ended == ({"surplus": 1} if size == 1 else {})


@pytest.mark.parametrize(("value", "ok"), [("1", True), ("16", True), ("0", False), ("17", False), ("true", False),
                                           ('"2"', False)])
def test_pool_size_in_plugin_toml_is_an_integer_from_1_to_16(tmp_path: Path, value: str, ok: bool) -> None:
    (tmp_path / "plugin.toml").write_text(f'command = ["x"]\npool_size = {value}\n')
    if ok:
        assert discovery.read_manifest(tmp_path)["pool_size"] == int(value)
    else:
        with pytest.raises(ValueError, match="pool_size must be an integer from 1 to 16"):
            discovery.read_manifest(tmp_path)


# ------------------------------------------------------------------ through the drain, both backends
MEMO = '''
import os
from benchbook.plugin import Plugin

plugin = Plugin(id="memo", name="Memo", category="test",
                outputs={"pid": {"type": "integer"}, "record": {"type": "string"}, "seen": {"type": "integer"}},
                capabilities=["get_context_record"])


@plugin.run
def run(ctx, inputs, config):
    seen = len(list(ctx.scratch.iterdir()))
    me = ctx.get_context_record()["id"]
    (ctx.scratch / ("record-" + me)).write_text(me)
    return {"pid": os.getpid(), "record": me, "seen": seen}
'''
MEMO_WORKFLOW = {"name": "memo", "record_schema": "sample", "triggers": {"manual": {}},
                 "steps": [{"id": "memo", "plugin": "memo"}],
                 "save": {"pid": "memo.pid", "record": "memo.record", "seen": "memo.seen"}}


def test_a_drain_serves_its_runs_from_one_warm_sdk_process_and_no_run_sees_the_last_ones(api: Any) -> None:
    root = api.project.root
    shutil.rmtree(root / "plugins", ignore_errors=True)
    folder(root / "plugins", "memo", MEMO, manifest='command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    make_schema(api, "sample", [{"name": "pid", "type": "integer"}, {"name": "record", "type": "string"},
                                {"name": "seen", "type": "integer"}])
    make_collection(api, "lab", ["sample"])
    register_plugins(api)
    workflows.folder(root).mkdir(exist_ok=True)
    (workflows.folder(root) / "memo.yaml").write_text(yaml.safe_dump(MEMO_WORKFLOW, sort_keys=False))
    try:
        drained(api, root)
    finally:
        (workflows.folder(root) / "memo.yaml").unlink()
        shutil.rmtree(root / "plugins")


def drained(api: Any, root: Path) -> None:
    records = [make_record(api, "lab", "sample", {})["id"] for _ in range(5)]
    db = api.app.services.db

    def enqueue(*ids: str) -> None:
        with db.session() as s, s.begin():
            for record_id in ids:
                queue.enqueue(s, workflow="memo", record_id=record_id, schema_name="sample", trigger="manual")

    def saved(record_id: str) -> dict[str, Any]:
        data: dict[str, Any] = api.ok("GET", f"/records/{record_id}")["data"]
        return data

    # the worker's drain (POST /jobs/drain): three runs, one process, each run its own record
    enqueue(*records[:3])
    assert api.ok("POST", "/jobs/drain")["completed"] == 3
    served = [saved(r) for r in records[:3]]
    assert len({d["pid"] for d in served}) == 1
    assert [d["record"] for d in served] == records[:3]
    assert [d["seen"] for d in served] == [0, 0, 0]  # an empty scratch folder every time

    # a refresh that finds the plugin's files changed ends the warm process
    enqueue(*records[3:])
    with drain_module.Drain(recheck=0, project_root=root) as drain:
        assert execution.execute_next(db, api.project, drain=drain) is not None
        with (root / "plugins" / "memo" / "plugin.py").open("a") as fh:
            fh.write("# changed\n")
        assert "memo" in api.ok("POST", "/plugins/refresh")["changed"]
        assert execution.execute_next(db, api.project, drain=drain) is not None
        assert drain.pool.ended == {"changed": 1}
    before, after = saved(records[3]), saved(records[4])
    assert before["pid"] != after["pid"] != served[0]["pid"]  # a drain's processes end with it
    assert (before["record"], after["record"], after["seen"]) == (records[3], records[4], 0)
