"""The JavaScript starter (``plugin-protocol/js/``) under a real ``node``: its validator against the
conformance vectors, the example plugin in tier 1 and tier 2, stray output, capability denial, and
bytes and tables on both sides of the inline thresholds. Every line a plugin writes to standard
output must be a frame that passes ``#/$defs/plugin_frame``.
"""
from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.waiting import HANG

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH, so the JavaScript starter cannot run")

PROTOCOL = Path(__file__).resolve().parents[2] / "plugin-protocol"
JS = PROTOCOL / "js"
EXAMPLE = JS / "example-plugin.js"
SDK = JS / "benchbook-plugin.js"
FINAL = {"describe_result", "result", "error"}
TIMEOUT = HANG


@cache
def validator(definition: str) -> Draft202012Validator:
    defs = json.loads((PROTOCOL / "frames.schema.json").read_text(encoding="utf-8"))["$defs"]
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": defs})


def problems(definition: str, value: Any) -> list[str]:
    return [f"{e.json_path}: {e.message}" for e in validator(definition).iter_errors(value)]


def plugin_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k in ("PATH", "HOME", "LANG", "TZ") if (v := os.environ.get(k)) is not None}
    env["BENCHBOOK_SCRATCH"] = str(scratch)
    return env


class NodePlugin:
    """A tier-1 plugin under node: frames in on stdin, every stdout line checked as a plugin frame."""

    def __init__(self, script: Path, scratch: Path) -> None:
        assert NODE is not None
        self.proc = subprocess.Popen([NODE, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=plugin_env(scratch))
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw: list[bytes] = []
        self.stderr = b""
        self.closed = False
        self.threads = [threading.Thread(target=self._pump_stdout, daemon=True),
                        threading.Thread(target=self._pump_stderr, daemon=True)]
        for t in self.threads:
            t.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send(self, frame: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        line = self.lines.get(timeout=TIMEOUT)
        assert line is not None, f"the plugin ended its output; stderr: {self.stderr[-2000:]!r}"
        assert line.endswith(b"\n")
        frame = json.loads(line)
        assert problems("plugin_frame", frame) == [], line[:300]
        return frame  # type: ignore[no-any-return]

    def request(self, frame: dict[str, Any],
                rpc: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Send ``frame``; return every frame of the plugin's turn, the final one last."""
        self.send(frame)
        frames: list[dict[str, Any]] = []
        while True:
            got = self.receive()
            frames.append(got)
            if got["type"] == "rpc_call":
                assert rpc is not None, f"unexpected rpc_call {got}"
                self.send(rpc(got))
            elif got["type"] in FINAL:
                return frames

    def close(self) -> int:
        """End of input; the exit status. Output after the last turn is a failure."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.shutdown()
        assert self.lines.get(timeout=TIMEOUT) is None, "output after the last turn"
        return code

    def shutdown(self) -> int:
        """Wait for the process (killing it after the timeout), join the readers, close the pipes."""
        if self.closed:
            return self.proc.returncode
        self.closed = True
        try:
            code = self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        for t in self.threads:
            t.join(timeout=TIMEOUT)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
        return code


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


@pytest.fixture
def start(scratch: Path) -> Iterator[Callable[[Path], NodePlugin]]:
    started: list[NodePlugin] = []

    def _start(script: Path) -> NodePlugin:
        started.append(NodePlugin(script, scratch))
        return started[-1]

    yield _start
    for plugin in started:
        if not plugin.closed:
            plugin.proc.kill()
            plugin.shutdown()


def test_validate_js_agrees_with_every_vector() -> None:
    files = sorted((PROTOCOL / "vectors").glob("*.json"))
    done = subprocess.run([str(NODE), str(JS / "validate.js"), str(PROTOCOL / "vectors")], capture_output=True,
                          timeout=TIMEOUT, check=False)
    outcomes = [json.loads(line) for line in done.stdout.splitlines()]
    assert [Path(o["file"]).name for o in outcomes] == [f.name for f in files]
    for outcome, path in zip(outcomes, files, strict=True):
        vector = json.loads(path.read_text(encoding="utf-8"))
        assert outcome["valid"] is vector["valid"], (path.name, outcome["errors"])
        if not vector["valid"]:
            assert any(vector["violation"] in e for e in outcome["errors"]), (path.name, outcome["errors"])
        assert outcome["ok"] is True
    assert done.returncode == 0, done.stderr


def test_validate_js_refuses_a_keyword_it_does_not_implement() -> None:
    script = ("const { Validator } = require(process.argv[1]);"
              "try { new Validator({patternProperties: {}}); process.exit(3); }"
              "catch (e) { process.stdout.write(e.message); }")
    done = subprocess.run([str(NODE), "-e", script, str(JS / "validate.js")], capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    assert done.returncode == 0 and "patternProperties" in done.stdout


def context_record(call: dict[str, Any]) -> dict[str, Any]:
    assert call["method"] == "call_tool" and call["params"] == {"tool": "get_context_record", "args": {}}
    return {"type": "rpc_result", "call_id": call["call_id"], "result": {"id": "r-7", "data": {"name": "A1"}}}


def test_tier1_describe_then_runs(start: Callable[[Path], NodePlugin]) -> None:
    plugin = start(EXAMPLE)
    [described] = plugin.request({"type": "describe"})
    assert described["type"] == "describe_result" and described["id"] == "example.word_count"
    assert described["capabilities"] == ["get_context_record"]

    frames = plugin.request({"type": "run", "inputs": {"text": "The cat and the hat"}, "config": {},
                             "capabilities": ["get_context_record"]}, rpc=context_record)
    assert [f["type"] for f in frames] == ["log", "rpc_call", "result"]
    assert frames[0] == {"type": "log", "message": "counted 5 words, 4 distinct", "stream": "log"}
    outputs = frames[-1]["outputs"]
    assert {k: outputs[k] for k in ("words", "unique_words", "record_id")} == {"words": 5, "unique_words": 4,
                                                                              "record_id": "r-7"}
    assert problems("table", outputs["counts"]) == []
    assert dict(zip(outputs["counts"]["data"]["word"], outputs["counts"]["data"]["n"], strict=True)) == {
        "the": 2, "cat": 1, "and": 1, "hat": 1}

    # the same process serves the next run (tier 1 keeps looping), call ids keep counting
    frames = plugin.request({"type": "run", "inputs": {"text": "Hello"}, "config": {"lowercase": False}},
                            rpc=context_record)
    assert frames[1]["call_id"] != "c1" and frames[-1]["outputs"]["counts"]["data"]["word"] == ["Hello"]
    assert plugin.close() == 0


def test_capability_denied_surfaces_and_the_plugin_goes_on(start: Callable[[Path], NodePlugin]) -> None:
    plugin = start(EXAMPLE)

    def deny(call: dict[str, Any]) -> dict[str, Any]:
        return {"type": "error", "call_id": call["call_id"],
                "error": {"kind": "capability_denied", "message": "get_context_record is not declared",
                          "retryable": False}}

    frames = plugin.request({"type": "run", "inputs": {"text": "a b"}, "config": {}}, rpc=deny)
    final = frames[-1]
    assert final["type"] == "error" and final["call_id"] is None
    assert final["error"]["kind"] == "capability_denied" and final["error"]["retryable"] is False
    assert "get_context_record is not declared" in final["error"]["message"]
    [described] = plugin.request({"type": "describe"})
    assert described["type"] == "describe_result"
    assert plugin.close() == 0


NOISY = """
const bb = require(%(sdk)s);
console.log('loading: before any turn');
bb.serve({
  id: 'test.noisy', name: 'Noisy', capabilities: [], inputs: {}, outputs: {isolation: {type: 'string'}},
  run(inputs, config, ctx) {
    console.log('from console.log');
    console.info('from console.info');
    process.stdout.write('partial ');
    process.stdout.write('line\\n');
    console.error('from console.error');
    ctx.log('from ctx.log');
    require('child_process').execSync('echo from-child-process', {stdio: ['ignore', 'inherit', 'ignore']});
    process.stdout.write('unterminated');
    return {isolation: bb.isolation};
  },
});
"""


def test_stray_output_never_corrupts_the_stream(start: Callable[[Path], NodePlugin], tmp_path: Path) -> None:
    script = tmp_path / "noisy-plugin.js"
    script.write_text(NOISY % {"sdk": json.dumps(str(SDK))}, encoding="utf-8")
    plugin = start(script)
    frames = plugin.request({"type": "run", "inputs": {}, "config": {}})
    logs = [(f["stream"], f["message"]) for f in frames if f["type"] == "log"]
    assert logs == [("stdout", "from console.log"), ("stdout", "from console.info"), ("stdout", "partial line"),
                    ("stderr", "from console.error"), ("log", "from ctx.log"), ("stdout", "unterminated")]
    isolation = frames[-1]["outputs"]["isolation"]
    assert plugin.close() == 0
    assert b"loading: before any turn" in plugin.stderr  # between turns stray output goes to stderr
    for line in plugin.raw:  # every stdout line is a frame (receive() checked each against the schema)
        assert json.loads(line)["type"] in ("log", "result")
    if isolation == "fd":  # a pipe on Linux or macOS: fd 1 is the null device for child processes too
        assert not any(b"from-child-process" in line for line in plugin.raw)
    assert isolation == "fd" or os.name == "nt"


def run_tier2(mode: str, frame: dict[str, Any], scratch: Path) -> tuple[int, list[bytes]]:
    assert NODE is not None
    done = subprocess.run([NODE, str(EXAMPLE), mode], input=json.dumps(frame).encode() + b"\n",
                          capture_output=True, timeout=TIMEOUT, env=plugin_env(scratch), check=False)
    return done.returncode, done.stdout.splitlines(keepends=True)


def test_tier2_describe_answers_one_frame_and_exits(scratch: Path) -> None:
    code, lines = run_tier2("describe", {"type": "describe"}, scratch)
    assert code == 0 and len(lines) == 1 and lines[0].endswith(b"\n")
    frame = json.loads(lines[0])
    assert problems("plugin_frame", frame) == [] and frame["type"] == "describe_result"


def test_tier2_run_has_no_rpc(scratch: Path) -> None:
    code, lines = run_tier2("run", {"type": "run", "inputs": {"text": "one two two"}, "config": {}}, scratch)
    frames = [json.loads(line) for line in lines]
    assert code == 0 and [f["type"] for f in frames] == ["log", "result"]
    assert all(problems("plugin_frame", f) == [] for f in frames)
    assert frames[-1]["outputs"]["record_id"] is None and frames[-1]["outputs"]["unique_words"] == 2


def test_tier2_refuses_a_frame_of_the_other_mode(scratch: Path) -> None:
    code, lines = run_tier2("describe", {"type": "run", "inputs": {}, "config": {}}, scratch)
    [frame] = [json.loads(line) for line in lines]
    assert code == 0 and frame["type"] == "error" and frame["error"]["kind"] == "protocol_error"


ECHO = """
const bb = require(%(sdk)s);
bb.serve({
  id: 'test.echo', name: 'Echo', capabilities: [],
  inputs: {blob: {type: 'bytes'}, table: {type: 'table'}},
  outputs: {blob: {type: 'bytes'}, table: {type: 'table'}, size: {type: 'integer'}, rows: {type: 'integer'}},
  run(inputs) {
    return {blob: inputs.blob, table: inputs.table, size: inputs.blob.length, rows: inputs.table.length};
  },
});
"""
COLUMNS = ["i", "x", "s", "ok", "day"]
DTYPES = {"i": "integer", "x": "float", "s": "string", "ok": "boolean", "day": "date"}


def table_data(rows: int) -> dict[str, list[Any]]:
    return {"i": list(range(rows)), "x": [i / 8 for i in range(rows)], "s": [f"sample-{i}" for i in range(rows)],
            "ok": [i % 3 == 0 for i in range(rows)], "day": [f"2024-05-{i % 28 + 1:02d}" for i in range(rows)]}


@pytest.mark.parametrize(("size", "rows", "inline"), [(1_000_000, 5_000, True), (1_000_001, 5_001, False)],
                         ids=["at-thresholds-inline", "above-thresholds-files"])
def test_bytes_and_tables_round_trip(start: Callable[[Path], NodePlugin], tmp_path: Path, scratch: Path,
                                     size: int, rows: int, inline: bool) -> None:
    script = tmp_path / "echo-plugin.js"
    script.write_text(ECHO % {"sdk": json.dumps(str(SDK))}, encoding="utf-8")
    blob = bytes(i * 7 % 251 for i in range(size))
    data = table_data(rows)
    if inline:
        blob_in = {"encoding": "base64", "data": base64.b64encode(blob).decode()}
        table_in = {"encoding": "inline", "columns": COLUMNS, "dtypes": DTYPES, "data": data}
    else:
        (scratch / "in.bin").write_bytes(blob)
        blob_in = {"encoding": "path", "path": str(scratch / "in.bin")}
        lines = [json.dumps({"columns": COLUMNS, "dtypes": DTYPES})]
        lines += [json.dumps({c: data[c][i] for c in COLUMNS}) for i in range(rows)]
        (scratch / "in.ndjson").write_text("\n".join(lines) + "\n", encoding="utf-8")
        table_in = {"encoding": "ndjson_path", "path": str(scratch / "in.ndjson")}
    assert problems("binary", blob_in) == [] and problems("table", table_in) == []

    plugin = start(script)
    [final] = plugin.request({"type": "run", "inputs": {"blob": blob_in, "table": table_in}, "config": {}})
    assert final["type"] == "result", final
    out = final["outputs"]
    assert out["size"] == size and out["rows"] == rows
    assert problems("binary", out["blob"]) == [] and problems("table", out["table"]) == []
    if inline:
        assert out["blob"]["encoding"] == "base64" and base64.b64decode(out["blob"]["data"]) == blob
        assert out["table"] == {"encoding": "inline", "columns": COLUMNS, "dtypes": DTYPES, "data": data}
    else:
        assert out["blob"]["encoding"] == "path" and Path(out["blob"]["path"]).parent == scratch
        assert Path(out["blob"]["path"]).read_bytes() == blob
        assert out["table"]["encoding"] == "ndjson_path" and Path(out["table"]["path"]).parent == scratch
        header, *body = Path(out["table"]["path"]).read_text(encoding="utf-8").splitlines()
        assert problems("ndjson_header", json.loads(header)) == []
        assert json.loads(header) == {"columns": COLUMNS, "dtypes": DTYPES}
        assert [json.loads(line) for line in body] == [{c: data[c][i] for c in COLUMNS} for i in range(rows)]
    assert plugin.close() == 0
