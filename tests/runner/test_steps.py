"""Steps end to end: discovery → registry → :class:`StepRunner` → a real plugin (SDK subprocess,
container through a stand-in runtime, built-in in process) → the host operations it calls,
written through the domain in one history batch. Also the host against every shared vector."""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchbook.domain import plugin_registry as registry
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host import discovery
from benchbook.runner.plugin_host.frames import parse_plugin_line, violation
from benchbook.runner.plugin_host.rpc import HostOperations
from benchbook.runner.plugin_host.steps import StepRunner
from tests.api.helpers import make_collection, make_record, make_schema
from tests.runner.automation_helpers import register_plugins
from tests.runner.rawplugin import fake_runtime, folder
from tests.waiting import HANG

VECTORS = Path(__file__).resolve().parents[2] / "plugin-protocol" / "vectors"

SDK_PLUGIN = '''
import hashlib
from benchbook.plugin import Plugin, PluginRpcError

plugin = Plugin(
    id="worker", name="Worker", category="test",
    inputs={"blob": {"type": "bytes"}, "table": {"type": "table"}, "note": {"type": "string"}},
    outputs={"blob_sha": {"type": "string"}, "rows": {"type": "integer"}, "report": {"type": "json"},
             "echo": {"type": "bytes"}, "doubled": {"type": "table"}},
    config_schema={"type": "object", "properties": {"mode": {"enum": ["full", "quick"]}}, "required": ["mode"]},
    capabilities=["get_file", "update_record", "commit", "get_context_record",
                  "find_records", "get_schema", "store_file"],
)


@plugin.run
def run(ctx, inputs, config):
    report = {}
    if config["mode"] == "full":
        me = ctx.get_context_record()
        ctx.log("working on " + me["id"])
        report["small"] = hashlib.sha256(ctx.get_file(me["data"]["small"])).hexdigest()
        report["large"] = hashlib.sha256(ctx.get_file(me["data"]["large"])).hexdigest()
        report["schema"] = ctx.get_schema("sample")["name"]
        report["found"] = ctx.find_records(collection="lab", schema="sample",
                                           filter={"field": "site", "op": "eq", "value": "North"})["total"]
        stored = ctx.store_file("made.txt", b"made by a plugin")
        updated = ctx.update_record(me["id"], {"site": "North-2", "made": stored["sha256"]})
        report["updated_site"] = updated["data"]["site"]
        ctx.commit()
        try:
            ctx.call_tool("drop_everything")
        except PluginRpcError as exc:
            report["denied"] = exc.kind
    blob = inputs["blob"] or b""
    table = inputs["table"]
    return {"blob_sha": hashlib.sha256(blob).hexdigest(), "rows": 0 if table is None else len(table),
            "report": report, "echo": blob, "doubled": None if table is None else table.assign(n=table["n"] * 2)}
'''


CREATOR = '''
from benchbook.plugin import Plugin, PluginRpcError

plugin = Plugin(id="creator", name="Creator", outputs={"created": {"type": "string"}, "denied": {"type": "json"}},
                capabilities=["create_record"])


@plugin.run
def run(ctx, inputs, config):
    denied = []
    for call in (ctx.commit, lambda: ctx.get_file("ab" * 32), lambda: ctx.get_schema("sample")):
        try:
            call()
        except PluginRpcError as exc:
            denied.append(exc.kind)
    return {"created": ctx.create_record("lab", "sample", {"site": "South"})["data"]["site"], "denied": denied}
'''


@pytest.fixture
def lab(api: Any) -> Iterator[dict[str, Any]]:
    """A project with one SDK plugin, a sample record holding a small and a large file."""
    plugins_dir: Path = api.project.root / "plugins"
    shutil.rmtree(plugins_dir, ignore_errors=True)
    folder(plugins_dir, "worker", SDK_PLUGIN, manifest='command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    folder(plugins_dir, "creator", CREATOR, manifest='command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    make_schema(api, "sample", [{"name": "site", "type": "string"}, {"name": "small", "type": "file"},
                                {"name": "large", "type": "file"}, {"name": "made", "type": "file"}])
    make_collection(api, "lab", ["sample"])
    small = api.ok("POST", "/files", 201, files={"file": ("small.txt", b"tiny")})
    big = bytes(range(256)) * 5000  # 1.28 MB: goes through a scratch file
    large = api.ok("POST", "/files", 201, files={"file": ("large.bin", big)})
    record = make_record(api, "lab", "sample", {"site": "North", "small": small["sha256"], "large": large["sha256"]})
    register_plugins(api)  # each plugin described once per test process
    yield {"record": record, "big": big}


def run_step(api: Any, plugin_id: str, inputs: dict[str, Any], config: dict[str, Any], record_id: str | None = None,
             runner: StepRunner | None = None) -> tuple[dict[str, Any], list[tuple[str, str]], str]:
    db = api.app.services.db
    logs: list[tuple[str, str]] = []
    own = runner is None
    runner = runner or StepRunner()
    try:
        with db.session() as s, s.begin():
            plugin = registry.runnable(s, plugin_id)
            ctx = Ctx(session=s, actor="workflow:test", files_dir=api.project.files_dir)
            batch = entries.open_batch(ctx, "workflow", "test run")
            ctx.batch_id = batch.id
            outputs = runner.run_step(plugin, inputs, config, log=lambda st, m: logs.append((st, m)),
                                      rpc_for=lambda scratch: HostOperations(ctx, record_id=record_id, scratch=scratch),
                                      timeout=HANG)  # the verdicts never race a step's default timeout
            return outputs, logs, batch.id
    finally:
        if own:
            runner.close()


def test_an_sdk_plugin_step_uses_every_host_operation_through_the_domain(api: Any, lab: dict[str, Any]) -> None:
    rec = lab["record"]
    outputs, logs, batch_id = run_step(api, "worker", {"note": "hi"}, {"mode": "full"}, record_id=rec["id"])
    report = outputs["report"]
    assert report["small"] == hashlib.sha256(b"tiny").hexdigest()
    assert report["large"] == hashlib.sha256(lab["big"]).hexdigest()
    assert (report["schema"], report["found"], report["updated_site"]) == ("sample", 1, "North-2")
    assert report["denied"] == "capability_denied"
    assert ("log", f"working on {rec['id']}") in logs
    after = api.ok("GET", f"/records/{rec['id']}")
    assert after["data"]["site"] == "North-2"
    made = api.ok("GET", f"/files/{after['data']['made']}/info")
    assert made["filename"] == "made.txt" and made["size"] == len(b"made by a plugin")
    batch = api.ok("GET", f"/audit/batches/{batch_id}")
    assert [(p["action"], p["count"]) for p in batch["parts"]] == [("update", 1)]
    assert {e["actor"] for e in api.ok("GET", f"/audit/batches/{batch_id}/entries")["items"]} == {"workflow:test"}


def test_calls_outside_the_declared_capabilities_are_denied_and_the_plugin_goes_on(
        api: Any, lab: dict[str, Any]) -> None:
    outputs, _, batch_id = run_step(api, "creator", {}, {})
    assert outputs == {"created": "South", "denied": ["capability_denied"] * 3}
    assert [(p["action"], p["count"]) for p in api.ok("GET", f"/audit/batches/{batch_id}")["parts"]] == [("create", 1)]


@pytest.mark.parametrize(("size", "rows"), [(1_000_000, 5_000), (1_000_001, 5_001)])
def test_bytes_and_tables_cross_both_ways_on_each_side_of_their_thresholds(
        api: Any, lab: dict[str, Any], size: int, rows: int) -> None:
    blob = bytes(i % 251 for i in range(size))
    table = pd.DataFrame({"n": range(rows), "name": [f"row {i}" for i in range(rows)]})
    outputs, _, _ = run_step(api, "worker", {"blob": blob, "table": table}, {"mode": "quick"})
    assert outputs["blob_sha"] == hashlib.sha256(blob).hexdigest() and outputs["echo"] == blob
    assert outputs["rows"] == rows
    assert list(outputs["doubled"]["n"][:3]) == [0, 2, 4] and len(outputs["doubled"]) == rows


def test_one_process_serves_every_step_of_a_run(api: Any, lab: dict[str, Any]) -> None:
    with StepRunner() as runner:
        run_step(api, "worker", {}, {"mode": "quick"}, runner=runner)
        pid = runner._processes["worker"].proc.pid
        run_step(api, "worker", {}, {"mode": "quick"}, runner=runner)
        assert runner._processes["worker"].proc.pid == pid


@pytest.mark.parametrize(("inputs", "config", "kind", "words"), [
    ({}, {"mode": "slow"}, "invalid_config", "'slow' is not one of ['full', 'quick']"),
    ({}, {}, "invalid_config", "'mode' is a required property"),
    ({"nope": 1}, {"mode": "quick"}, "invalid_input", "'nope' is not declared"),
    ({"note": 5}, {"mode": "quick"}, "invalid_input", "input 'note': expected string, got int 5"),
])
def test_bad_config_and_inputs_are_refused_before_the_plugin_runs(
        api: Any, lab: dict[str, Any], inputs: dict[str, Any], config: dict[str, Any], kind: str, words: str) -> None:
    with pytest.raises(StepFailed) as caught:
        run_step(api, "worker", inputs, config)
    assert caught.value.kind == kind and words in caught.value.message


def test_a_plugin_breaking_its_output_contract_fails_the_step(api: Any, tmp_path: Path) -> None:
    plugins_dir = api.project.root / "plugins"
    folder(plugins_dir, "liar", textwrap.dedent('''
        import json, os, sys
        out = os.fdopen(os.dup(1), "w", buffering=1)
        D = {"type": "describe_result", "id": "liar", "name": "Liar", "description": "", "category": "",
             "capabilities": [], "inputs": {}, "outputs": {"n": {"type": "integer", "required": True}},
             "config_schema": {}}
        for line in sys.stdin:
            f = json.loads(line)
            out.write(json.dumps(D if f["type"] == "describe" else {"type": "result", "outputs": {"n": "x"}}) + "\\n")
    '''))
    register_plugins(api)
    with pytest.raises(StepFailed) as caught:
        run_step(api, "liar", {}, {})
    assert caught.value.kind == "invalid_output"
    assert "'n': expected integer, got \"x\"" in caught.value.message


def test_built_in_plugins_run_in_process_with_the_same_contract(api: Any, lab: dict[str, Any]) -> None:
    listed = {p["id"]: p for p in api.ok("GET", "/plugins")}
    assert listed["benchbook.text-stats"] | {"described_at": None} == listed["benchbook.text-stats"] | {
        "tier": "builtin", "builtin": True, "source": "builtin", "status": "ok", "error": None, "described_at": None}
    outputs, _, _ = run_step(api, "benchbook.text-stats", {"text": "two words\nand a line"}, {})
    assert outputs == {"words": 5, "characters": 20, "lines": 2}
    large = lab["record"]["data"]["large"]
    outputs, _, _ = run_step(api, "benchbook.file-checksum", {"file": large}, {"algorithm": "sha1"})
    assert outputs == {"checksum": hashlib.sha1(lab["big"]).hexdigest(), "size": len(lab["big"])}


def test_a_tier_2_step_runs_in_a_fresh_container_with_run_as_first_argument(
        api: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHBOOK_CONTAINER_RUNTIME", str(fake_runtime(tmp_path / "docker")))
    image = tmp_path / "image"
    image.mkdir()
    (image / "plugin.py").write_text(SDK_PLUGIN.replace('id="worker"', 'id="boxed"') +
                                     "\nif __name__ == '__main__':\n    plugin.main()\n")
    folder(api.project.root / "plugins", "boxed", "", manifest=f'tier = 2\nimage = "{image}"\n')
    api.ok("POST", "/plugins/refresh")
    outputs, _, _ = run_step(api, "boxed", {"blob": b"abc"}, {"mode": "quick"})
    assert outputs["blob_sha"] == hashlib.sha256(b"abc").hexdigest()
    assert (image / "runs.log").read_text().split("\n")[:2] == ["512m 1 describe", "512m 1 run"]
    with pytest.raises(StepFailed) as caught:  # no second frame in tier 2: rpc is unavailable
        run_step(api, "boxed", {}, {"mode": "full"})
    assert caught.value.kind == "rpc_unavailable"


def test_a_plugin_that_cannot_run_is_refused_with_its_status(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHBOOK_CONTAINER_RUNTIME", "no-such-runtime-here")
    folder(api.project.root / "plugins", "boxed", "", manifest='tier = 2\nimage = "x/y:1"\n')
    api.ok("POST", "/plugins/refresh")
    with pytest.raises(StepFailed) as caught:
        run_step(api, "boxed", {}, {})
    assert caught.value.kind == "no_container_runtime"


def vectors() -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, json.loads(p.read_text())) for p in sorted(VECTORS.glob("*.json"))]


@pytest.mark.parametrize(("name", "vector"), vectors(), ids=[n for n, _ in vectors()])
def test_the_host_agrees_with_every_shared_vector(name: str, vector: dict[str, Any]) -> None:
    if "envelope" in vector:
        problem = violation(vector["value"], vector["envelope"])
        assert (problem is None) == vector["valid"], problem
        return
    if vector["direction"] == "host_to_plugin":
        assert (violation(vector["frame"], "host_frame") is None) == vector["valid"]
        return
    line = json.dumps(vector["frame"]).encode() + b"\n"
    if vector["valid"]:
        assert parse_plugin_line(line) == vector["frame"]
    else:
        with pytest.raises(StepFailed) as caught:
            parse_plugin_line(line)
        assert caught.value.kind == "protocol_error"


def test_discovery_lists_plugins_from_entry_points_like_built_ins(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    class EntryPoint:
        name = "third-party"

        def load(self) -> Any:
            from benchbook.runner.plugin_host.builtin import text_stats
            return text_stats

    class Broken:
        name = "broken-party"

        def load(self) -> Any:
            raise ImportError("No module named 'thirdparty'")

    monkeypatch.setattr(discovery, "entry_points", lambda group: [EntryPoint(), Broken()])
    found = {d.launch.get("entry_point"): d for d in discovery.discover(tmp_path / "none")}
    assert found["third-party"].source == "entry_point:third-party" and found["third-party"].builtin is False
    assert found["broken-party"].status == "error"
    assert found["broken-party"].error == "ImportError: No module named 'thirdparty'"
    assert sys.modules.get("thirdparty") is None


CLASHER = '''
from benchbook.plugin import Plugin, PluginRpcError

plugin = Plugin(id="clasher", name="Clasher", outputs={"kinds": {"type": "json"}}, capabilities=["create_record"])


@plugin.run
def run(ctx, inputs, config):
    kinds = []
    for site in ("East", "East", "West"):
        try:
            ctx.create_record("lab", "sample", {"site": site})
            kinds.append("created")
        except PluginRpcError as exc:
            kinds.append(exc.kind)
    return {"kinds": kinds}
'''


def test_a_refused_write_leaves_nothing_behind_and_the_plugin_goes_on(api: Any, lab: dict[str, Any]) -> None:
    api.ok("PUT", "/schemas/sample/unique-keys", json={"keys": [["site"]]})
    folder(api.project.root / "plugins", "clasher", CLASHER,
           manifest='command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\n')
    register_plugins(api)
    outputs, _, batch_id = run_step(api, "clasher", {}, {})
    assert outputs == {"kinds": ["created", "conflict", "created"]}
    sites = sorted(r["data"]["site"] for r in api.ok("GET", "/collections/lab/records?limit=50")["items"])
    assert sites == ["East", "North", "West"]
    assert [(p["action"], p["count"]) for p in api.ok("GET", f"/audit/batches/{batch_id}")["parts"]] == [("create", 2)]
