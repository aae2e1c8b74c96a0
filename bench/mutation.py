"""Mutation testing of the domain's rule modules, on demand (issue 38; never part of README's
test command: a module takes 10 to 60 minutes).

    python bench/mutation.py MODULE [MODULE ...] [--max-children N] [--sqlite-only] [--list]

MODULE is one of the names in :data:`MODULES` (``filters``, ``revert``, ``restore``,
``triggers``, ``dtypes``, ``merge``: sync's merge at the authority). For each, mutmut (``pip install -e '.[dev]'``) mutates that one file
and runs, for every mutant, only the covering tests named here that reach the mutated function
(mutmut records which tests reach which function in a first, clean run).

mutmut mutates a copy of the project: the script mirrors ``src/`` (symbolic links resolved, so
the OpenAPI document and the plugin protocol are there too), ``tests/``, ``openapi/``,
``plugin-protocol/`` and ``pyproject.toml`` (plus a ``[tool.mutmut]`` table for the module) into
``.mutation/<module>/`` (ignored by git) and runs ``mutmut run`` there; the work tree is never
changed. The copy is kept, so a second run re-tests only the functions whose source changed
(mutmut's own cache; it does not see changed tests, so when any file under ``tests/`` changed
since the module's last run, or with ``--fresh``, every mutant is tested again), and the
survivors can be read there: ``cd .mutation/revert && mutmut results`` lists them, ``mutmut show
NAME`` shows one.

PostgreSQL is used as the tests use it (``tests/conftest.py``); ``--sqlite-only`` sets
``BENCHBOOK_TEST_PG=`` (about twice as fast; mutants only PostgreSQL notices, such as a dropped
``collate("C")``, then survive).

At the end one line per module: killed, survived, no tests (mutants in code no covering test
reaches), timeouts and the score, killed / (total - no tests). docs/testing.md records the scores.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"

MODULES: dict[str, tuple[str, list[str]]] = {
    "filters": ("src/benchbook/domain/records/filters.py",
                ["tests/api/test_filter_tree.py", "tests/domain/test_filter_order.py", "tests/api/test_limits.py",
                 "tests/api/test_views.py"]),
    "revert": ("src/benchbook/domain/history/revert.py",
               ["tests/api/test_revert.py", "tests/api/test_views.py", "tests/api/test_history_replay.py",
                "tests/api/test_event_counts.py"]),
    "restore": ("src/benchbook/domain/history/restore.py",
                ["tests/api/test_restore.py", "tests/api/test_restore_all.py", "tests/api/test_orphan_race.py",
                 "tests/api/test_delete_referenced.py"]),
    "triggers": ("src/benchbook/runner/triggers.py",
                 ["tests/api/test_jobs_triggers.py", "tests/api/test_automation.py", "tests/runner/test_drain.py"]),
    "merge": ("src/benchbook/domain/sync/merge.py",
              ["tests/api/test_sync_push.py", "tests/sync/test_sync_live.py", "tests/sync/test_sync_crash.py",
               "tests/sync/test_sync_converges.py", "tests/sync/test_sync_referenced.py",
               "tests/sync/test_sync_push_runs.py", "tests/sync/test_sync_reference_names.py"]),
    "dtypes": ("src/benchbook/domain/catalog/dtypes.py",
               ["tests/domain/test_dtypes.py", "tests/domain/test_merge_rows.py", "tests/api/test_field_types.py"]),
}
"""Module name → (the file mutated, its covering tests)."""

COPIED = ("src", "tests", "openapi", "plugin-protocol")


def mirror(module: str) -> Path:
    """``.mutation/<module>/``: the project's files as they are now, with the module's mutmut table."""
    where = WORK / module
    where.mkdir(parents=True, exist_ok=True)
    for name in COPIED:  # -a keeps modification times: mutmut re-mutates only changed files
        subprocess.run(["rsync", "-aL", "--delete", "--exclude", "__pycache__", f"{ROOT / name}/", f"{where / name}/"],
                       check=True)
    path, tests = MODULES[module]
    table = ("\n\n[tool.mutmut]\n"
             'source_paths = ["src"]\n'
             f"only_mutate = {json.dumps([path])}\n"
             f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
             'pytest_add_cli_args = ["-p", "no:cacheprovider"]\n')
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8") + table
    target = where / "pyproject.toml"
    if not target.exists() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
    return where


def tests_hash(where: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((where / "tests").rglob("*.py")):
        digest.update(str(path.relative_to(where)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def run(module: str, max_children: int, sqlite_only: bool, fresh: bool) -> dict[str, int]:
    where = mirror(module)
    marker, current = where / "tests.sha256", tests_hash(where)
    if fresh or not marker.exists() or marker.read_text(encoding="utf-8") != current:
        shutil.rmtree(where / "mutants", ignore_errors=True)  # mutmut's cache knows nothing of the tests
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or "mutmut"
    env = {**os.environ, **({"BENCHBOOK_TEST_PG": ""} if sqlite_only else {})}
    started = time.monotonic()
    subprocess.run([mutmut, "run", "--max-children", str(max_children)], cwd=where, env=env, check=True)
    subprocess.run([mutmut, "export-cicd-stats"], cwd=where, env=env, check=True, capture_output=True)
    marker.write_text(current, encoding="utf-8")
    stats: dict[str, int] = json.loads((where / "mutants" / "mutmut-cicd-stats.json").read_text(encoding="utf-8"))
    stats["seconds"] = round(time.monotonic() - started)
    return stats


def line(module: str, s: dict[str, int]) -> str:
    tested = s["total"] - s["no_tests"] - s["skipped"]
    score = 100 * s["killed"] / tested if tested else 0.0
    return (f"{module}: {s['killed']} killed, {s['survived']} survived, {s['no_tests']} no tests, "
            f"{s['timeout']} timeouts, {s['suspicious']} suspicious of {s['total']}; score {score:.1f}% "
            f"({s['seconds']} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=f"one of {', '.join(MODULES)}")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--sqlite-only", action="store_true", help="run the tests without PostgreSQL")
    parser.add_argument("--fresh", action="store_true", help="test every mutant again (forget earlier results)")
    parser.add_argument("--list", action="store_true", help="print the modules and their covering tests")
    args = parser.parse_args()
    if args.list or not args.modules:
        for name, (path, tests) in MODULES.items():
            print(f"{name}: {path}\n    {' '.join(tests)}")
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}: choose from {', '.join(MODULES)}")
    results = {m: run(m, args.max_children, args.sqlite_only, args.fresh) for m in args.modules}
    for module, stats in results.items():
        print(line(module, stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
