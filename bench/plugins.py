"""Plugin benchmarks: the tier-1 step round trip, a 1 MB output's round trip and the cold start, run
on demand (never in the tests).

    python bench/plugins.py [--runs 2000] [--cold 20] [--warmup 50] [--big-runs 50]

Everything is timed in process: this script is the host (``benchbook.runner.plugin_host.host``'s
``PluginProcess``, as the step runner uses it) and talks to a plugin subprocess over its
standard input and output pipes; wall clock per operation. Three subprocesses, all started with
this interpreter and the host's minimal environment:

- **bare echo**: a five-line Python script that reads a line and writes it back, no JSON, no
  checks; driven with a raw pipe write + readline from this script (no host): the floor a
  line-per-turn protocol can reach on this machine;
- **raw plugin**: a plugin without the SDK (``json.loads``/``json.dumps``, fd 1 isolated by hand)
  driven through ``PluginProcess.request``: what the host's own reader thread and frame checks
  cost;
- **SDK plugin**: a minimal ``benchbook.plugin`` plugin (``python -m benchbook.plugin
  plugin.py``, input ``text`` echoed to output ``text``) driven through
  ``PluginProcess.request``: what a plugin author gets.

Prints, measured in the same run:

- the step round trip (``run`` frame out, ``result`` frame back) of each: p50 and p99 over
  ``--runs`` round trips after ``--warmup`` untimed ones, and the ratio SDK plugin / bare echo
  (target: p50 <= 2x the echo);
- where the round trip goes (no target): the frame checks alone, timed in this process with no
  subprocess — the host's ``frames.parse_plugin_line`` of the ``result`` line (JSON plus
  ``#/$defs/plugin_frame``), and the SDK's ``validate_host_frame`` of the ``run`` frame plus
  ``validate_plugin_frame`` of the ``result`` frame (what a plugin does on every step);
- a 1 MB output's round trip (issue 33 finding 9): a ``result`` whose ``bytes`` output holds
  ``BINARY_INLINE_THRESHOLD`` bytes inline (a line of 1.33 MB of base64), p50 over ``--big-runs``:
  the baseline is a child that answers each request line by writing that very line to its
  standard output, read here with a buffered ``readline`` (writing the same bytes to a pipe);
  measured against it, a raw plugin writing the same line, read through
  ``PluginProcess.request`` (target: p50 <= 2x the pipe), and an SDK plugin returning the bytes
  through ``StepRunner.run_step`` (the SDK encodes, the host decodes and checks; no target);
- the cold start of each: process start to the first answer (``describe_result`` answered for
  the plugins, the echoed ``describe`` line for the echo), p50 over ``--cold`` starts, and the
  ratio SDK plugin / bare echo (no target).

Each line ends with its target and the verdict, ``met`` or ``missed``, or ``no target``.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbook.plugin import validate_host_frame, validate_plugin_frame
from benchbook.runner.plugin_host.frames import BINARY_INLINE_THRESHOLD, encode, parse_plugin_line
from benchbook.runner.plugin_host.host import PluginProcess, plugin_env
from benchbook.runner.plugin_host.steps import StepRunner

ROUND_TRIP_TARGET = 2.0
"""The SDK plugin's round trip may take at most this many times the bare echo's (p50)."""
TEXT = "the quick brown fox jumps over the lazy dog"
RUN = {"type": "run", "inputs": {"text": TEXT}, "config": {}, "capabilities": []}

ECHO = """\
import sys
read, write = sys.stdin.buffer.readline, sys.stdout.buffer
while line := read():
    write.write(line)
    write.flush()
"""

RAW = """\
import json, os, sys
out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
DESCRIBED = {"type": "describe_result", "id": "bench.raw", "name": "Raw echo", "description": "",
             "category": "bench", "capabilities": [], "inputs": {"text": {"type": "string", "required": True}},
             "outputs": {"text": {"type": "string", "required": True}}, "config_schema": {"type": "object"}}
for line in sys.stdin:
    frame = json.loads(line)
    if frame["type"] == "describe":
        answer = DESCRIBED
    else:
        answer = {"type": "result", "outputs": {"text": frame["inputs"]["text"]}}
    out.write(json.dumps(answer) + "\\n")
"""

SDK = """\
from benchbook.plugin import Plugin

plugin = Plugin(
    id="bench.echo", name="Echo", description="Returns its text", category="bench",
    inputs={"text": {"type": "string", "required": True}},
    outputs={"text": {"type": "string", "required": True}},
)


@plugin.run
def run(ctx, inputs, config):
    return {"text": inputs["text"]}
"""


BIG_TARGET = 2.0
"""A 1 MB output read through the host may take at most this many times the raw pipe (p50)."""
BIG_PAYLOAD = bytes(range(256)) * (BINARY_INLINE_THRESHOLD // 256) + bytes(BINARY_INLINE_THRESHOLD % 256)
BIG_LINE = encode({"type": "result", "outputs": {"data": {"encoding": "base64",
                                                          "data": base64.b64encode(BIG_PAYLOAD).decode()}}})
BIG_FRAMING = len(BIG_LINE) - len(base64.b64encode(BIG_PAYLOAD))
"""Bytes of the 1 MB line that are not its base64 text."""
BIG_ANSWER = """\
import os, sys
line = open(sys.argv[1], "rb").read()
out = os.fdopen(os.dup(1), "wb")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
for request in sys.stdin.buffer:
    out.write(line)
    out.flush()
"""
"""Answers every line it reads with the line in the file named by its argument: the baseline
(driven with a raw pipe) and the raw plugin (driven through ``PluginProcess.request``) at once."""
BIG_SDK = f"""\
from benchbook.plugin import Plugin

PAYLOAD = bytes(range(256)) * ({BINARY_INLINE_THRESHOLD} // 256) + bytes({BINARY_INLINE_THRESHOLD} % 256)
plugin = Plugin(id="bench.big", name="Big", description="Returns 1 MB", category="bench",
                inputs={{"text": {{"type": "string", "required": True}}}},
                outputs={{"data": {{"type": "bytes", "required": True}}}})


@plugin.run
def run(ctx, inputs, config):
    return {{"data": PAYLOAD}}
"""


def quantile(times: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``times``."""
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


class BareEcho:
    """The bare echo script, driven with raw pipe writes and reads (no host)."""

    def __init__(self, script: Path, scratch: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(script)], cwd=script.parent, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=plugin_env(scratch),
                                     start_new_session=True, bufsize=0)

    def round_trip(self, line: bytes) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line)
        answer = self.proc.stdout.readline()
        if answer != line:
            raise SystemExit(f"the echo answered {answer[:200]!r}")
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def timed(operation: Callable[[], Any], runs: int, warmup: int) -> list[float]:
    """Seconds of each of ``runs`` calls of ``operation`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        operation()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return times


def host_round_trips(argv: list[str], folder: Path, runs: int, warmup: int) -> list[float]:
    with PluginProcess(argv, cwd=folder) as proc:
        def step() -> None:
            final = proc.request(RUN, timeout=60)
            if final != {"type": "result", "outputs": {"text": TEXT}}:
                raise SystemExit(f"{argv}: unexpected answer {final}")
        return timed(step, runs, warmup)


def echo_round_trips(script: Path, scratch: Path, runs: int, warmup: int) -> list[float]:
    echo = BareEcho(script, scratch)
    line = (json.dumps(RUN, separators=(",", ":")) + "\n").encode()
    try:
        return timed(lambda: echo.round_trip(line), runs, warmup)
    finally:
        echo.close()


def host_cold_starts(argv: list[str], folder: Path, starts: int) -> list[float]:
    times = []
    for _ in range(starts):
        start = time.perf_counter()
        proc = PluginProcess(argv, cwd=folder)
        try:
            final = proc.request({"type": "describe"}, timeout=60)
            times.append(time.perf_counter() - start)
        finally:
            proc.close()
        if final["type"] != "describe_result":
            raise SystemExit(f"{argv}: describe answered with {final}")
    return times


def echo_cold_starts(script: Path, scratch: Path, starts: int) -> list[float]:
    times = []
    for _ in range(starts):
        start = time.perf_counter()
        echo = BareEcho(script, scratch)
        try:
            echo.round_trip(b'{"type":"describe"}\n')
            times.append(time.perf_counter() - start)
        finally:
            echo.close()
    return times


def big_pipe_round_trips(folder: Path, runs: int, warmup: int) -> list[float]:
    """The baseline: a request line out, the 1 MB answer line back over a raw pipe (buffered readline)."""
    proc = subprocess.Popen([sys.executable, "big.py", "big.line"], cwd=folder, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=plugin_env(folder),
                            start_new_session=True, bufsize=1 << 16)
    assert proc.stdin is not None and proc.stdout is not None
    request = encode(RUN)

    def trip() -> None:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(request)
        proc.stdin.flush()
        if len(proc.stdout.readline()) != len(BIG_LINE):
            raise SystemExit("the big answer came back short")
    try:
        return timed(trip, runs, warmup)
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()


def big_host_round_trips(folder: Path, runs: int, warmup: int) -> list[float]:
    """The same line through ``PluginProcess.request`` (read, JSON, frame check)."""
    with PluginProcess([sys.executable, "big.py", "big.line"], cwd=folder) as proc:
        def step() -> None:
            final = proc.request(RUN, timeout=60)
            if final["type"] != "result" or len(final["outputs"]["data"]["data"]) != len(BIG_LINE) - BIG_FRAMING:
                raise SystemExit(f"unexpected answer {str(final)[:200]}")
        return timed(step, runs, warmup)


def big_step_round_trips(folder: Path, runs: int, warmup: int) -> list[float]:
    """An SDK plugin's 1 MB ``bytes`` output through ``StepRunner.run_step`` (encoded by the SDK,
    decoded and checked by the host)."""
    plugin = {"id": "bench.big", "tier": "1", "status": "ok", "error": None, "capabilities": [],
              "inputs": {"text": {"type": "string", "required": True}},
              "outputs": {"data": {"type": "bytes", "required": True}}, "config_schema": {},
              "launch": {"command": [sys.executable, "-m", "benchbook.plugin", "big_sdk.py"], "folder": str(folder)}}
    with StepRunner() as runner:
        def step() -> None:
            if runner.run_step(plugin, {"text": TEXT}, {}, timeout=60)["data"] != BIG_PAYLOAD:
                raise SystemExit("the SDK plugin's bytes came back changed")
        return timed(step, runs, warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="timed step round trips per subprocess")
    parser.add_argument("--cold", type=int, default=20, help="timed cold starts per subprocess")
    parser.add_argument("--warmup", type=int, default=50, help="untimed round trips before the timed ones")
    parser.add_argument("--big-runs", type=int, default=50, help="timed 1 MB output round trips per way")
    args = parser.parse_args()

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="benchbook-bench-plugins-") as work:
        folder = Path(work)
        for name, text in (("echo.py", ECHO), ("raw.py", RAW), ("plugin.py", SDK), ("big.py", BIG_ANSWER),
                           ("big_sdk.py", BIG_SDK)):
            (folder / name).write_text(textwrap.dedent(text))
        (folder / "big.line").write_bytes(BIG_LINE)
        scratch = folder / "scratch"
        scratch.mkdir()
        raw_argv = [sys.executable, "raw.py"]
        sdk_argv = [sys.executable, "-m", "benchbook.plugin", "plugin.py"]

        say(f"step round trips, {args.runs:,} each after {args.warmup} warm-ups …")
        trips = {"bare echo (raw pipe, no host)": echo_round_trips(folder / "echo.py", scratch, args.runs,
                                                                   args.warmup),
                 "raw plugin via PluginProcess.request": host_round_trips(raw_argv, folder, args.runs, args.warmup),
                 "SDK plugin via PluginProcess.request": host_round_trips(sdk_argv, folder, args.runs, args.warmup)}
        say("frame checks in process …")
        result = {"type": "result", "outputs": {"text": TEXT}}
        line = encode(result)
        checks = {"host: frames.parse_plugin_line(result line)": timed(lambda: parse_plugin_line(line), args.runs,
                                                                        args.warmup),
                  "SDK: validate_host_frame(run) + validate_plugin_frame(result)":
                      timed(lambda: (validate_host_frame(RUN), validate_plugin_frame(result)), args.runs,
                            args.warmup)}
        say(f"1 MB output round trips, {args.big_runs} each …")
        bigs = {"raw pipe (a child writes the line, buffered readline)": big_pipe_round_trips(folder, args.big_runs, 3),
                "raw plugin via PluginProcess.request": big_host_round_trips(folder, args.big_runs, 3),
                "SDK plugin via StepRunner.run_step (encode + decode)": big_step_round_trips(folder, args.big_runs,
                                                                                              3)}
        say(f"cold starts, {args.cold} each …")
        colds = {"bare echo (raw pipe, no host)": echo_cold_starts(folder / "echo.py", scratch, args.cold),
                 "raw plugin via PluginProcess.request": host_cold_starts(raw_argv, folder, args.cold),
                 "SDK plugin via PluginProcess.request": host_cold_starts(sdk_argv, folder, args.cold)}

    echo_key, sdk_key = "bare echo (raw pipe, no host)", "SDK plugin via PluginProcess.request"
    lines: list[tuple[str, str, str]] = []
    for name, times in trips.items():
        lines.append((f"step round trip, {name}",
                      f"p50 {quantile(times, 0.5) * 1e6:8.1f} µs   p99 {quantile(times, 0.99) * 1e6:8.1f} µs",
                      "no target"))
    p50 = quantile(trips[sdk_key], 0.5) / quantile(trips[echo_key], 0.5)
    p99 = quantile(trips[sdk_key], 0.99) / quantile(trips[echo_key], 0.99)
    lines.append(("  ratio SDK plugin / bare echo", f"p50 {p50:8.2f}x     p99 {p99:8.2f}x",
                  f"target p50 <= {ROUND_TRIP_TARGET:g}x: {'met' if p50 <= ROUND_TRIP_TARGET else 'missed'}"))
    for name, times in checks.items():
        lines.append((f"  of which, in process: {name}",
                      f"p50 {quantile(times, 0.5) * 1e6:8.1f} µs   p99 {quantile(times, 0.99) * 1e6:8.1f} µs",
                      "no target"))
    for name, times in bigs.items():
        lines.append((f"1 MB output round trip ({len(BIG_LINE):,}-byte line), {name}",
                      f"p50 {quantile(times, 0.5) * 1e3:8.2f} ms   p99 {quantile(times, 0.99) * 1e3:8.2f} ms",
                      "no target"))
    pipe_key, host_key, step_key = list(bigs)
    big = quantile(bigs[host_key], 0.5) / quantile(bigs[pipe_key], 0.5)
    lines.append(("  ratio PluginProcess.request / raw pipe", f"p50 {big:8.2f}x",
                  f"target p50 <= {BIG_TARGET:g}x: {'met' if big <= BIG_TARGET else 'missed'}"))
    step_ratio = quantile(bigs[step_key], 0.5) / quantile(bigs[pipe_key], 0.5)
    lines.append(("  ratio StepRunner.run_step (SDK) / raw pipe", f"p50 {step_ratio:8.2f}x", "no target"))
    for name, times in colds.items():
        lines.append((f"cold start to first answer, {name}", f"p50 {statistics.median(times) * 1e3:8.1f} ms",
                      "no target"))
    cold = statistics.median(colds[sdk_key]) / statistics.median(colds[echo_key])
    lines.append(("  ratio SDK plugin / bare echo", f"p50 {cold:8.2f}x", "no target"))

    print(f"\nbench/plugins.py --runs {args.runs} --cold {args.cold} --warmup {args.warmup} --big-runs "
          f"{args.big_runs}: in process host → "
          f"subprocess over pipes, wall clock (Python {sys.version.split()[0]}, cpus: {os.cpu_count()}, "
          f"load average now: {os.getloadavg()[0]:.1f})")
    widths = [max(len(line[i]) for line in lines) for i in range(2)]
    for key, value, target in lines:
        print(f"{key:<{widths[0]}}  {value:<{widths[1]}}  {target}")


if __name__ == "__main__":
    main()
