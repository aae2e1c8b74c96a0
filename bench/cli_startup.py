"""CLI start-up time (issue 14, item 15): ``benchbook --help`` and a one-record in-process
command (``records get ID``), now and at a baseline commit, in the same run.

    python bench/cli_startup.py [--baseline REF] [--runs 7]

The baseline's ``src/`` and ``openapi/`` are extracted with ``git archive`` into a temporary
folder and run with the same interpreter and packages (``PYTHONPATH``). Each measurement is
the median wall time of ``--runs`` fresh processes, baseline and current alternating (the
machine is shared: alternating keeps both under the same load), with bytecode caching on as
on a user's machine. The current code's cached parsed document (``benchbook.http.document``)
starts empty: its first run is printed on its own ("cold"), the median is over warm runs. Last, ``python -X importtime`` of the current command
lists the imports that cost most.

Targets: ``--help`` under 0.3 s, the in-process command under 1 s.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = "8eca19d"  # main just before the start-up work (lazy commands, cached document)
TARGETS = {"--help": 0.3, "records get": 1.0}
RUNNER = "import sys; from benchbook.cli.main import main; sys.argv[0] = 'benchbook'; main()"


def extract(ref: str, into: Path) -> Path:
    """``src/``, ``openapi/`` and ``plugin-protocol/`` (symlinked from the package) of commit ``ref`` under ``into``; returns its ``src``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src", "openapi", "plugin-protocol"], check=True,
                             capture_output=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def timed(src: Path, args: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one ``benchbook ARGS`` process running the code in ``src``."""
    run_env = {**env, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUNNER, *args], check=False, env=run_env, capture_output=True,
                          text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"benchbook {' '.join(args)} failed ({src}):\n{done.stderr}")
    return elapsed


def make_project(src: Path, folder: Path, env: dict[str, str]) -> str:
    """A project with one collection and one record; returns the record's id."""
    import json

    def cli(*args: str) -> str:
        out = subprocess.run([sys.executable, "-c", RUNNER, "--project", str(folder), *args],
                             env={**env, "PYTHONPATH": str(src)}, capture_output=True, text=True, check=True)
        return out.stdout

    cli("init")
    cli("schemas", "create", "--name", "sample", "--fields", '[{"name": "site", "type": "string"}]')
    cli("collections", "create", "--name", "lake", "--schemas", '["sample"]')
    record = json.loads(cli("records", "create", "lake", "--schema-name", "sample", "--data", '{"site": "North"}'))
    return str(record["id"])


def import_costs(src: Path, args: list[str], env: dict[str, str], top: int = 8) -> list[tuple[float, str]]:
    """The ``top`` costliest imports (cumulative seconds, module) of one run, from
    ``python -X importtime``, counting only modules imported at depth 1 or 2."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", RUNNER, *args],
                          check=False, env={**env, "PYTHONPATH": str(src)}, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match and len(match.group(2)) <= 3:
            rows.append((int(match.group(1)) / 1e6, match.group(3)))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="commit to compare with")
    parser.add_argument("--runs", type=int, default=7, help="processes per measurement (median)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        base_src = extract(opts.baseline, tmp_path / "base")
        current_src = ROOT / "src"
        # bytecode is cached as on a user's machine (the sandbox may set PYTHONDONTWRITEBYTECODE)
        env = {k: v for k, v in os.environ.items()
               if k not in ("BENCHBOOK_PROJECT", "BENCHBOOK_URL", "PYTHONDONTWRITEBYTECODE")}
        env["BENCHBOOK_CACHE_DIR"] = str(tmp_path / "cache")
        env["XDG_DATA_HOME"] = str(tmp_path / "data")
        # each tree gets a project of its own making (a newer migration is not one the baseline knows)
        base_id = make_project(base_src, tmp_path / "base-project", env)
        record_id = make_project(current_src, tmp_path / "project", env)
        env.pop("BENCHBOOK_CACHE_DIR")
        env["BENCHBOOK_CACHE_DIR"] = str(tmp_path / "cold-cache")  # the current code starts cold
        commands = {"--help": (["--help"], ["--help"]),
                    "records get": (["--project", str(tmp_path / "base-project"), "records", "get", base_id],
                                    ["--project", str(tmp_path / "project"), "records", "get", record_id])}
        print(f"baseline {opts.baseline} vs working tree; median of {opts.runs} processes each, alternating")
        print(f"{'command':<14} {'baseline':>9} {'now':>7} {'cold':>7} {'now/base':>9} {'target':>7}  verdict")
        for label, (base_args, args) in commands.items():
            cold = timed(current_src, args, env)
            timed(base_src, base_args, env)  # the baseline's bytecode written once, as the current's is
            base, now = [], []
            for _ in range(opts.runs):
                base.append(timed(base_src, base_args, env))
                now.append(timed(current_src, args, env))
            b, n = statistics.median(base), statistics.median(now)
            target = TARGETS[label]
            verdict = "met" if n < target else "missed"
            print(f"{label:<14} {b:>8.2f}s {n:>6.2f}s {cold:>6.2f}s {n / b:>9.2f} {target:>6.1f}s  {verdict}")
        print("\ncostliest imports of `records get` now (cumulative s, depth <= 2):")
        for seconds, module in import_costs(current_src, commands["records get"][1], env):
            print(f"  {seconds:6.3f}  {module}")


if __name__ == "__main__":
    main()
