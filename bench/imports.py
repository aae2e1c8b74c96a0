"""Import benchmark (issue #14 *Import*, issue #15 *import ÷ sqlite-utils*): what ``benchbook
import`` adds to the set-based create it writes with, and how it compares with
``sqlite-utils insert --csv``; run on demand (never in the tests).

    python bench/imports.py [--rows 20000] [--sqlite-utils [--repeat 1]]

On a fresh SQLite project with a ``day`` schema (a date, four floats, a string) and two empty
collections, in this process (no CLI, no HTTP), in the same run:

- **import**: a CSV of ``--rows`` daily rows with ``2012/01/31``-style dates is read
  (``readers.read_table``) and imported (``run.import_table``: each row checked, dates read,
  problems collected, then ``bulk_create_records``) in one transaction;
- **baseline**: the same rows, already as RecordCreate bodies with ISO dates, given straight to
  ``bulk_create_records`` in one transaction.

Prints rows per second of each (wall clock) and the ratio import / baseline: the cost of reading
and checking the file on top of writing it (no target; 0.90 to 1.09 measured on a shared
2-core machine when this was written: reading and checking cost about as much as the noise).

With ``--sqlite-utils``, in the same run: the same CSV is written to a file (``days.csv``) and
imported by whole processes, wall clock around each (``subprocess.Popen``, start-up included) and
their CPU time (``RUSAGE_CHILDREN``), each into a fresh database:

- ``sqlite-utils insert FRESH.db days days.csv --csv --silent`` (sqlite-utils 3.39.1 in its own
  venv, ``bench/.venv-sqlite-utils``, created on first use with pip, never a project
  dependency): what a user would pick instead; every column stays text;
- the same with ``--detect-types`` (the floats stored as REAL; the dates stay text): what a user
  wanting typed columns would add;
- ``benchbook --project FRESH import days.csv --collection imported --schema day`` (the
  console script beside this interpreter), on a fresh project whose schema and collection are
  created in this process beforehand (not timed): what a benchbook user would run.

The in-process import's SQL statements are timed too (``bench/statements.py``), and its commit,
and the command on a one-row file (what it costs whatever the file: start-up, the project
opened); the ratio's ceilings printed: sqlite-utils' time ÷ those statements alone, and ÷ the
statements, the commit and the one-row command together, what the ratio would be were
reading, checking and preparing the rows to take no time.

Then prints rows per second of each, the benchbook process's peak memory (its resident set,
``VmHWM`` read from ``/proc`` while it runs), and the ratio benchbook import / sqlite-utils (rates, i.e.
sqlite-utils' seconds / benchbook's; by CPU time beside it, steadier on a shared machine) per
variant, each against the target of issue 15 (>= 0.5 on the wall clock, set for plain
``--csv``) with ``met`` or ``missed``, and the load average at the start and the end. ``--repeat N`` runs each process N times
(in rounds: one of each variant per round) and keeps the median.
"""
from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from benchbook.domain.catalog import collections, schemas
from benchbook.domain.context import Ctx
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.persistence.db import open_database
from benchbook.settings.config import Project

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from statements import timed_statements  # bench/statements.py

SQLITE_UTILS = "sqlite-utils==3.39.1"
TARGET = 0.5  # issue 15: benchbook import / sqlite-utils insert --csv, same file, same run
FIELDS = [{"name": "date", "type": "date"}, {"name": "precipitation", "type": "float"},
          {"name": "temp_max", "type": "float"}, {"name": "temp_min", "type": "float"},
          {"name": "wind", "type": "float"}, {"name": "weather", "type": "string"}]
KINDS = ("sun", "rain", "fog")


def rows(n: int) -> list[tuple[date, str, str, str, str, str]]:
    start = date(1900, 1, 1)
    return [(start + timedelta(days=i), f"{i % 7 * 0.3:.1f}", f"{i % 30}.5", f"{i % 20}.1", f"{i % 9}.2", KINDS[i % 3])
            for i in range(n)]


def new_project(folder: Path, *names: str) -> Project:
    """A fresh project in ``folder`` with the ``day`` schema and collections ``names``."""
    project = Project.init(str(folder))
    db = open_database(project.database_url)
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        schemas.create_schema(ctx, {"name": "day", "fields": FIELDS})
        for name in names:
            collections.create_collection(ctx, {"name": name, "schemas": ["day"]})
    db.engine.dispose()
    return project


def sqlite_utils_bin() -> Path:
    """bench/.venv-sqlite-utils/bin/sqlite-utils, created on first use."""
    venv = HERE / ".venv-sqlite-utils"
    exe = venv / "bin" / "sqlite-utils"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", SQLITE_UTILS], check=True)
    return exe


def benchbook_command() -> list[str]:
    """The ``benchbook`` console script beside this interpreter (else the same through -c)."""
    exe = Path(sys.executable).parent / "benchbook"
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from benchbook.cli.main import main; main()"]


def timed(command: list[str]) -> tuple[float, float, str, int | None]:
    """(wall seconds, CPU seconds, stdout, peak resident bytes) of running ``command`` to its
    end; exits on failure. The peak is the process's own ``VmHWM`` (``/proc/PID/status``, read
    every 20 ms while it runs; None where there is no ``/proc``): ``ru_maxrss`` of the children
    would count this process's memory, which a child holds between fork and exec."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True)
        peak: int | None = None
        while child.poll() is None:
            seen = _high_water(child.pid)
            if seen is not None:
                peak = seen if peak is None else max(peak, seen)
            time.sleep(0.02)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {child.returncode}\n{stdout[-2000:]}{stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, stdout, peak


def _high_water(pid: int) -> int | None:
    """The peak resident set of process ``pid`` so far, in bytes (``VmHWM``), or None."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def count_rows(path: Path, table: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])
    finally:
        conn.close()


ONE_ROW = "benchbook import (CLI), one row"
"""The same command on the file's first row alone: what the command costs whatever the file."""

PEAK: dict[str, int] = {}
"""The largest resident set of the ``benchbook import`` processes, in bytes (:func:`timed`)."""


def processes(work: Path, csv: Path, n: int, repeat: int) -> dict[str, tuple[float, float]]:
    """Variant → (median wall s, median CPU s) of whole-process imports of ``csv``, each into a
    fresh database or project; checks each stored ``n`` rows. Notes the benchbook processes'
    peak memory in :data:`PEAK`."""
    exe = sqlite_utils_bin()
    variants = {"sqlite-utils insert --csv": ["--csv"],
                "sqlite-utils insert --csv --detect-types": ["--csv", "--detect-types"]}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in [*variants, "benchbook import (CLI)", ONE_ROW]}
    first = work / "one-row.csv"
    first.write_text("".join(csv.read_text().splitlines(keepends=True)[:2]))
    for round_ in range(repeat):
        for i, (name, flags) in enumerate(variants.items()):
            target = work / f"sqlite-utils-{round_}-{i}.db"
            times[name].append(timed([str(exe), "insert", str(target), "days", str(csv), *flags, "--silent"])[:2])
            stored = count_rows(target, "days")
            assert stored == n, f"{name}: {stored} rows"
        project = new_project(work / f"cli-{round_}", "imported")
        wall, cpu, out, peak = timed([*benchbook_command(), "--project", str(project.root), "import", str(csv),
                                "--collection", "imported", "--schema", "day"])
        assert f"created {n:,}," in out, out[-500:]
        times["benchbook import (CLI)"].append((wall, cpu))
        one = new_project(work / f"cli-one-{round_}", "imported")
        times[ONE_ROW].append(timed([*benchbook_command(), "--project", str(one.root), "import", str(first),
                                     "--collection", "imported", "--schema", "day"])[:2])
        if peak is not None:
            PEAK["benchbook"] = max(PEAK.get("benchbook", 0), peak)
    return {name: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
            for name, got in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--sqlite-utils", action="store_true",
                        help="also time sqlite-utils insert --csv and the benchbook import command on the same file")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each process with --sqlite-utils (median)")
    args = parser.parse_args()
    n = args.rows
    work = Path(tempfile.mkdtemp(prefix="bench-imports-"))
    project = new_project(work / "project", "imported", "baseline")
    db = open_database(project.database_url)
    data = rows(n)
    text = "date,precipitation,temp_max,temp_min,wind,weather\n" + "".join(
        f"{d:%Y/%m/%d},{p},{hi},{lo},{w},{k}\n" for d, p, hi, lo, w, k in data)
    bodies = [{"schema_name": "day", "data": dict(zip([f["name"] for f in FIELDS], (d.isoformat(), p, hi, lo, w, k)))}
              for d, p, hi, lo, w, k in data]
    load = os.getloadavg()[0]

    started = time.perf_counter()
    table = read_table(text.encode(), "days.csv")
    with db.session() as s:
        transaction = s.begin()
        with timed_statements(db.engine) as statements:
            result = import_table(Ctx(session=s, actor="bench", files_dir=project.files_dir), table,
                                  ImportOptions(collection="imported", schema="day"))
        committing = time.perf_counter()
        transaction.commit()
        commit = time.perf_counter() - committing
    imported = time.perf_counter() - started
    assert result.created == n and not result.problems, result.problems

    started = time.perf_counter()
    with db.session() as s, s.begin():
        bulk_create_records(Ctx(session=s, actor="bench", files_dir=project.files_dir), "baseline", bodies)
    baseline = time.perf_counter() - started
    db.engine.dispose()

    measured: dict[str, tuple[float, float]] = {}
    if args.sqlite_utils:
        csv = work / "days.csv"
        csv.write_text(text)
        measured = processes(work, csv, n, max(1, args.repeat))

    print(f"import   {n:,} rows: {imported:.2f} s, {n / imported:,.0f} rows/s (read, check, write; in process)")
    print(f"baseline {n:,} rows: {baseline:.2f} s, {n / baseline:,.0f} rows/s (bulk_create_records alone; in process)")
    print(f"ratio import/baseline: {imported / baseline:.2f} (no target)")
    print(f"the import's statements: {statements.seconds:.2f} s of its {imported:.2f} s "
          f"({statements.seconds / imported:.0%}; cursor events), its commit {commit:.2f} s")
    if not measured:
        print(f"ratio benchbook import/sqlite-utils insert --csv: not measured (no --sqlite-utils; target >= {TARGET})")
        return
    width = max(len(name) for name in measured)
    runs = "one run" if args.repeat <= 1 else f"median of {args.repeat} runs"
    for name, (wall, cpu) in measured.items():
        rows_done = 1 if name == ONE_ROW else n
        print(f"{name:<{width}} {rows_done:,} rows: {wall:.2f} s, {rows_done / wall:,.0f} rows/s "
              f"({cpu:.2f} CPU s; whole process, {runs})")
    ours, ours_cpu = measured["benchbook import (CLI)"]
    for name, (wall, cpu) in measured.items():
        if name.startswith("sqlite-utils"):
            ratio = wall / ours
            print(f"ratio benchbook import (CLI)/{name}: {ratio:.3f} (by CPU time {cpu / ours_cpu:.3f}; "
                  f"target >= {TARGET} on the wall clock: {'met' if ratio >= TARGET else 'missed'})")
    if PEAK:
        print(f"benchbook import (CLI) peak memory: {PEAK['benchbook'] / 1e6:,.0f} MB (its resident set, VmHWM; "
              "the import's rows wait in memory until all are checked: docs/limits.md)")
    print(f"ratio import (in process)/sqlite-utils insert --csv: "
          f"{measured['sqlite-utils insert --csv'][0] / imported:.3f} (no target: the command's start-up left out)")
    fixed = measured[ONE_ROW][0]
    theirs = measured["sqlite-utils insert --csv"][0]
    print(f"ceiling: sqlite-utils insert --csv / the in-process import's statements alone: "
          f"{theirs / statements.seconds:.3f} (no target: the ratio were everything else to take no time)")
    print(f"ceiling: sqlite-utils insert --csv / (those statements + the commit + the one-row command): "
          f"{theirs / (statements.seconds + commit + fixed):.3f} (no target: the ratio were reading, checking "
          "and preparing the rows to take no time)")
    print(f"{os.cpu_count()} cpus; load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"files in {work}")


if __name__ == "__main__":
    main()
