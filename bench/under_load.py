"""The test suite's verdict idle and under a saturating CPU load must be the same (issue 38).

    python bench/under_load.py [--burners 4] [--only idle|load] [--reports DIR] [-- PYTEST ARGS]

Runs README's test command (``python -m pytest -n 3 --cov``, or the pytest arguments given after
``--``) twice from the repository root: once on an idle machine, once while ``--burners``
processes spin on the CPU (a Python busy loop each, stopped as soon as the run ends, so the
load is bounded by the run). Each run writes a JUnit XML report; the script prints, for each
run, its wall time and its counts (the reports are kept in ``--reports`` when given) (passed, failed, error, skipped), then every test whose
outcome differs between the two runs. The exit status is 1 when the verdicts differ (a test
whose outcome depends on the machine's load) or when either run failed.

A test's outcome is ``passed``, ``failed``, ``error`` or ``skipped`` as the JUnit report gives
it; a parametrized test counts once per parameter set (its id).
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_ARGS = ["-n", "3", "--cov"]


def _burn(stop: multiprocessing.synchronize.Event) -> None:
    """Spin on one CPU until ``stop`` is set (checked every million iterations)."""
    x = 0
    while not stop.is_set():
        for _ in range(1_000_000):
            x += 1


def outcomes(report: Path) -> dict[str, str]:
    """``{test id: outcome}`` from a JUnit XML report (``classname::name``)."""
    out: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        out[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return out


def run_suite(label: str, pytest_args: list[str], burners: int, folder: Path) -> tuple[dict[str, str], float, int]:
    """Run pytest with ``pytest_args`` (under ``burners`` busy processes when > 0); return the
    outcomes, the wall time in seconds and pytest's exit status."""
    report = folder / f"{label}.xml"
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(burners)]
    for proc in procs:
        proc.start()
    started = time.monotonic()
    try:
        status = subprocess.call([sys.executable, "-m", "pytest", *pytest_args, f"--junitxml={report}", "-q"],
                                 cwd=ROOT)
    finally:
        stop.set()
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    wall = time.monotonic() - started
    return outcomes(report), wall, status


def _counts(results: dict[str, str]) -> str:
    kinds = ("passed", "failed", "error", "skipped")
    return ", ".join(f"{sum(1 for v in results.values() if v == k)} {k}" for k in kinds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--burners", type=int, default=4, help="busy processes during the loaded run")
    parser.add_argument("--only", choices=["idle", "load"], help="run only one of the two")
    parser.add_argument("--reports", type=Path, help="keep the JUnit reports (idle.xml, load.xml) in this folder")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments (default: README's -n 3 --cov)")
    args = parser.parse_args()
    pytest_args = args.pytest_args or README_ARGS
    runs: dict[str, tuple[dict[str, str], float, int]] = {}
    if args.reports:
        args.reports.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="benchbook-under-load-") as scratch:
        tmp = str(args.reports or scratch)
        for label, burners in (("idle", 0), ("load", args.burners)):
            if args.only and args.only != label:
                continue
            runs[label] = run_suite(label, pytest_args, burners, Path(tmp))
            results, wall, status = runs[label]
            print(f"{label:>4}: {wall:7.1f} s, exit {status}: {_counts(results)}"
                  + (f" (with {burners} CPU burners on {os.cpu_count()} cores)" if burners else ""))
    failed = any(status != 0 for _, _, status in runs.values())
    if len(runs) == 2:
        idle, load = runs["idle"][0], runs["load"][0]
        differ = sorted(t for t in idle.keys() | load.keys() if idle.get(t) != load.get(t))
        for test in differ:
            print(f"  differs: {test}: idle {idle.get(test, 'absent')}, load {load.get(test, 'absent')}")
        print(f"verdicts {'differ in ' + str(len(differ)) + ' tests' if differ else 'are the same'}"
              f"; load/idle wall time {runs['load'][1] / runs['idle'][1]:.2f}x")
        failed = failed or bool(differ)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
