"""Waiting runs of one workflow run together, so that a batch plugin gets them in one frame
(issue 36 item 2; ``plugin-protocol/README.md``, row *batch*; ``docs/automation.md``), or so
that quick runs of a plugin that only reads share their commits (:func:`quick_count`;
``docs/automation.md`` *Quick plugin runs go together*).

A plugin whose describe result says ``batch: true`` takes many runs of a step in one ``run``
frame. When a drain (:class:`~.drain.Drain`) claims a run whose workflow has a step of such a
plugin (tier 1 or 2: :func:`batchable`), it claims up to ``[limits] plugin_batch_size`` − 1 more
waiting runs of the same workflow (:func:`claim_more`, oldest first) and runs them in step
(:func:`run_together`): for each step of the workflow, in order,

1. each run still going is checked (cancelled, deleted, the server stopping: as a lone run is,
   :mod:`.execution`), its ``if`` tested and its inputs read; what this wrote (runs that ended,
   skipped steps) is committed, so no transaction stays open while the plugin runs;
2. a batch plugin gets the inputs of every run that is ready in one ``run`` frame
   (:meth:`~.plugins.steps.StepRunner.run_batch`); a plugin that only reads (:data:`READ_ONLY`)
   gets each run's frame in turn (:meth:`_Together._turns`); a step of any other plugin runs for
   each run in turn, each in its own transaction as a lone run's step is (a failure undoes only
   that run's writes);
3. each run's outputs are saved through the workflow's ``save``, all in one transaction; when a
   field refuses one, that transaction is undone and the saves are made again, each in a
   savepoint of its own, so the refused one fails that run alone; one commit ends the step for
   every run (the last step's: with the runs' ends).

No two runs of one record go together (:func:`claim_more`).

Each run keeps its own status, ``step_executions``, log (a batch plugin's log frames and standard
error lines go into the log of every run of the batch), history batch and failure: a run whose
item the plugin named in ``errors`` fails with that kind and message while the others go on;
what fails the whole batch (the plugin's ``error`` frame, a timeout, the process dying) fails
every run in it. The step's ``timeout`` is per run: the batch's turn may take it times the runs
sent. Runs that go together do not chain claims or share group commits (:mod:`.drain`): the
drain claims afresh after them.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Table, insert, select, update
from sqlalchemy.orm import Session

from benchbook.domain import plugin_registry as registry
from benchbook.domain.context import Ctx
from benchbook.domain.errors import NotFound
from benchbook.domain.ids import new_id
from benchbook.persistence.db import Database, write_lock
from benchbook.persistence.tables import AuditBatch, Job, Record, utcnow
from benchbook.runner import execution
from benchbook.runner.drain import RUN_WAIT, Claimed, Drain
from benchbook.runner.errors import StepFailed, StopRun
from benchbook.runner.execution import StepExecution, _Run
from benchbook.runner.plugin_host.steps import StepRunner
from benchbook.runner.workflows import Step, Workflow
from benchbook.settings.config import Project

log = logging.getLogger("benchbook.runs")
_JOBS: Table = Job.__table__  # type: ignore[assignment]
_BATCHES: Table = AuditBatch.__table__  # type: ignore[assignment]
BATCH_TIERS = ("1", "2")
"""Tiers whose batch plugins get runs in batches (an in-process plugin costs nothing to call)."""
READ_ONLY = ("get_context_record", "get_schema", "get_file")
"""Capabilities of a plugin whose runs may go together when quick (:func:`quick_kind`): a run's
own record, the catalog and stored files, none of which another run of the group writes."""


def batchable(drain: Drain, db: Database, project: Project, workflow_name: str) -> bool:
    """Whether runs of ``workflow_name`` go together: a step of it runs a batch plugin of a tier
    in :data:`BATCH_TIERS`, and ``[limits] plugin_batch_size`` is over 1. Kept by the drain for
    its ``recheck`` seconds; a workflow that cannot be read is not (its run fails alone)."""
    if drain.limits.plugin_batch_size <= 1:
        return False

    def compute() -> bool:
        with db.session() as s:
            try:
                wf = drain.workflows.find(s, project.root, workflow_name)
                return not wf.problems and any(_batch_plugin(s, drain, st) is not None for st in wf.steps)
            except NotFound:
                return False
    return bool(drain.kept(("batchable", workflow_name), compute))


def _reads_only(plugin: dict[str, Any]) -> bool:
    """Whether ``plugin`` declares no capability outside :data:`READ_ONLY`."""
    return set(plugin.get("capabilities") or ()) <= set(READ_ONLY)


def _plugin(s: Session, drain: Drain, step: Step) -> dict[str, Any]:
    """``step``'s plugin as registered (kept by the drain). Raises ``NotFound``."""
    plugin: dict[str, Any] = drain.kept(("plugin", step.plugin), lambda: registry.runnable(s, step.plugin))
    return plugin


def _batch_plugin(s: Session, drain: Drain, step: Step) -> dict[str, Any] | None:
    """``step``'s plugin as registered (kept by the drain) when it takes runs in batches."""
    try:
        plugin = _plugin(s, drain, step)
    except NotFound:
        return None
    return plugin if plugin.get("batch") and plugin["tier"] in BATCH_TIERS and plugin["status"] == "ok" else None


def claim_more(db: Database, project: Project, first: Claimed, count: int) -> list[Claimed]:
    """Claim up to ``count`` more waiting runs of ``first``'s workflow (oldest first:
    ``created_at``, then id), none of the same record as ``first`` or as each other, and open a
    history batch for each, in one commit. Returns them oldest first. Runs that go together read
    their inputs before any of them saves: a second run of one record waits for a later group,
    where it sees what the first one saved, as it would have running alone."""
    if count <= 0:
        return []
    oldest = (select(_JOBS.c.id, _JOBS.c.record_id)
              .where(_JOBS.c.status == "pending", _JOBS.c.workflow_name == first.workflow_name)
              .order_by(_JOBS.c.created_at, _JOBS.c.id).limit(2 * count))
    with db.session() as s, s.begin():
        write_lock(s, RUN_WAIT)
        records, picked = {first.record_id}, list[str]()
        for row in s.execute(oldest):
            if row.record_id not in records and len(picked) < count:
                records.add(row.record_id)
                picked.append(row.id)
        if not picked:
            return []
        claiming = (update(_JOBS).where(_JOBS.c.id.in_(picked), _JOBS.c.status == "pending")
                    .values(status="running", started_at=utcnow())
                    .returning(_JOBS.c.id, _JOBS.c.record_id, _JOBS.c.depth, _JOBS.c.trigger, _JOBS.c.created_at))
        rows = sorted(s.execute(claiming).all(), key=lambda row: (row.created_at, row.id))
        claimed = [Claimed(row.id, first.workflow_name, row.record_id, row.depth, row.trigger, new_id())
                   for row in rows]
        if claimed:
            s.execute(insert(_BATCHES).values(kind="workflow"), [
                {"id": c.batch_id, "label": first.workflow_name, "ref": c.id, "actor": project.actor,
                 "created_at": utcnow()} for c in claimed])
    return claimed


def quick_count(drain: Drain, db: Database, project: Project, workflow_name: str) -> int:
    """How many waiting runs of ``workflow_name`` go together as quick runs (1: the run goes
    alone; docs/automation.md *Quick plugin runs go together*): as many as the drain's
    ``group_seconds`` holds at the pace its runs of the workflow took lately (:meth:`Drain.pace`),
    at most ``[limits] plugin_batch_size``, when the workflow is :func:`quick_kind`."""
    pace = drain.pace(workflow_name)
    if not drain.group_seconds or pace is None or drain.limits.plugin_batch_size <= 1:
        return 1
    if not quick_kind(drain, db, project, workflow_name):
        return 1
    return max(1, min(drain.limits.plugin_batch_size, int(drain.group_seconds / max(pace, 1e-6))))


def quick_kind(drain: Drain, db: Database, project: Project, workflow_name: str) -> bool:
    """Whether runs of ``workflow_name`` may go together when quick: a step of it runs an
    out-of-process plugin (tier 1 or 2; runs of built-in steps alone share commits already:
    :mod:`.drain`), and no step's plugin declares a capability outside :data:`READ_ONLY`, so
    that no run writes before the group's saves nor reads what another run of the group saves.
    Kept by the drain for its ``recheck`` seconds."""
    def compute() -> bool:
        with db.session() as s:
            try:
                wf = drain.workflows.find(s, project.root, workflow_name)
                plugins = [_plugin(s, drain, st) for st in wf.steps]
            except NotFound:
                return False
        return (not wf.problems and any(p["tier"] in BATCH_TIERS for p in plugins)
                and all(p["status"] == "ok" and _reads_only(p) for p in plugins))
    return bool(drain.kept(("quick", workflow_name), compute))


def execute_waiting(db: Database, project: Project, *, worker: str = "",
                    should_stop: Callable[[], bool] = lambda: False, drain: Drain) -> list[tuple[str, str]]:
    """:func:`~.engine.execute_runs` for a worker's ``drain``: the oldest waiting run, with the
    waiting runs of its workflow that go with it — when a step of it runs a batch plugin
    (:func:`batchable`; up to ``[limits] plugin_batch_size`` in all), or when its runs are quick
    (:func:`quick_count`) — claimed by :func:`claim_more`; returns ``(id, final status)`` of each
    run, the oldest first, or ``[]`` when none was waiting. Each call's runs are timed into the
    drain's pace of their workflow."""
    started = time.monotonic()
    took: list[str] = []

    def together(claimed: Claimed) -> list[tuple[str, str]] | None:
        took.append(claimed.workflow_name)
        if drain.group is not None:
            return None
        batched = batchable(drain, db, project, claimed.workflow_name)
        count = drain.limits.plugin_batch_size if batched else quick_count(drain, db, project, claimed.workflow_name)
        if count <= 1:
            return None
        more = claim_more(db, project, claimed, count - 1)
        return run_together(db, project, [claimed, *more], worker=worker, should_stop=should_stop, drain=drain,
                            batched=batched)
    ran = execution.execute_runs(db, project, worker=worker, should_stop=should_stop, drain=drain, together=together)
    if ran and len(set(took)) == 1:
        drain.paced(took[0], time.monotonic() - started, len(ran))
    return ran


def run_together(db: Database, project: Project, claimed: list[Claimed], *, worker: str,
                 should_stop: Callable[[], bool], drain: Drain, batched: bool = True) -> list[tuple[str, str]]:
    """Run the runs ``claimed`` (all of one workflow, all ``running`` with their history batches
    open) in step, as the module docstring says; returns ``(id, final status)`` of each, in order
    (``deleted`` for a run deleted meanwhile). ``batched``: they go together for a batch plugin
    (each log says so); otherwise they are quick runs (:func:`quick_count`), whose logs read as a
    lone run's, since what each run does and ends with is the same either way."""
    runs = [_Run(db, project, c, should_stop, drain) for c in claimed]
    for run in runs:
        run.shared = True
        run.log.add(f"started by worker {worker or '?'} (depth {run.depth}, trigger {run.claimed.trigger})"
                    + (f" with {len(runs) - 1} other run(s) of the workflow" if batched else ""))
    s = db.sessions()
    try:
        _Together(s, runs, drain, project).go()
    except Exception as exc:  # anything unexpected: what was not committed is undone, the runs left fail
        log.exception("runs %s failed unexpectedly", ", ".join(r.job_id for r in runs))
        s.rollback()
        for run in runs:
            if run.ended is None and not run.deleted:
                run.held = None
                run._finish(s, "failed", kind="internal", step=None,
                            message=f"the run failed unexpectedly: {type(exc).__name__}: {exc}")
        s.commit()
    finally:
        for run in runs:
            if not run.batch_settled:
                run._drop_empty_batch(s)
        s.close()
    return [(run.job_id, run.ended or "deleted") for run in runs]


class _Together:
    """The runs of one :func:`run_together`, stepped through their workflow in ``s``."""

    def __init__(self, s: Session, runs: list[_Run], drain: Drain, project: Project) -> None:
        self.s, self.runs, self.drain, self.project = s, runs, drain, project
        self.outputs: dict[str, dict[str, dict[str, Any]]] = {run.job_id: {} for run in runs}

    def go(self) -> None:
        s, first = self.s, self.runs[0]
        try:
            wf = self.drain.workflows.find(s, self.project.root, first.workflow_name)
        except NotFound as exc:
            return self._end_all("workflow_not_found", exc.detail)
        if wf.problems:
            return self._end_all("workflow_invalid", f"workflow {wf.name!r} has {len(wf.problems)} problem(s): "
                                 + "; ".join(p["msg"] for p in wf.problems[:3]))
        s.rollback()
        going = list(self.runs)
        with StepRunner(scratch=self.drain.scratch, project_root=self.project.root, pool=self.drain.pool) as runner:
            for index, step in enumerate(wf.steps):
                last = index == len(wf.steps) - 1
                going = self._still_going(going, wf, index, runner)
                ready = self._prepare(going, wf, step, last)
                s.commit()  # what the checks wrote; no transaction stays open while a plugin runs
                batch = _batch_plugin(s, self.drain, step)
                if batch is not None:
                    self._batch_step(runner, wf, step, batch, ready, last)
                elif ready and not _reads_only(ready[0].plugin):
                    self._one_by_one(runner, wf, step, ready, last)  # its turn may write: each run commits alone
                elif ready:
                    self._save(wf, step, ready, self._turns(runner, step, ready), last)
                going = [run for run in going if run.ended is None and not run.deleted]
            for run in going:
                run._finish(s, "completed")
            s.commit()
        return None

    def _end_all(self, kind: str, message: str) -> None:
        for run in self.runs:
            run._finish(self.s, "failed", kind=kind, step=None, message=message)
        self.s.commit()

    def _still_going(self, going: list[_Run], wf: Workflow, index: int, runner: StepRunner) -> list[_Run]:
        kept = []
        for run in going:
            try:
                run._check(self.s, index == 0)
                kept.append(run)
            except StopRun as stop:
                runner.end_processes()
                run._stopped(self.s, wf, index, stop.status)
        return kept

    def _load_records(self, runs: list[_Run]) -> list[Record]:
        """The runs' records, read in one statement into the session, which then finds each one
        there without a statement of its own; the caller holds the list while it needs them (the
        session keeps only what is referenced)."""
        return list(self.s.scalars(select(Record).where(Record.id.in_([run.record_id for run in runs]))))

    def _prepare(self, going: list[_Run], wf: Workflow, step: Step, last: bool) -> list[_Ready]:
        held = self._load_records(going)  # noqa: F841 (held while each run's step reads its record)
        ready = []
        for run in going:
            execution, ctx = StepExecution(run, step), run._ctx(self.s)
            try:
                prepared = run.prepare(self.s, wf, step, self.outputs[run.job_id])
            except StepFailed as exc:
                self._failed(run, step, execution, exc)
                continue
            if prepared is None:
                run.skipped(ctx, step, execution, last)
            else:
                ready.append(_Ready(run, ctx, execution, *prepared))
        return ready

    def _batch_step(self, runner: StepRunner, wf: Workflow, step: Step, plugin: dict[str, Any],
                    ready: list[_Ready], last: bool) -> None:
        if not ready:
            return
        for r in ready:
            r.run.log.add(f"[{step.id}] running {step.plugin} in a batch of {len(ready)}")
        sinks = [r.run.log.sink(step.id) for r in ready]

        def to_every_log(stream: str, line: str) -> None:
            for sink in sinks:
                sink(stream, line)
        lead = ready[0]  # the host operations a batch may use read, or store files: any run's serve
        try:  # the items' inputs use each run's current plugin row; the batch runs with the step's
            answers = runner.run_batch(plugin, [r.inputs for r in ready], step.config, timeout=step.timeout,
                                       log=to_every_log,
                                       rpc_for=lead.host)
        except StepFailed as exc:  # the plugin cannot run or the config breaks its schema
            answers = [exc] * len(ready)
        if last:
            runner.end_processes()
        self._save(wf, step, ready, answers, last)

    def _turns(self, runner: StepRunner, step: Step, ready: list[_Ready]) -> list[dict[str, Any] | StepFailed]:
        """Each ready run's turn of ``step``'s plugin (which only reads: :data:`READ_ONLY`), one
        after the other in its warm process, handed back to the drain's pool after each (as a
        lone run's is at its end), nothing saved yet: each answer, or the failure."""
        answers: list[dict[str, Any] | StepFailed] = []
        for r in ready:
            r.run.log.add(f"[{step.id}] running {step.plugin}")
            try:
                answers.append(runner.run_step(r.plugin, r.inputs, step.config, timeout=step.timeout,
                                               log=r.run.log.sink(step.id), rpc_for=r.host))
            except StepFailed as exc:
                answers.append(exc)
            finally:  # handed back as at a lone run's end: its scratch folder emptied, its stderr relayed
                runner.end_processes()
            if self.s.in_transaction():
                self.s.rollback()  # what its reads began: no transaction stays open while the next run's turn
        return answers

    def _save(self, wf: Workflow, step: Step, ready: list[_Ready], answers: list[dict[str, Any] | StepFailed],
              last: bool) -> None:
        """End ``step`` for the ``ready`` runs by their ``answers`` (in order): a failure fails its
        run; the others' outputs are saved in one transaction, each in a savepoint of its own when
        a field refuses one; one commit (the last step's: with the runs' ends)."""
        done = [(r, answer) for r, answer in zip(ready, answers, strict=True) if not isinstance(answer, StepFailed)]
        for r, answer in zip(ready, answers, strict=True):
            if isinstance(answer, StepFailed):
                self._failed(r.run, step, r.execution, answer)
        self.s.commit()  # the failed ones' ends: the saves below may be undone as a whole
        write_lock(self.s, RUN_WAIT)
        held = self._load_records([r.run for r, _ in done])  # noqa: F841 (held while the saves find them)
        marks = [(r.run.problems, r.run.log.mark()) for r, _ in done]
        try:  # first, every save in the step's transaction: a refused one is rare
            for r, answer in done:
                r.run.apply(r.ctx, wf, step, r.plugin, answer, self.outputs[r.run.job_id], r.execution)
        except StepFailed:  # all undone: again, each run in a savepoint of its own
            self.s.rollback()
            for (r, _), (problems, mark) in zip(done, marks, strict=True):
                r.ctx.changes.clear()
                r.run.problems, r.execution.data["problems"] = problems, None
                r.run.log.rewind(mark)
            write_lock(self.s, RUN_WAIT)  # the savepoints need the transaction begun
            self._apply_each(wf, step, done, last)
        else:
            for r, _ in done:
                r.execution.end("completed")
                r.run.step_done(r.ctx, last)
        if not last:  # the last step's saves commit with the runs' ends (go)
            self.s.commit()

    def _apply_each(self, wf: Workflow, step: Step, done: list[tuple[_Ready, dict[str, Any]]], last: bool) -> None:
        """Save each run's outputs in a savepoint of its own: a refused save fails that run."""
        for r, answer in done:
            try:
                with self.s.begin_nested():
                    r.run.apply(r.ctx, wf, step, r.plugin, answer, self.outputs[r.run.job_id], r.execution)
            except StepFailed as exc:
                r.ctx.changes.clear()
                self._failed(r.run, step, r.execution, exc)
                continue
            r.execution.end("completed")
            r.run.step_done(r.ctx, last)

    def _one_by_one(self, runner: StepRunner, wf: Workflow, step: Step, ready: list[_Ready], last: bool) -> None:
        for r in ready:
            r.run.log.add(f"[{step.id}] running {step.plugin}")
            try:
                result = runner.run_step(r.plugin, r.inputs, step.config, timeout=step.timeout,
                                         log=r.run.log.sink(step.id),
                                         rpc_for=r.host)
                r.run.apply(r.ctx, wf, step, r.plugin, result, self.outputs[r.run.job_id], r.execution)
            except StepFailed as exc:
                self.s.rollback()  # this run's writes of this step; the others' are committed
                r.ctx.changes.clear()
                self._failed(r.run, step, r.execution, exc)
            else:
                r.execution.end("completed")
                r.run.step_done(r.ctx, last)
            self.s.commit()
        if last:
            runner.end_processes()

    def _failed(self, run: _Run, step: Step, execution: StepExecution, exc: StepFailed) -> None:
        run.step_failed(step, execution, exc)
        run._finish(self.s, "failed", kind=exc.kind, step=step.id, message=exc.message)


class _Ready:
    """A run ready for a step: its ``Ctx`` for the step's writes, its execution entry, the
    plugin as registered and the inputs read."""

    def __init__(self, run: _Run, ctx: Ctx, execution: StepExecution, plugin: dict[str, Any],
                 inputs: dict[str, Any]) -> None:
        self.run, self.ctx, self.execution, self.plugin, self.inputs = run, ctx, execution, plugin, inputs

    def host(self, scratch: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The host operations of the run's step (its plugin's scratch folder ``scratch``)."""
        return self.run.host(self.ctx, scratch)
