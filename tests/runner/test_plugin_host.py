"""The tier-1 host against real subprocess plugins that speak the raw wire protocol (no SDK):
the happy path with logs and RPC, and every way a plugin can fail without harming the host."""
from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host.frames import MAX_FRAME_BYTES, port_problems, violation
from benchbook.runner.plugin_host.host import PluginProcess
from tests.runner.rawplugin import contract, script
from tests.waiting import HANG, until

DESCRIBE = contract(capabilities=["get_schema"])


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process now (a zombie left for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def ended(pid: int) -> bool:
    """Wait until process ``pid`` has ended (bounded only by :data:`~tests.waiting.HANG`)."""
    return until(lambda: not alive(pid), f"process {pid} to end")


def plugin(tmp_path: Path, body: str) -> list[str]:
    where = tmp_path / "plugin.py"
    where.write_text(script(f"DESCRIBE = {DESCRIBE!r}\n" + textwrap.dedent(body)))
    return [sys.executable, str(where)]


RUN = {"type": "run", "inputs": {"text": "a b c"}, "config": {}}


def test_a_run_relays_logs_answers_rpc_and_returns_the_result(tmp_path: Path) -> None:
    argv = plugin(tmp_path, """
        for f in frames():
            if f["type"] == "describe":
                send(DESCRIBE)
            else:
                print("stray print never reaches the wire")
                os.write(1, b"raw write to fd 1\\n")
                send({"type": "log", "message": "counting", "stream": "log"})
                sys.stderr.write("a line on stderr\\n"); sys.stderr.flush()
                send({"type": "rpc_call", "call_id": "c1", "method": "call_tool",
                      "params": {"tool": "get_schema", "args": {"name": "x"}}})
                answer = json.loads(sys.stdin.readline())
                send({"type": "result", "outputs": {"words": len(f["inputs"]["text"].split()),
                                                    "echo": answer}})
    """)
    logs: list[tuple[str, str]] = []
    calls: list[dict[str, Any]] = []

    def rpc(frame: dict[str, Any]) -> dict[str, Any]:
        calls.append(frame)
        return {"type": "rpc_result", "call_id": frame["call_id"], "result": {"name": "x"}}

    with PluginProcess(argv, cwd=tmp_path) as proc:
        described = proc.request({"type": "describe"}, timeout=HANG)
        assert described["id"] == "t"
        final = proc.request(RUN, timeout=HANG, rpc=rpc, log=lambda s, m: logs.append((s, m)))
        again = proc.request(RUN, timeout=HANG, rpc=rpc)  # the same process serves the next step
        pid = proc.proc.pid
        scratch = proc.scratch
        assert scratch.is_dir()
    assert final["type"] == "result" and final["outputs"]["words"] == 3
    assert final["outputs"]["echo"] == {"type": "rpc_result", "call_id": "c1", "result": {"name": "x"}}
    assert again["outputs"]["words"] == 3
    assert calls[0]["params"]["tool"] == "get_schema"
    assert ("log", "counting") in logs
    assert not scratch.exists()
    assert ended(pid)


def test_the_plugin_gets_a_minimal_environment_and_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHBOOK_AI_KEY", "sk-secret")
    monkeypatch.setenv("DATABASE_URL", "postgresql://secret")
    argv = plugin(tmp_path, """
        for f in frames():
            send({"type": "result", "outputs": {"env": dict(os.environ), "cwd": os.getcwd()}})
    """)
    with PluginProcess(argv, cwd=tmp_path) as proc:
        final = proc.request(RUN, timeout=HANG)
        env = final["outputs"]["env"]
        assert env["BENCHBOOK_SCRATCH"] == str(proc.scratch)
        assert env["BENCHBOOK_RUN_MARKER"] == proc.marker
    assert "BENCHBOOK_AI_KEY" not in env and "DATABASE_URL" not in env
    assert {k for k in env if not k.startswith("COVERAGE_")} <= {
        "PATH", "HOME", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "TMPDIR", "BENCHBOOK_SCRATCH", "BENCHBOOK_RUN_MARKER",
        "LC_CTYPE"}
    assert final["outputs"]["cwd"] == str(tmp_path)


def test_an_rpc_call_without_a_handler_is_denied_and_the_plugin_may_go_on(tmp_path: Path) -> None:
    argv = plugin(tmp_path, """
        for f in frames():
            send({"type": "rpc_call", "call_id": "c1", "method": "commit", "params": {}})
            answer = json.loads(sys.stdin.readline())
            send({"type": "result", "outputs": {"denied": answer["error"]["kind"]}})
    """)
    with PluginProcess(argv, cwd=tmp_path) as proc:
        assert proc.request(RUN, timeout=HANG)["outputs"] == {"denied": "capability_denied"}


FAILURES = {
    "process_exit": """
        for f in frames():
            sys.stderr.write("boom: something broke\\n"); sys.stderr.flush()
            os._exit(3)
    """,
    "protocol_error": """
        for f in frames():
            out.write("this is not json\\n"); out.flush()
    """,
    "schema": """
        for f in frames():
            send({"type": "log", "message": 42})
    """,
    "wrong_type": """
        for f in frames():
            send(DESCRIBE)
    """,
    "frame_too_large": f"""
        for f in frames():
            out.write('{{"type": "log", "message": "' + "x" * {MAX_FRAME_BYTES} + '"}}\\n'); out.flush()
    """,
}


@pytest.mark.parametrize(("case", "kind", "words"), [
    ("process_exit", "process_exit", "exited with code 3 before answering; stderr: boom: something broke"),
    ("protocol_error", "protocol_error", "not JSON"),
    ("schema", "protocol_error", "42 is not of type 'string'"),
    ("wrong_type", "protocol_error", "answered 'run' with a 'describe_result' frame"),
    ("frame_too_large", "frame_too_large", "over 16777216 bytes"),
])
def test_a_misbehaving_plugin_fails_its_step_with_a_kind_naming_what_went_wrong(
        tmp_path: Path, case: str, kind: str, words: str) -> None:
    with PluginProcess(plugin(tmp_path, FAILURES[case]), cwd=tmp_path) as proc:
        with pytest.raises(StepFailed) as caught:
            proc.request(RUN, timeout=HANG)  # every case is answered by what the plugin does, never by the clock
        assert proc.proc.poll() is not None  # the plugin was stopped
    assert caught.value.kind == kind
    assert words in caught.value.message


def test_a_line_that_reaches_the_limit_without_its_newline_is_refused_at_once(tmp_path: Path) -> None:
    """The plugin writes exactly MAX_FRAME_BYTES bytes and no newline, then blocks for ever:
    with its newline the line would pass the limit, so the host answers frame_too_large as soon
    as those bytes are in, not at the step's timeout (the byte-at-a-time reader waited for one
    more byte until then)."""
    argv = plugin(tmp_path, f"""
        import threading
        for f in frames():
            out.write("x" * {MAX_FRAME_BYTES}); out.flush()
            threading.Event().wait()
    """)
    with PluginProcess(argv, cwd=tmp_path) as proc:
        with pytest.raises(StepFailed) as caught:
            proc.request(RUN, timeout=HANG)
        assert not proc.alive()
    assert caught.value.kind == "frame_too_large"


def test_a_line_of_exactly_the_limit_is_a_frame(tmp_path: Path) -> None:
    frame = {"type": "log", "message": "", "stream": "log"}
    pad = MAX_FRAME_BYTES - len(json.dumps(frame)) - 1  # the newline counts
    argv = plugin(tmp_path, f"""
        for f in frames():
            line = json.dumps({{"type": "log", "message": "x" * {pad}, "stream": "log"}})
            out.write(line + "\\n")
            send({{"type": "result", "outputs": {{"length": len(line) + 1}}}})
    """)
    logs: list[str] = []
    with PluginProcess(argv, cwd=tmp_path) as proc:
        final = proc.request(RUN, timeout=HANG, log=lambda s, m: logs.append(m))
    assert final["outputs"] == {"length": MAX_FRAME_BYTES}
    assert len(logs) == 1 and len(logs[0]) == pad


def test_a_hanging_plugin_times_out_and_its_whole_process_group_is_killed(tmp_path: Path) -> None:
    """The plugin and its child sleep three times :data:`HANG`: only the kill of the group ends
    them before that. The plugin is up (it answered describe) before the 1 s step starts, so the
    timeout can only be the run's."""
    argv = plugin(tmp_path, f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "{3 * HANG:.0f}"])
        for f in frames():
            if f["type"] == "describe":
                send({{"type": "log", "message": str(child.pid)}})
                send(DESCRIBE)
            else:
                time.sleep({3 * HANG})
    """)
    logs: list[tuple[str, str]] = []
    with PluginProcess(argv, cwd=tmp_path) as proc:
        proc.request({"type": "describe"}, timeout=HANG, log=lambda s, m: logs.append((s, m)))
        child = int(logs[0][1])
        started = time.monotonic()
        with pytest.raises(StepFailed) as caught:
            proc.request(RUN, timeout=1.0)
        assert time.monotonic() - started < HANG  # long before the plugin's sleep would have ended
        assert not proc.alive()
    assert caught.value.kind == "timeout"
    assert ended(child)  # within HANG: killed, not at the end of its sleep


def test_megabytes_on_stderr_do_not_stall_the_plugin(tmp_path: Path) -> None:
    argv = plugin(tmp_path, """
        for f in frames():
            for i in range(40000):
                sys.stderr.write("noise line %d of the plugin's standard error output\\n" % i)
            sys.stderr.flush()
            send({"type": "result", "outputs": {"words": 1}})
    """)
    lines: list[str] = []
    with PluginProcess(argv, cwd=tmp_path, log=lambda s, m: lines.append(m)) as proc:
        assert proc.request(RUN, timeout=HANG)["outputs"] == {"words": 1}
    until(lambda: len(lines) >= 40000, "the 40,000 lines of standard error to be relayed")  # by the reader thread
    assert len(lines) == 40000 and lines[-1].startswith("noise line 39999 ")


def test_a_command_that_cannot_start_is_a_process_exit(tmp_path: Path) -> None:
    with pytest.raises(StepFailed) as caught:
        PluginProcess([str(tmp_path / "missing")], cwd=tmp_path)
    assert caught.value.kind == "process_exit"


@pytest.mark.parametrize(("ports", "values", "problems"), [
    ({"n": {"type": "integer", "required": True}}, {}, ["'n' is required"]),
    ({"n": {"type": "integer"}}, {"n": True}, ["'n': expected integer, got true"]),
    ({"n": {"type": "float"}}, {"n": 2}, []),
    ({"d": {"type": "date"}}, {"d": "2024-02-30"}, ["'d': expected date, got \"2024-02-30\""]),
    ({"t": {"type": "datetime"}}, {"t": "2024-02-01T10:00:00+01:00"}, []),
    ({"f": {"type": "file"}}, {"f": "ab" * 32}, []),
    ({"f": {"type": "file"}}, {"f": "nope"}, ["'f': expected file, got \"nope\""]),
    ({"b": {"type": "bytes"}}, {"b": {"encoding": "base64", "data": "aGk="}}, []),
    ({"t": {"type": "table"}}, {"t": {"encoding": "inline", "columns": ["a"], "dtypes": {"a": "integer"},
                                      "data": {"a": [1]}}}, []),
    ({"t": {"type": "table"}}, {"t": {"encoding": "csv"}}, None),
    ({}, {"x": 1}, ["'x' is not declared"]),
    ({"j": {"type": "json"}}, {"j": {"any": ["thing"]}}, []),
])
def test_values_are_checked_against_the_declared_ports(ports: dict[str, Any], values: dict[str, Any],
                                                       problems: list[str] | None) -> None:
    found = port_problems(ports, values)
    if problems is None:
        assert len(found) == 1 and found[0].startswith("'t': ")
    else:
        assert found == problems


def test_violations_name_the_offending_part() -> None:
    frame = {"type": "rpc_call", "call_id": "1", "method": "call_tool", "params": {"tool": "x"}}
    assert violation(frame, "plugin_frame") == "'args' is a required property at ['params']"
    assert violation(json.loads('{"type": "describe"}'), "host_frame") is None
