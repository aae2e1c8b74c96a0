"""The plugin part of ``bench/automation.py`` (issue 36 item 1): runs/s of workflows whose step
is a tier-1 plugin, with and without warm processes, beside the built-in path in the same run.

On the benchmark's project: ``flight`` records (``notes`` string, ``words`` integer) in
collection ``flights`` and three one-step workflows, each ``save: {words: <step>.words}``:

- **built-in**: ``benchbook.text-stats`` (in process);
- **Python SDK**: the plugin ``benchbook plugins new py-words`` writes (``scaffold``), unchanged:
  ``python -m benchbook.plugin plugin.py``, text → words and characters;
- **Python SDK, batched** and **JS starter, batched**: the same step as a batch plugin (``batch:
  true``: ``@plugin.run(batch=True)`` over a pandas frame of inputs; ``serve({batch: true})`` over a
  list), given ``[limits] plugin_batch_size`` (100) waiting runs per ``run`` frame
  (:mod:`benchbook.runner.batch_runs`), ``--batched-runs`` runs each (target: Python >= 1,000
  runs/s on 10,000 records);
- **JS starter**: the same step written with the JavaScript starter (``benchbook-plugin.js``,
  ``validate.js`` and ``frames.schema.json`` copied from ``plugin-protocol/``, Node, no
  packages): text → words and characters, and a ``ctx.log`` line, as the Python plugin does (the
  starter's ``example-plugin.js`` also calls ``get_context_record`` and returns a table, which
  would time the host's RPC and pandas instead).

Each is drained as the worker does (a chaining :class:`~benchbook.runner.drain.Drain` with the
group commit, ``batch_runs.execute_waiting`` until the queue is empty), ``--plugin-runs`` runs each
warm (the default settings: one process serves the drain) and ``--cold-runs`` runs each cold
(``[limits] plugin_warm_runs = 1``: a process per run, as before warm processes), and the JS
starter warm once more with ``[limits] plugin_batch_size = 1``, which keeps each run to its own
commit (quick plugin runs go together otherwise: ``docs/automation.md``). Every run must
complete. Printed: runs/s (wall clock, CPU of this process in brackets: the plugin processes'
CPU is not in it), processes started, and the ratios warm / cold and warm / built-in, which the
load of other work on the machine moves less than the rates.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import func, select

from benchbook.cli.scaffold import scaffold
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records import bulk
from benchbook.persistence.db import Database, write_lock
from benchbook.persistence.tables import Job
from benchbook.runner import batch_runs, queue, workflows
from benchbook.runner.drain import GROUP_SECONDS, Drain
from benchbook.runner.plugin_host import discovery
from benchbook.settings.config import Project
from benchbook.settings.limits import DEFAULT, Limits

JS_STARTER = Path(__file__).resolve().parents[1] / "plugin-protocol"
TARGETS = {"py warm": 200.0, "js warm": 300.0, "pyb batched": 1000.0}
"""Runs/s the issue asks for: a Python SDK plugin and the JS starter warm, the Python SDK batched."""
STEPS = {"builtin": "benchbook.text-stats", "py": "py-words", "js": "js-words", "pyb": "py-words-batch",
         "jsb": "js-words-batch"}
PY_BATCH_PLUGIN = """import pandas as pd

from benchbook.plugin import Plugin

plugin = Plugin(
    id="py-words-batch", name="Words (Python, batched)", description="Counts the words and characters of texts.",
    category="text", inputs={"text": {"type": "string", "description": "The text to count", "required": True}},
    outputs={"words": {"type": "integer", "required": True}, "characters": {"type": "integer", "required": True}},
)


@plugin.run(batch=True)
def run(ctx, frame, config):
    ctx.log(f"{len(frame)} text(s)")
    return pd.DataFrame({"words": frame["text"].str.split().str.len(), "characters": frame["text"].str.len()})
"""
JS_BATCH_PLUGIN = """'use strict';
const bb = require('./benchbook-plugin'); // first: stdout is isolated at require time

bb.serve({
  id: 'js-words-batch', name: 'Words (JavaScript, batched)', description: 'Counts the words and characters of texts.',
  category: 'text', capabilities: [], batch: true,
  inputs: { text: { type: 'string', description: 'The text to count', required: true } },
  outputs: { words: { type: 'integer', required: true }, characters: { type: 'integer', required: true } },
  config_schema: { type: 'object' },
  run(items, config, ctx) {
    ctx.log(`${items.length} text(s)`);
    return items.map((inputs) => ({ words: inputs.text.split(/\\s+/).filter(Boolean).length,
                                   characters: inputs.text.length }));
  },
});
"""
JS_PLUGIN = """'use strict';
const bb = require('./benchbook-plugin'); // first: stdout is isolated at require time

bb.serve({
  id: 'js-words', name: 'Words (JavaScript)', description: 'Counts the words and characters of a text.',
  category: 'text', capabilities: [],
  inputs: { text: { type: 'string', description: 'The text to count', required: true } },
  outputs: { words: { type: 'integer', required: true }, characters: { type: 'integer', required: true } },
  config_schema: { type: 'object' },
  run(inputs, config, ctx) {
    const words = inputs.text.split(/\\s+/).filter(Boolean);
    ctx.log(`${words.length} word(s), ${inputs.text.length} character(s)`);
    return { words: words.length, characters: inputs.text.length };
  },
});
"""
NAMES = {"builtin": "built-in benchbook.text-stats (in process)", "py": "Python SDK plugin (plugins new)",
         "js": "JS starter plugin (node)", "pyb": "Python SDK batch plugin (pandas frame)",
         "jsb": "JS starter batch plugin (node)"}


def set_up(project: Project, db: Database) -> None:
    """The schema, the collection, both plugins in ``plugins/``, discovery, the workflows."""
    root = Path(project.root)
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        create_schema(ctx, {"name": "flight", "fields": [{"name": "notes", "type": "string"},
                                                         {"name": "words", "type": "integer"}]})
        create_collection(ctx, {"name": "flights", "schemas": ["flight"]})
    scaffold(root / "plugins", "py-words")
    for name, code in (("js-words", JS_PLUGIN), ("js-words-batch", JS_BATCH_PLUGIN)):
        js = root / "plugins" / name
        js.mkdir(parents=True)
        for starter in ("benchbook-plugin.js", "validate.js"):
            shutil.copy(JS_STARTER / "js" / starter, js / starter)
        (js / "plugin.js").write_text(code)
        shutil.copy(JS_STARTER / "frames.schema.json", js / "frames.schema.json")
        (js / "plugin.toml").write_text('command = ["node", "plugin.js"]\ntimeout = 60\n')
    py = root / "plugins" / "py-words-batch"
    py.mkdir(parents=True)
    (py / "plugin.py").write_text(PY_BATCH_PLUGIN)
    (py / "plugin.toml").write_text('command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]\ntimeout = 60\n')
    with db.session() as s, s.begin():
        discovery.refresh(s, root / "plugins")
    folder = workflows.folder(root)
    folder.mkdir(exist_ok=True)
    for key, plugin in STEPS.items():
        (folder / f"words-{key}.yaml").write_text(yaml.safe_dump({
            "name": f"words-{key}", "record_schema": "flight", "triggers": {"manual": {}},
            "steps": [{"id": "count", "plugin": plugin, "inputs": {"text": "record.notes"}}],
            "save": {"words": "count.words"}}, sort_keys=False))
        with db.session() as s:
            wf = workflows.find(s, root, f"words-{key}")
        if wf.problems:
            raise SystemExit(f"workflow words-{key} has problems: {wf.problems}")


def queue_runs(project: Project, db: Database, key: str, n: int) -> None:
    """``n`` new flights, each with a waiting run of ``words-<key>``."""
    with db.session() as s, s.begin():
        write_lock(s)
        ctx = Ctx(session=s, actor="bench", files_dir=project.files_dir)
        ids = bulk.bulk_create_records(ctx, "flights", [
            {"schema_name": "flight", "data": {"notes": f"flight {i} left {i % 90} minutes late"}} for i in range(n)])
        for record_id in ids:
            queue.enqueue(s, workflow=f"words-{key}", record_id=record_id, schema_name="flight", trigger="manual")


def drain(project: Project, db: Database, limits: Limits) -> tuple[int, float, float, int]:
    """Run every waiting run as the worker's drain does; returns (runs, wall s, CPU s,
    plugin processes started). Raises ``SystemExit`` when a run does not complete."""
    ran = 0
    with Drain(chain=db, group_seconds=GROUP_SECONDS, project_root=project.root, limits=limits) as kept:
        wall, cpu = time.perf_counter(), time.process_time()
        while done := batch_runs.execute_waiting(db, project, drain=kept):
            for job_id, status in done:
                if status != "completed":
                    with db.session() as s:
                        job = s.get(Job, job_id)
                        raise SystemExit(f"run {job_id} ended {status}: {job.error if job else '?'}")
            ran += len(done)
        spent = time.perf_counter() - wall, time.process_time() - cpu
        started = kept.pool.started
    with db.session() as s:
        left = s.scalar(select(func.count()).select_from(Job).where(Job.status != "completed"))
    if left:
        raise SystemExit(f"{left} run(s) did not complete")
    return ran, spent[0], spent[1], started


def measure(project: Project, db: Database, runs: int, cold_runs: int, batched_runs: int,
            say: Any) -> list[tuple[str, str, str, str]]:
    """Every measurement, as the lines ``bench/automation.py`` prints: (what, rate, [CPU rate],
    target and verdict)."""
    set_up(project, db)
    rates: dict[str, float] = {}
    lines: list[tuple[str, str, str, str]] = []
    cases = [("builtin", "", runs, DEFAULT), ("py", "warm", runs, DEFAULT), ("py", "cold", cold_runs,
             Limits(plugin_warm_runs=1)), ("js", "warm", runs, DEFAULT), ("js", "cold", cold_runs,
                                                                          Limits(plugin_warm_runs=1)),
             ("js", "warm, one commit a run", runs, Limits(plugin_batch_size=1)),
             ("pyb", "batched", batched_runs, DEFAULT), ("jsb", "batched", batched_runs, DEFAULT)]
    for key, how, n, limits in cases:
        if not n:
            continue
        say(f"{NAMES[key]}{', ' + how if how else ''}: {n:,} runs …")
        queue_runs(project, db, key, n)
        ran, wall, cpu, started = drain(project, db, limits)
        rate = rates[f"{key} {how}".strip()] = ran / wall
        target = TARGETS.get(f"{key} {how}")
        verdict = f"target >= {target:,.0f} runs/s: {'met' if rate >= target else 'missed'}" if target else "no target"
        lines.append((f"{NAMES[key]}{', ' + how if how else ''}: {ran:,} runs, {started} process(es) started",
                      f"{rate:,.1f} runs/s", f"[{ran / cpu:,.0f}]", verdict))
    for key in ("py", "js"):
        batched = rates.get(f"{key}b batched")
        warm, cold, builtin = rates.get(f"{key} warm"), rates.get(f"{key} cold"), rates.get("builtin")
        if batched and warm:
            lines.append((f"  ratio {key} batched / warm", f"{batched / warm:.1f}x", "", "no target"))
        if warm and cold:
            lines.append((f"  ratio {key} warm / cold", f"{warm / cold:.1f}x", "", "no target"))
        if warm and builtin:
            lines.append((f"  ratio {key} warm / built-in", f"{warm / builtin:.2f}x", "", "no target"))
        if warm and (alone := rates.get(f"{key} warm, one commit a run")):
            lines.append((f"  ratio {key} warm / warm with one commit a run", f"{warm / alone:.2f}x", "", "no target"))
    return lines
