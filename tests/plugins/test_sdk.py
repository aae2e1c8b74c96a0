"""The Python plugin SDK (``benchbook.plugin``) in real plugin processes.

Each test starts ``python -m benchbook.plugin tests/plugins/sdk_plugins/<plugin>.py`` (or a
script that calls ``plugin.main()``) with pipes on standard input and output and plays the host:
it writes frames, answers ``rpc_call`` frames, and checks that every line the plugin writes is
one JSON frame valid against ``#/$defs/plugin_frame`` of the shipped schema — validated here with
jsonschema directly, not with the SDK's own checks.
"""
from __future__ import annotations

import base64
import datetime as dt
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from benchbook.plugin import (
    BINARY_INLINE_THRESHOLD,
    MAX_FRAME_BYTES,
    TABLE_INLINE_ROWS,
    Plugin,
    PluginDefinitionError,
    ProtocolError,
    dataframe_to_envelope,
    envelope_to_dataframe,
    validate_host_frame,
    validate_plugin_frame,
)
from benchbook.plugin.wire import schema_problems
from tests.waiting import HANG

HERE = Path(__file__).resolve().parent
PLUGINS = HERE / "sdk_plugins"
VECTORS = sorted((HERE.parents[1] / "plugin-protocol" / "vectors").glob("*.json"))
TIMEOUT = HANG

Frame = dict[str, Any]
RpcAnswer = Callable[[Frame], Frame]


@cache
def validator(definition: str) -> Draft202012Validator:
    text = (resources.files("benchbook") / "plugin-protocol" / "frames.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    return Draft202012Validator({**schema, "$ref": f"#/$defs/{definition}"})


def assert_valid(definition: str, instance: object) -> None:
    errors = [f"{e.json_path}: {e.message}" for e in validator(definition).iter_errors(instance)]
    assert not errors, errors


class PluginProcess:
    """One plugin process; every stdout line is checked to be a valid plugin frame."""

    def __init__(self, argv: list[str], scratch: Path, cwd: Path) -> None:
        env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TZ") if key in os.environ}
        env["BENCHBOOK_SCRATCH"] = str(scratch)
        self.stderr_path = cwd / f"stderr-{id(self)}.txt"
        self.stderr_file = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.raw: list[bytes] = []
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send_line(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, frame: Frame) -> None:
        self.send_line(json.dumps(frame).encode() + b"\n")

    def recv(self) -> Frame | None:
        line = self.lines.get(timeout=TIMEOUT)
        if line is None:
            return None
        self.raw.append(line)
        assert line.endswith(b"\n"), line[:200]
        frame = json.loads(line)
        assert_valid("plugin_frame", frame)
        return frame  # type: ignore[no-any-return]

    def turn(self, frame: Frame, rpc: RpcAnswer | None = None) -> tuple[Frame, list[Frame], list[Frame]]:
        """Send ``frame``; answer rpc_calls with ``rpc``; return (final frame, logs, rpc_calls)."""
        self.send(frame)
        logs: list[Frame] = []
        calls: list[Frame] = []
        while True:
            got = self.recv()
            assert got is not None, "the plugin closed its output before answering: " + self.stderr()
            if got["type"] == "log":
                logs.append(got)
            elif got["type"] == "rpc_call":
                calls.append(got)
                assert rpc is not None, f"unexpected rpc_call {got}"
                self.send(rpc(got))
            else:
                return got, logs, calls

    def close(self) -> int:
        """Close standard input and wait: the exit status (after checking nothing else came)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=TIMEOUT)
        assert self.recv() is None
        return code

    def stderr(self) -> str:
        self.stderr_file.flush()
        return self.stderr_path.read_text(errors="replace")

    def dispose(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        self.pump.join(timeout=TIMEOUT)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except BrokenPipeError:
                    pass
        self.stderr_file.close()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    path = tmp_path / "scratch"
    path.mkdir()
    return path


@pytest.fixture
def start(tmp_path: Path, scratch: Path) -> Iterator[Callable[..., PluginProcess]]:
    """``start("echo")`` → tier 1; ``start("echo", "run")`` → tier 2 one-shot."""
    started: list[PluginProcess] = []

    def launch(plugin: str, *args: str, script: bool = False) -> PluginProcess:
        path = str(PLUGINS / f"{plugin}.py")
        argv = [sys.executable, path, *args] if script else [sys.executable, "-m", "benchbook.plugin", path, *args]
        proc = PluginProcess(argv, scratch, tmp_path)
        started.append(proc)
        return proc

    yield launch
    for proc in started:
        proc.dispose()


def run_frame(inputs: Frame | None = None, config: Frame | None = None, **extra: Any) -> Frame:
    return {"type": "run", "inputs": inputs or {}, "config": config or {}, **extra}


def error_of(frame: Frame) -> Frame:
    assert frame["type"] == "error", frame
    assert frame["call_id"] is None
    return frame["error"]  # type: ignore[no-any-return]


# -- describe, tiers ----------------------------------------------------------------------------


def test_describe_result_is_a_valid_frame_with_the_declared_contract(start: Callable[..., PluginProcess]) -> None:
    proc = start("echo")
    final, logs, _ = proc.turn({"type": "describe"})
    assert_valid("describe_result", final)
    assert logs == []
    assert final["id"] == "sdk-echo" and final["category"] == "test"
    assert final["inputs"]["count"] == {"type": "integer", "description": "an integer", "required": True}
    assert final["inputs"]["ratio"] == {"type": "float", "description": "", "required": False}
    assert final["config_schema"]["properties"]["mode"]["default"] == "echo"
    assert proc.close() == 0


def test_tier1_loop_answers_every_frame_until_end_of_input(start: Callable[..., PluginProcess]) -> None:
    proc = start("echo")
    for _ in range(2):
        assert proc.turn({"type": "describe"})[0]["type"] == "describe_result"
        assert proc.turn(run_frame({"count": 2}))[0] == {"type": "result", "outputs": {"count": 2, "seen": {
            "types": {"blob": "NoneType", "table": "NoneType", "count": "int", "ratio": "NoneType",
                      "label": "NoneType", "flag": "NoneType", "day": "NoneType", "moment": "NoneType",
                      "doc": "NoneType", "file": "NoneType"},
            "config": {"mode": "echo"}}}}
    assert proc.close() == 0


@pytest.mark.parametrize("mode", ["describe", "run"])
def test_tier2_reads_one_frame_answers_and_exits_0(start: Callable[..., PluginProcess], mode: str) -> None:
    proc = start("echo", mode)
    proc.send({"type": "describe"} if mode == "describe" else run_frame({"count": 5}))
    final = proc.recv()
    assert final is not None
    assert final["type"] == ("describe_result" if mode == "describe" else "result")
    assert proc.proc.wait(timeout=TIMEOUT) == 0
    assert proc.recv() is None
    if mode == "run":
        assert final["outputs"]["count"] == 5


def test_tier2_refuses_a_frame_of_the_other_mode(start: Callable[..., PluginProcess]) -> None:
    proc = start("echo", "run")
    proc.send({"type": "describe"})
    final = proc.recv()
    assert final is not None
    error = error_of(final)
    assert error["kind"] == "protocol_error" and "'run'" in error["message"]
    assert proc.proc.wait(timeout=TIMEOUT) == 1


def test_tier2_rpc_is_unavailable_with_a_clear_error(start: Callable[..., PluginProcess]) -> None:
    proc = start("rpc", "run")
    proc.send(run_frame())
    first = proc.recv()
    assert first == {"type": "log", "message": "starting", "stream": "log"}
    final = proc.recv()
    assert final is not None
    error = error_of(final)
    assert error["kind"] == "rpc_unavailable"
    assert "tier 2" in error["message"] and "'get_context_record'" in error["message"]
    assert proc.proc.wait(timeout=TIMEOUT) == 0


@pytest.mark.parametrize("args", [[], ["describe"], ["run"]])
def test_a_script_serves_itself_with_plugin_main(start: Callable[..., PluginProcess], args: list[str]) -> None:
    proc = start("selfmain", *args, script=True)
    if args != ["run"]:
        assert proc.turn({"type": "describe"})[0]["id"] == "sdk-selfmain"
    if args != ["describe"]:
        final, logs, _ = proc.turn(run_frame({"x": 21}))
        assert final == {"type": "result", "outputs": {"y": 42}}
        assert logs == [{"type": "log", "message": "stray", "stream": "stdout"}]
    assert proc.close() == 0


# -- RPC ------------------------------------------------------------------------------------------


class Host:
    """Answers the rpc plugin's calls like benchbook would; ``deny`` lists refused methods/tools."""

    def __init__(self, scratch: Path, deny: tuple[str, ...] = ()) -> None:
        self.scratch = scratch
        self.deny = deny
        self.big = bytes(range(256)) * 8192  # 2 MiB: sent through a scratch file
        self.stored: dict[str, bytes] = {}

    def __call__(self, call: Frame) -> Frame:
        method, params = call["method"], call["params"]
        name = params["tool"] if method == "call_tool" else method
        if name in self.deny:
            error = {"kind": "capability_denied", "message": f"{name} is not declared", "retryable": False}
            return {"type": "error", "call_id": call["call_id"], "error": error}
        result = self.answer(name, params.get("args", params))
        reply = {"type": "rpc_result", "call_id": call["call_id"], "result": result}
        assert_valid("host_frame", reply)
        return reply

    def answer(self, name: str, args: Frame) -> Frame:
        if name == "get_context_record":
            assert args == {}
            return {"id": "rec1", "data": {"small": "a" * 64, "big": "b" * 64}}
        if name == "get_file":
            if args["sha256"] == "a" * 64:
                return {"encoding": "base64", "data": base64.b64encode(b"hello").decode(), "filename": "h.txt",
                        "size": 5}
            path = self.scratch / "big.bin"
            path.write_bytes(self.big)
            return {"encoding": "path", "path": str(path), "filename": "big.bin", "size": len(self.big)}
        if name == "store_file":
            content = args["content"]
            assert_valid("binary", content)
            data = (base64.b64decode(content["data"]) if content["encoding"] == "base64"
                    else Path(content["path"]).read_bytes())
            self.stored[args["filename"]] = data
            return {"sha256": f"{len(self.stored):064d}", "filename": args["filename"], "size": len(data),
                    "encoding": content["encoding"]}
        if name == "update_record":
            return {"id": args["record_id"], "data": args["data"]}
        if name == "create_record":
            return {"id": "child1", **args}
        if name == "find_records":
            return {"items": [args], "total": 1}
        if name == "get_schema":
            return {"name": args["name"], "fields": []}
        if name == "commit":
            assert args == {}
            return {}
        raise AssertionError(name)


def test_a_run_makes_rpc_round_trips(start: Callable[..., PluginProcess], scratch: Path) -> None:
    host = Host(scratch)
    proc = start("rpc")
    final, logs, calls = proc.turn(run_frame(capabilities=["get_file", "store_file"]), rpc=host)
    assert final["type"] == "result", final
    report = final["outputs"]["report"]
    assert [(c["method"], c["params"].get("tool")) for c in calls] == [
        ("call_tool", "get_context_record"), ("get_file", None), ("get_file", None), ("call_tool", "store_file"),
        ("call_tool", "store_file"), ("update_record", None), ("create_record", None),
        ("call_tool", "find_records"), ("call_tool", "get_schema"), ("commit", None)]
    assert len({c["call_id"] for c in calls}) == len(calls)
    assert calls[5]["params"] == {"record_id": "rec1", "data": {"size": 5}}
    assert calls[6]["params"] == {"collection": "samples", "schema_name": "aliquot", "parent_record_id": "rec1",
                                  "data": {"volume": 5}}
    assert calls[7]["params"]["args"] == {"collection": None, "schema": "aliquot", "limit": 5,
                                          "filter": {"field": "volume", "op": "gt", "value": 1}}
    assert calls[9]["params"] == {}
    assert report["small"] == "hello" and report["big_size"] == len(host.big) and report["big_ok"]
    assert host.stored == {"upper.txt": b"HELLO", "big.bin": host.big}
    assert report["stored"]["encoding"] == "base64" and report["stored_big"]["encoding"] == "path"
    assert report["updated"] == {"id": "rec1", "data": {"size": 5}} and report["denied"] is None
    assert (report["child"], report["found"], report["schema"]) == ("child1", 1, "aliquot")
    assert report["capabilities"] == ["get_file", "store_file"] and report["tier"] == 1
    assert logs == [{"type": "log", "message": "starting", "stream": "log"}]
    assert proc.close() == 0


def test_capability_denied_is_raised_in_the_plugin_which_goes_on(start: Callable[..., PluginProcess],
                                                                  scratch: Path) -> None:
    proc = start("rpc")
    final, logs, calls = proc.turn(run_frame(), rpc=Host(scratch, deny=("update_record",)))
    report = final["outputs"]["report"]
    assert report["denied"] == {"kind": "capability_denied", "message": "update_record is not declared",
                                "retryable": False}
    assert report["updated"] is None and report["child"] == "child1" and calls[-1]["method"] == "commit"
    assert {"type": "log", "message": "not updated: capability_denied", "stream": "log"} in logs


def test_an_uncaught_rpc_error_fails_the_run_with_the_hosts_kind(start: Callable[..., PluginProcess],
                                                                  scratch: Path) -> None:
    proc = start("rpc")
    final, _, calls = proc.turn(run_frame(), rpc=Host(scratch, deny=("get_schema",)))
    assert error_of(final) == {"kind": "capability_denied", "message": "get_schema is not declared",
                               "retryable": False}
    assert calls[-1]["params"]["tool"] == "get_schema"
    assert proc.turn({"type": "describe"})[0]["type"] == "describe_result"


def test_a_wrong_call_id_fails_the_run_with_protocol_error(start: Callable[..., PluginProcess]) -> None:
    proc = start("rpc")
    final, _, _ = proc.turn(run_frame(), rpc=lambda call: {"type": "rpc_result", "call_id": "other", "result": {}})
    error = error_of(final)
    assert error["kind"] == "protocol_error" and "'other'" in error["message"]
    assert proc.turn({"type": "describe"})[0]["type"] == "describe_result"


# -- stray output ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tier", [1, 2])
def test_stray_output_never_reaches_the_wire(start: Callable[..., PluginProcess], tier: int) -> None:
    proc = start("noisy", *(["run"] if tier == 2 else []))
    if tier == 1:
        described, logs, _ = proc.turn({"type": "describe"})
        assert described["type"] == "describe_result" and logs == []
    final, logs, _ = proc.turn(run_frame())
    assert final == {"type": "result", "outputs": {"stdin": "", "child": 0}}
    assert [log["message"] for log in logs] == ["noise", "two", "lines", "buffer bytes", "no newline at the end"]
    assert {log["stream"] for log in logs} == {"stdout"}
    if tier == 1:
        assert proc.turn({"type": "describe"})[0]["type"] == "describe_result"
        assert proc.close() == 0
    else:
        assert proc.proc.wait(timeout=TIMEOUT) == 0
        assert proc.recv() is None
    wire = b"".join(proc.raw)
    for stray in (b"raw", b"printf", b"dunder", b"child-out", b"import noise"):
        assert stray not in wire
    assert "import noise" in proc.stderr()


# -- values ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 10, BINARY_INLINE_THRESHOLD, BINARY_INLINE_THRESHOLD + 1, 3_000_000])
def test_bytes_round_trip_inline_up_to_the_threshold_and_as_a_file_above(
    start: Callable[..., PluginProcess], scratch: Path, size: int
) -> None:
    content = os.urandom(size)
    if size <= BINARY_INLINE_THRESHOLD:
        envelope = {"encoding": "base64", "data": base64.b64encode(content).decode()}
    else:
        (scratch / "in.bin").write_bytes(content)
        envelope = {"encoding": "path", "path": "in.bin" if size % 2 else str(scratch / "in.bin")}
    proc = start("echo")
    final, _, _ = proc.turn(run_frame({"blob": envelope, "count": 1}))
    out = final["outputs"]["blob"]
    assert_valid("binary", out)
    assert final["outputs"]["seen"]["types"]["blob"] == "bytes"
    if size <= BINARY_INLINE_THRESHOLD:
        assert out["encoding"] == "base64"
        assert base64.b64decode(out["data"]) == content
    else:
        assert out["encoding"] == "path" and Path(out["path"]).parent == scratch.resolve()
        assert Path(out["path"]).read_bytes() == content


TZ = dt.timezone(dt.timedelta(hours=2))
DTYPES = {"i": "integer", "f": "float", "s": "string", "b": "boolean", "d": "date", "t": "datetime"}


def table_columns(rows: int) -> dict[str, list[Any]]:
    def nulls(every: int, values: list[Any]) -> list[Any]:
        return [None if n % every == every - 1 else v for n, v in enumerate(values)]

    span = range(rows)
    return {
        "i": nulls(7, [n * 3 - 10 for n in span]),
        "f": nulls(5, [n / 4 for n in span]),
        "s": nulls(3, [f"é{n}" for n in span]),
        "b": nulls(11, [n % 2 == 0 for n in span]),
        "d": nulls(13, [(dt.date(2020, 1, 1) + dt.timedelta(days=n % 3000)).isoformat() for n in span]),
        "t": nulls(17, [(dt.datetime(2024, 1, 1, tzinfo=TZ) + dt.timedelta(minutes=n)).isoformat() for n in span]),
    }


def read_table(envelope: Frame) -> tuple[Frame, dict[str, list[Any]]]:
    """(dtypes, columns) of a table envelope, decoded the plain way."""
    assert_valid("table", envelope)
    if envelope["encoding"] == "inline":
        return envelope["dtypes"], envelope["data"]
    lines = Path(envelope["path"]).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert_valid("ndjson_header", header)
    rows = [json.loads(line) for line in lines[1:]]
    return header["dtypes"], {c: [row.get(c) for row in rows] for c in header["columns"]}


@pytest.mark.parametrize("rows", [0, 3, TABLE_INLINE_ROWS, TABLE_INLINE_ROWS + 1, 20_000])
def test_tables_round_trip_inline_up_to_the_row_threshold_and_as_ndjson_above(
    start: Callable[..., PluginProcess], scratch: Path, rows: int
) -> None:
    columns = table_columns(rows)
    if rows <= TABLE_INLINE_ROWS:
        envelope: Frame = {"encoding": "inline", "columns": list(DTYPES), "dtypes": DTYPES, "data": columns}
    else:
        lines = [json.dumps({"columns": list(DTYPES), "dtypes": DTYPES})]
        lines += [json.dumps({c: columns[c][n] for c in DTYPES if columns[c][n] is not None}) for n in range(rows)]
        (scratch / "in.ndjson").write_text("\n".join(lines) + "\n", encoding="utf-8")
        envelope = {"encoding": "ndjson_path", "path": str(scratch / "in.ndjson")}
    proc = start("echo")
    final, _, _ = proc.turn(run_frame({"table": envelope, "count": 1}))
    assert final["type"] == "result", final
    seen = final["outputs"]["seen"]["types"]
    assert seen["table"] == {"i": "Int64", "f": "float64", "s": "string", "b": "boolean", "d": "object",
                             "t": "datetime64[us, UTC]"}
    if rows:
        assert seen["table.day.first"] == "date"
    out = final["outputs"]["table"]
    assert out["encoding"] == ("inline" if rows <= TABLE_INLINE_ROWS else "ndjson_path")
    dtypes, data = read_table(out)
    assert dtypes == DTYPES
    for name in ("i", "f", "s", "b", "d"):
        assert data[name] == columns[name], name
    as_instant = [None if v is None else dt.datetime.fromisoformat(v) for v in columns["t"]]
    assert [None if v is None else dt.datetime.fromisoformat(v) for v in data["t"]] == as_instant
    assert all(v is None or v.endswith("+00:00") for v in data["t"])


def test_scalar_values_round_trip(start: Callable[..., PluginProcess]) -> None:
    inputs = {"count": 4.0, "ratio": 2, "label": "x", "flag": False, "day": "2024-02-28",
              "moment": "2024-03-01T12:30:00Z", "doc": {"a": [1, None, "b"]}, "file": "AB" * 32}
    final, _, _ = start("echo").turn(run_frame(inputs, {"times": 2}))
    outputs = final["outputs"]
    assert outputs["count"] == 4 and isinstance(outputs["count"], int)
    assert outputs["ratio"] == 2.0 and outputs["label"] == "x" and outputs["flag"] is False
    assert outputs["day"] == "2024-02-29"
    assert outputs["moment"] == "2024-03-01T12:30:00+00:00"
    assert outputs["doc"] == {"a": [1, None, "b"]} and outputs["file"] == "ab" * 32
    assert outputs["seen"]["config"] == {"times": 2, "mode": "echo"}
    assert outputs["seen"]["types"]["day"] == "date" and outputs["seen"]["types"]["moment"] == "datetime"


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "kind", "message"), [
    ("raise", "plugin_error", "boom"),
    ("empty", "plugin_error", "RuntimeError"),
    ("exit", "plugin_error", "3"),
    ("plugin_error", "sample_missing", "no sample sheet"),
    ("undeclared", "invalid_output", "undeclared outputs ['extra']"),
    ("naive", "invalid_output", "timezone"),
    ("not_dict", "invalid_output", "must return a dict"),
    ("missing", "invalid_output", "output 'n' is required"),
])
def test_a_failing_run_ends_with_one_error_frame_and_the_loop_goes_on(
    start: Callable[..., PluginProcess], mode: str, kind: str, message: str
) -> None:
    proc = start("failing")
    final, _, _ = proc.turn(run_frame(config={"mode": mode}))
    error = error_of(final)
    assert error["kind"] == kind and message in error["message"], error
    assert error["retryable"] is (mode == "plugin_error")
    if mode == "raise":
        assert "Traceback" in proc.stderr() and "ValueError: boom" in proc.stderr()
    assert proc.turn(run_frame(config={"mode": "ok"}))[0] == {
        "type": "result", "outputs": {"n": 1, "when": "2024-01-01T00:00:00+00:00"}}
    assert proc.close() == 0


@pytest.mark.parametrize(("inputs", "message"), [
    ({}, "input 'count' is required"),
    ({"count": None}, "input 'count' is required"),
    ({"count": "3"}, "input 'count' (integer): expected an integer"),
    ({"count": True}, "expected an integer"),
    ({"count": 1, "colour": "red"}, "undeclared inputs ['colour']"),
    ({"count": 1, "day": "2024-02-30"}, "input 'day' (date)"),
    ({"count": 1, "moment": "2024-01-01T10:00:00"}, "has no offset"),
    ({"count": 1, "file": "abc"}, "sha256"),
    ({"count": 1, "blob": {"encoding": "base64", "data": "@@@"}}, "not base64"),
    ({"count": 1, "blob": {"encoding": "path", "path": "/nonexistent/x.bin"}}, "cannot read"),
    ({"count": 1, "blob": "aGk="}, "not a valid binary envelope"),
    ({"count": 1, "table": {"encoding": "inline", "columns": ["a"], "dtypes": {"a": "integer"},
                            "data": {"a": [1, "x"]}}}, "column 'a', row 1"),
    ({"count": 1, "table": {"encoding": "inline", "columns": ["a"], "dtypes": {}, "data": {"b": [1]}}},
     "table data has columns"),
])
def test_inputs_that_break_their_declared_types_are_invalid_input(
    start: Callable[..., PluginProcess], inputs: Frame, message: str
) -> None:
    final, _, _ = start("echo").turn(run_frame(inputs))
    error = error_of(final)
    assert error["kind"] == "invalid_input" and message in error["message"], error


@pytest.mark.parametrize("config", [{"mode": "loud"}, {"times": "2"}, {"other": 1}])
def test_config_that_fails_the_config_schema_is_invalid_config(
    start: Callable[..., PluginProcess], config: Frame
) -> None:
    final, _, _ = start("echo").turn(run_frame({"count": 1}, config))
    assert error_of(final)["kind"] == "invalid_config"


@pytest.mark.parametrize(("line", "words"), [
    (b"not json\n", "not JSON"),
    (b'["describe"]\n', "is not of type 'object'"),
    (b'{"type": "run", "inputs": {}}\n', "'config' is a required property"),
    (b'{"type": "result", "outputs": {}}\n', "'result'"),
    (b'{"type": "rpc_result", "call_id": "c1", "result": {}}\n', "no rpc_call is waiting"),
    (b'{"type": "describe"}' + b" " * MAX_FRAME_BYTES + b"\n", "frame_too_large"),
])
def test_bad_frames_are_answered_with_protocol_errors_and_the_loop_goes_on(
    start: Callable[..., PluginProcess], line: bytes, words: str
) -> None:
    proc = start("echo")
    proc.send_line(line)
    final = proc.recv()
    assert final is not None
    error = error_of(final)
    expected_kind = "frame_too_large" if words == "frame_too_large" else "protocol_error"
    assert error["kind"] == expected_kind and (words == expected_kind or words in error["message"]), error
    assert proc.turn({"type": "describe"})[0]["type"] == "describe_result"
    assert proc.close() == 0


@pytest.mark.parametrize(("plugin", "message"), [
    ("two_plugins", "2 Plugin instances (first, second)"),
    ("import_error", "RuntimeError: cannot start: missing calibration"),
])
def test_a_plugin_file_that_cannot_be_loaded_answers_with_plugin_error(
    start: Callable[..., PluginProcess], plugin: str, message: str
) -> None:
    proc = start(plugin)
    final, _, _ = proc.turn({"type": "describe"})
    error = error_of(final)
    assert error["kind"] == "plugin_error" and message in error["message"], error
    assert proc.close() == 1


# -- the SDK in-process -------------------------------------------------------------------------


def test_the_sdk_imports_nothing_of_the_server_and_pandas_only_when_needed() -> None:
    code = "import sys, benchbook.plugin; print(sorted(m for m in sys.modules if m.startswith(('benchbook', 'pandas'))))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, check=True)
    modules = json.loads(done.stdout.replace("'", '"'))
    assert all(m == "benchbook" or m.startswith("benchbook.plugin") for m in modules), modules


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"id": "Bad Id"}, "does not match"),
    ({"inputs": {"x": {"type": "text"}}}, "'text' is not one of"),
    ({"inputs": {"x": {"type": "integer", "default": 3}}}, "'default' was unexpected"),
    ({"capabilities": ["call_tool"]}, "call_tool"),
    ({"config_schema": {"type": "nope"}}, "not a valid JSON Schema"),
])
def test_an_invalid_declaration_raises_plugin_definition_error(kwargs: Frame, words: str) -> None:
    with pytest.raises(PluginDefinitionError) as caught:
        Plugin(**{"id": "ok", "name": "OK", **kwargs})
    assert words in str(caught.value)


def test_a_second_run_function_is_refused() -> None:
    plugin = Plugin(id="twice", name="Twice")
    plugin.run(lambda ctx, inputs, config: {})
    with pytest.raises(PluginDefinitionError, match="already has a run function"):
        plugin.run(lambda ctx, inputs, config: {})


def test_describe_returns_a_valid_describe_result_frame() -> None:
    plugin = Plugin(id="d", name="D", inputs={"t": "table"}, capabilities=["commit"])
    described = plugin.describe()
    assert_valid("plugin_frame", described)
    assert described["inputs"] == {"t": {"type": "table", "description": "", "required": False}}
    described["inputs"].clear()
    assert plugin.describe()["inputs"]  # a copy each time


def test_output_dtypes_are_inferred_from_the_dataframe(tmp_path: Path) -> None:
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({
        "int": np.array([1, 2], dtype="uint8"), "obj_int": pd.Series([3, None], dtype=object),
        "float": [1, 2.5], "str": ["x", "y"], "cat": pd.Categorical(["u", "v"]), "bool": [True, False],
        "date": [dt.date(2024, 1, 1), None], "nulls": [None, None],
        "aware": pd.to_datetime(["2024-01-01", "2024-07-01"]).tz_localize("Europe/Berlin"),
    })
    envelope = dataframe_to_envelope(frame, tmp_path)
    assert envelope["dtypes"] == {"int": "integer", "obj_int": "integer", "float": "float", "str": "string",
                                  "cat": "string", "bool": "boolean", "date": "date", "nulls": "string",
                                  "aware": "datetime"}
    assert envelope["data"]["aware"] == ["2024-01-01T00:00:00+01:00", "2024-07-01T00:00:00+02:00"]
    assert envelope["data"]["obj_int"] == [3, None] and envelope["data"]["date"] == ["2024-01-01", None]
    back = envelope_to_dataframe({**envelope, "dtypes": {**envelope["dtypes"], "nulls": "date"}})
    assert dataframe_to_envelope(back, tmp_path)["dtypes"]["nulls"] == "date"  # kept in frame.attrs


@pytest.mark.parametrize(("column", "words"), [
    ("naive", "naive datetime64"), ("mixed", "one scalar type per column"), ("inf", "JSON cannot carry"),
    ("delta", "no table dtype matches"),
])
def test_output_columns_without_a_table_dtype_are_refused(tmp_path: Path, column: str, words: str) -> None:
    import pandas as pd

    values = {"naive": pd.to_datetime(["2024-01-01"]), "mixed": [1, "a"], "inf": [float("inf")],
              "delta": [pd.Timedelta(1)]}
    with pytest.raises(ValueError, match=words):
        dataframe_to_envelope(pd.DataFrame({column: values[column]}), tmp_path)


# -- conformance vectors ------------------------------------------------------------------------


@pytest.mark.skipif(not VECTORS, reason="plugin-protocol/vectors/ holds no vectors yet")
@pytest.mark.parametrize("path", VECTORS, ids=[p.name for p in VECTORS])
def test_the_sdk_validation_agrees_with_every_vector(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    if "envelope" in vector:
        problems = schema_problems(vector["envelope"], vector["value"])
        message = "; ".join(problems) if problems else None
    else:
        check = validate_host_frame if vector["direction"] == "host_to_plugin" else validate_plugin_frame
        try:
            check(vector["frame"])
            message = None
        except ProtocolError as exc:
            message = exc.message
    if vector["valid"]:
        assert message is None, message
    else:
        assert message is not None, "accepted an invalid vector"
        assert vector["violation"] in message, message
