"""Running one queued run: its workflow's steps, in order, on its record (docs/automation.md
*Run status*).

:func:`execute` claims a ``pending`` run (→ ``running``, committed, with its history batch),
then for each step:

1. stops first when the run was cancelled (``cancel_requested``, → ``cancelled``; the steps
   left are recorded ``cancelled``), deleted (nothing more is written to it) or the server is
   stopping (→ ``failed``, kind ``interrupted``); before the first step only the last is asked
   (the run was claimed a moment before: a cancel now finds its step in progress);
2. skips the step (``skipped``) when its ``if`` filter tree does not match the record as it is now;
3. builds the inputs: literals, ``record.<field>`` (the record's own field, else the nearest
   ancestor's: an inherited field resolves like in the record filter), ``record.id``,
   ``<step>.<output>`` (None when that step was skipped);
4. runs the plugin through one :class:`~.plugins.steps.StepRunner` for the whole run (a tier-1
   plugin keeps one process for every step of the run, taken from the drain's warm processes
   and handed back at the run's end: :mod:`.plugins.pool`), its host operations writing in the
   run's ``Ctx``;
5. saves what the workflow's ``save`` maps from this step's outputs into the record, through the
   normal record update;
6. commits: the step's writes, the runs they trigger (``depth`` + 1), and the run's progress;
   the last step's commit is the run's end (status, and its batch removed if it stayed empty),
   and in a worker's drain it also claims the next waiting run (:class:`~.drain.Drain`), so a
   1-step run of a drain is one commit (it was four: ``docs/performance.md``), and quick runs
   (built-in steps only) share one commit for up to 50 ms (the group commit, :mod:`.drain`).

So the writes of a run are committed step by step: a step that fails leaves nothing of its own
behind (unless its plugin called ``commit``), while the steps before it stay, as do the changes
of a run that is cancelled or deleted (docs/automation.md *Run status*: "record changes already
made stay"). All of a run's
writes are one history batch of kind ``workflow`` (label: the workflow's name, ref: the run's
id); a run that wrote nothing leaves no batch.

A step failing (:class:`~.errors.StepFailed`, a refused save, an ``if`` tree that does
not compile) fails the run: ``error`` says which step and why, ``error_details`` is ``{kind,
step, message}``. A step's integer output named ``problems`` counts into the run's ``problems``:
the run still completes, "completed with N problems".
"""
from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Table, bindparam, exists, select, update
from sqlalchemy.orm import Session

from benchbook.domain import plugin_registry as registry
from benchbook.domain.catalog.dtypes import display_value
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError, NotFound
from benchbook.domain.records import writes
from benchbook.domain.records.filters import compile_filter, resolve_field
from benchbook.persistence.db import Database, write_lock
from benchbook.persistence.tables import Collection, Job, Record, Schema, utcnow
from benchbook.plugin import values as sdk_values
from benchbook.runner import kept_reads, shapes, step_outputs, triggers, workflows
from benchbook.runner.drain import RUN_WAIT, Claimed, Drain, claim, claim_in, drop_empty_batch
from benchbook.runner.errors import Regroup, StepFailed, StopRun
from benchbook.runner.plugin_host.rpc import HostOperations
from benchbook.runner.plugin_host.steps import StepRunner
from benchbook.runner.workflows import Step, Workflow
from benchbook.settings.config import Project

log = logging.getLogger("benchbook.runs")
_JOBS: Table = Job.__table__  # type: ignore[assignment]
_UPDATE_JOB = update(_JOBS).where(_JOBS.c.id == bindparam("job_id"))  # SET: the columns given

LOG_LIMIT = 256 * 1024
"""Characters of a run's ``log`` kept; later lines are counted, not kept."""
WRITING_CALLS = ("update_record", "create_record", "store_file")
SCALAR_PORTS = ("integer", "float", "string", "boolean", "date", "datetime", "file")


@dataclass
class _RunLog:
    """A run's log: plugin ``log`` frames and standard-error lines, and the engine's own notes."""

    lines: list[str] = field(default_factory=list)
    size: int = 0
    dropped: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, line: str) -> None:
        stamped = f"{utcnow():%H:%M:%S} {line}"
        with self.lock:
            if self.size + len(stamped) > LOG_LIMIT:
                self.dropped += 1
                return
            self.lines.append(stamped)
            self.size += len(stamped) + 1

    def mark(self) -> tuple[int, int, int]:
        """Where the log stands now, for :meth:`rewind`."""
        with self.lock:
            return len(self.lines), self.size, self.dropped

    def rewind(self, mark: tuple[int, int, int]) -> None:
        """Forget what was added since :meth:`mark` gave ``mark`` (work undone and done again)."""
        with self.lock:
            del self.lines[mark[0]:]
            self.size, self.dropped = mark[1], mark[2]

    def sink(self, step_id: str) -> Callable[[str, str], None]:
        return lambda stream, message: self.add(f"[{step_id}] {stream}: {message}")

    def text(self) -> str | None:
        with self.lock:
            tail = [f"… {self.dropped} more line(s) not kept (the log keeps {LOG_LIMIT} characters)"] \
                if self.dropped else []
            return "\n".join([*self.lines, *tail]) or None


def _jsonable(value: Any, what: str) -> Any:
    """An output value as a record value: dates as ISO text; bytes and tables cannot be saved."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)) or (hasattr(value, "columns") and hasattr(value, "to_dict")):
        raise StepFailed("save_failed", f"{what} is {'bytes' if isinstance(value, (bytes, bytearray)) else 'a table'}"
                                        ", which a record field cannot hold")
    return value


class StepExecution:
    """One step's entry in a run's ``step_executions``, timed from when it is made; :meth:`end`
    records it with its status."""

    def __init__(self, run: _Run, step: Step) -> None:
        self.run, self.clock = run, time.monotonic()
        self.data: shapes.StepExecution = {"step_id": step.id, "plugin": step.plugin, "status": "running",
                                           "started_at": utcnow().isoformat(), "finished_at": None,
                                           "duration_ms": None, "error": None, "problems": None}

    def end(self, status: str, error: str | None = None) -> None:
        """The step ended with ``status`` (``completed``, ``skipped``, ``failed``) and ``error``."""
        self.data.update({"status": status, "finished_at": utcnow().isoformat(),
                          "duration_ms": int((time.monotonic() - self.clock) * 1000), "error": error})
        self.run.executions.append(self.data)


class _Run:
    """One run being executed (see the module docstring)."""

    def __init__(self, db: Database, project: Project, claimed: Claimed, should_stop: Callable[[], bool],
                 drain: Drain) -> None:
        self.db, self.project, self.should_stop, self.drain = db, project, should_stop, drain
        self.job_id, self.workflow_name, self.record_id, self.depth = (claimed.id, claimed.workflow_name,
                                                                       claimed.record_id, claimed.depth)
        self.batch_id, self.claimed = claimed.batch_id, claimed
        self.grouped = False  # runs in the open transaction of the group of runs before it (drain.py)
        self.shared = False  # runs in step with other runs of its workflow, which commit for it (batch_runs.py)
        self.ended: str | None = None  # its final status, once :meth:`_finish` wrote it
        self.log = _RunLog()
        self.executions: list[shapes.StepExecution] = []
        self.affected: dict[str, shapes.AffectedRecord] = {}
        self.problems = 0
        self.deleted = False
        self.batch_settled = False  # the empty-batch check ran in the final commit
        self.held: Ctx | None = None  # the last step's writes, committed with the run's end

    # ------------------------------------------------------------------ bookkeeping
    def _ctx(self, s: Session) -> Ctx:
        return Ctx(session=s, actor=self.project.actor, files_dir=self.project.files_dir, batch_id=self.batch_id,
                   job_id=self.job_id, workflow=self.workflow_name, depth=self.depth)

    def _commit(self, ctx: Ctx, *, final: bool = False, **job_values: Any) -> None:
        """Commit ``ctx``'s writes with the runs they trigger and the run's progress; ``final``:
        the run ends, and its history batch is removed in the same commit if it stayed empty."""
        s = ctx.session
        write_lock(s, RUN_WAIT)
        for c in ctx.changes:
            if c.record_id not in self.affected:
                self.affected[c.record_id] = {"record_id": c.record_id, "schema_name": self._schema_name(s, c.schema_id),
                                              "action": c.action}
        queued = triggers.on_changes(ctx, self.project.root, self.drain.workflows)
        for note in queued.notes:
            self.log.add(note)
        for job in queued.jobs:
            self.log.add(f"queued run {job.id} of workflow {job.workflow_name!r} for record {job.record_id} "
                         f"(depth {job.depth})")
        s.flush()
        values = {"step_executions": list(self.executions), "affected_records": list(self.affected.values()),
                  "log": self.log.text(), "problems": self.problems, **job_values}
        if not self.deleted:  # Core, not the ORM's bulk update: no session objects to bring up to date
            done = s.execute(_UPDATE_JOB, {"job_id": self.job_id, **values})
            self.deleted = not done.rowcount  # type: ignore[attr-defined]
        if final and not self.affected:  # a record written leaves an entry in the batch
            drop_empty_batch(s, self.batch_id)
        claimed = claim_in(s, self.project, None) if final and self._chains() else None
        if self.shared:
            s.flush()  # the runs it goes with commit together (batch_runs.py)
        elif final and self.drain.keeps_open(s, self.claimed, claimed, lambda name: self._groupable(s, name)):
            s.flush()  # the next run goes on in this transaction (drain.py: group commit)
        elif not self.grouped or final:
            s.commit()
            self.drain.committed()
        self.batch_settled = final
        if claimed is not None:
            self.drain.next = claimed

    def _groupable(self, s: Session, workflow_name: str) -> bool:
        """Whether every step of ``workflow_name`` runs a built-in plugin (in process), so its
        runs may share a commit (drain.py)."""
        def compute() -> bool:
            try:
                wf = self.drain.workflows.find(s, self.project.root, workflow_name)
                return not wf.problems and all(self._plugin(s, st.plugin)["tier"] == "builtin" for st in wf.steps)
            except (NotFound, StepFailed):
                return False
        return bool(self.drain.kept(("groupable", workflow_name), compute))

    def _end_read(self, s: Session) -> None:
        """End the transaction that only read (none stays open while a plugin runs), unless
        this run goes on in the open transaction of its group, or goes with other runs (whose
        writes their common commit ends)."""
        if not self.grouped and not self.shared:
            s.rollback()

    def _chains(self) -> bool:
        """Whether the run's final commit claims the next run (see :class:`Drain`)."""
        return (self.drain.chain is not None and not self.shared and not self.should_stop()
                and not kept_reads.paused(self.project.root))

    def _schema_name(self, s: Session, schema_id: str) -> str:
        name: str = SchemaCache(s).meta(schema_id).schema.name
        return name

    def _check(self, s: Session, first: bool) -> None:
        """Raise :class:`StopRun` when the run must end before its next step. Before the first
        step only the worker is asked: the run was claimed a moment ago, so a cancel or delete
        now finds it running, and its step in progress finishes first (docs/automation.md *Run status*)."""
        if first:
            if self.should_stop():
                raise StopRun("interrupted")
            return
        row = s.execute(select(Job.cancel_requested).where(Job.id == self.job_id)).first()
        self._end_read(s)
        if row is None:
            self.deleted = True
            raise StopRun("deleted")
        if row[0]:
            raise StopRun("cancelled")
        if self.should_stop():
            raise StopRun("interrupted")

    # ------------------------------------------------------------------ the run
    def go(self) -> str:
        group = self.drain.group
        self.grouped = group is not None
        s = group.session if group is not None else self.db.sessions()
        try:
            return self._steps(s)
        except Regroup:
            raise
        except Exception as exc:
            if self.grouped:  # the drain rolls the group back; this run then runs alone
                raise Regroup(self.job_id) from exc
            log.exception("run %s failed unexpectedly", self.job_id)
            s.rollback()
            self.held = None  # its writes were rolled back: nothing of them is committed
            return self._finish(s, "failed", kind="internal", step=None,
                                message=f"the run failed unexpectedly: {type(exc).__name__}: {exc}")
        finally:
            if not self.batch_settled and not self.grouped:
                self._drop_empty_batch(s)
            if self.drain.group is None or self.drain.group.session is not s:
                s.close()

    def _steps(self, s: Session) -> str:
        try:
            wf = self.drain.workflows.find(s, self.project.root, self.workflow_name)
        except NotFound as exc:
            return self._finish(s, "failed", kind="workflow_not_found", step=None, message=exc.detail)
        if wf.problems:
            return self._finish(s, "failed", kind="workflow_invalid", step=None, message=(
                f"workflow {wf.name!r} has {len(wf.problems)} problem(s): "
                + "; ".join(p["msg"] for p in wf.problems[:3])))
        self._end_read(s)
        outputs: dict[str, dict[str, Any]] = {}
        with StepRunner(scratch=self.drain.scratch, project_root=self.project.root, pool=self.drain.pool) as runner:
            for index, step in enumerate(wf.steps):
                try:
                    self._check(s, index == 0)
                except StopRun as stop:
                    runner.end_processes()  # an earlier step's last stderr lines reach the log first
                    return self._stopped(s, wf, index, stop.status)
                failed = self._step(s, runner, wf, step, outputs, last=index == len(wf.steps) - 1)
                if failed is not None:
                    return self._finish(s, "failed", kind=failed.kind, step=step.id, message=failed.message)
            # the last step's writes and the run's end: one commit (its plugins ended at its answer)
            return self._finish(s, "completed")

    def _step(self, s: Session, runner: StepRunner, wf: Workflow, step: Step,
              outputs: dict[str, dict[str, Any]], *, last: bool = False) -> StepFailed | None:
        """Run ``step``; its writes are committed with the run's progress, or, for the ``last``
        step, left in :attr:`held` for :meth:`_finish` to commit with the run's end."""
        execution = StepExecution(self, step)
        ctx = self._ctx(s)
        try:
            prepared = self.prepare(s, wf, step, outputs)
            if prepared is None:
                self.skipped(ctx, step, execution, last)
                return None
            plugin, inputs = prepared
            if self.grouped and plugin["tier"] != "builtin":  # changed since the group took it: run alone
                raise Regroup(self.job_id)
            self._end_read(s)  # no transaction stays open while the plugin runs
            self.log.add(f"[{step.id}] running {step.plugin}")
            result = runner.run_step(plugin, inputs, step.config, timeout=step.timeout, log=self.log.sink(step.id),
                                     rpc_for=lambda scratch: self.host(ctx, scratch))
            if last:  # the plugins' last stderr lines reach the log before the run's end writes it
                runner.end_processes()
            self.apply(ctx, wf, step, plugin, result, outputs, execution)
        except StepFailed as exc:
            if self.grouped:  # its partial writes share the group's transaction: the drain rolls it back
                raise Regroup(self.job_id) from exc
            s.rollback()
            runner.end_processes()  # what the plugin wrote to stderr comes before the failure's line
            ctx.changes.clear()
            return self.step_failed(step, execution, exc)
        execution.end("completed")
        self._step_done(ctx, last)
        return None

    # ------------------------------------------------------------------ a step in parts (also batch_runs.py)
    def prepare(self, s: Session, wf: Workflow, step: Step, outputs: dict[str, dict[str, Any]]
                ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Read what ``step`` needs: ``(plugin, inputs)``, or None when its ``if`` does not
        match the record now. Reads only. Raises :class:`StepFailed` (record gone, plugin
        unavailable, an ``if`` that cannot be tested)."""
        rec = self._record(s)
        if step.when is not None and not self._matches(s, rec, step.when):
            return None
        plugin = self._plugin(s, step.plugin)
        return plugin, self._inputs(s, rec, wf, step, plugin, outputs)

    def skipped(self, ctx: Ctx, step: Step, execution: StepExecution, last: bool) -> None:
        """``step`` does not apply to the record: recorded ``skipped``."""
        self._end_read(ctx.session)
        self.log.add(f"[{step.id}] skipped: the record does not match the step's if")
        execution.end("skipped")
        self._step_done(ctx, last)

    def apply(self, ctx: Ctx, wf: Workflow, step: Step, plugin: dict[str, Any], result: dict[str, Any],
              outputs: dict[str, dict[str, Any]], execution: StepExecution) -> None:
        """What ``step``'s plugin returned: kept for later steps, saved through the workflow's
        ``save``, its ``problems`` counted. Raises :class:`StepFailed` (``save_failed``)."""
        outputs[step.id] = result
        kept = step_outputs.kept(result)  # {outputs, outputs_bytes}
        execution.data.update({"outputs": kept["outputs"], "outputs_bytes": kept["outputs_bytes"]})
        self._save(ctx, wf, step, result)
        declared = plugin["outputs"].get("problems") or {}
        if declared.get("type") == "integer" and isinstance(result.get("problems"), int) and result["problems"]:
            execution.data["problems"] = result["problems"]
            self.problems += max(0, result["problems"])
            self.log.add(f"[{step.id}] finished with {result['problems']} problem(s)")

    def step_failed(self, step: Step, execution: StepExecution, exc: StepFailed) -> StepFailed:
        """``step`` failed with ``exc``: logged and recorded (the caller undid its writes)."""
        self.log.add(f"[{step.id}] failed: {exc.kind}: {exc.message}")
        execution.end("failed", f"{exc.kind}: {exc.message}")
        return exc

    def step_done(self, ctx: Ctx, last: bool) -> None:
        """The step completed: its writes committed with the run's progress (by its group or
        batch when it goes with others), or held for the run's end when it was the ``last``."""
        self._step_done(ctx, last)

    def _step_done(self, ctx: Ctx, last: bool) -> None:
        if last:
            self.held = ctx
        else:
            self._commit(ctx)

    # ------------------------------------------------------------------ pieces of a step
    def host(self, ctx: Ctx, scratch: Path) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The host operations of a step, in the run's ``Ctx``: a writing call takes the write
        lock first; ``commit`` commits the run's writes so far (once the call's savepoint is
        closed), with the runs they trigger."""
        ops = HostOperations(ctx, record_id=self.record_id, scratch=scratch)

        def answer(call: dict[str, Any]) -> dict[str, Any]:
            name = call["params"].get("tool") if call["method"] == "call_tool" else call["method"]
            if name in WRITING_CALLS:
                write_lock(ctx.session, RUN_WAIT)
            answered = ops(call)
            if name == "commit" and answered["type"] == "rpc_result":
                self._commit(ctx)
            return answered
        return answer

    def _record(self, s: Session) -> Record:
        rec = s.get(Record, self.record_id)  # a run's record_id is a whole id: no prefix to resolve
        if rec is None or rec.deleted_at is not None:
            raise StepFailed("record_not_found", f"record {self.record_id} does not exist or was deleted")
        return rec

    def _plugin(self, s: Session, plugin_id: str) -> dict[str, Any]:
        try:
            found: dict[str, Any] = self.drain.kept(("plugin", plugin_id), lambda: registry.runnable(s, plugin_id))
            return found
        except NotFound as exc:
            raise StepFailed("plugin_unavailable", exc.detail) from None

    def _matches(self, s: Session, rec: Record, tree: dict[str, Any]) -> bool:
        collection = s.get(Collection, rec.dataset_id)
        schema = s.get(Schema, rec.schema_id)
        assert collection is not None and schema is not None
        try:
            cond = compile_filter(s, collection, schema, json.dumps(tree), tz=collection.timezone)
        except BenchbookError as exc:
            raise StepFailed("invalid_condition", f"the step's if cannot be tested: {exc.detail}") from None
        return bool(s.scalar(select(exists().where(Record.id == rec.id, cond))))

    def _field(self, s: Session, rec: Record, name: str) -> Any:
        if name == "id":
            return rec.id

        def where() -> tuple[int, str, str, dict[str, Any]] | None:
            cache = SchemaCache(s)
            found = resolve_field(cache, cache.meta(rec.schema_id), name)
            return None if found is None else (found[0], found[2].id, found[2].type, dict(found[2].restrictions or {}))

        def timezone(dataset_id: str) -> str | None:
            collection = s.get(Collection, dataset_id)
            return collection.timezone if collection else None
        lives: tuple[int, str, str, dict[str, Any]] | None = self.drain.kept(("field", rec.schema_id, name), where)
        if lives is None:
            return None
        steps, field_id, dtype, restrictions = lives
        holder: Record | None = rec
        for _ in range(steps):
            holder = s.get(Record, holder.parent_id) if holder is not None and holder.parent_id else None
        if holder is None or field_id not in holder.data:
            return None
        tz = self.drain.kept(("tz", holder.dataset_id), lambda: timezone(holder.dataset_id))
        return display_value(dtype, restrictions, holder.data[field_id], tz=tz)

    def _inputs(self, s: Session, rec: Record, wf: Workflow, step: Step, plugin: dict[str, Any],
                outputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        step_ids = [st.id for st in wf.steps]
        out: dict[str, Any] = {}
        for name, value in step.inputs.items():
            ref = workflows.reference(value, step_ids)
            if ref is None:
                got = value
            elif ref[0] == "record":
                got = self._field(s, rec, ref[1])
            else:
                got = outputs.get(ref[0], {}).get(ref[1])
            port = (plugin["inputs"].get(name) or {}).get("type")
            if port in SCALAR_PORTS and isinstance(got, str) and port != "string":
                try:
                    got = sdk_values.decode_value(port, got)
                except ValueError:
                    pass  # the step runner reports the mismatch with the port's name
            out[name] = got
        return out

    def _save(self, ctx: Ctx, wf: Workflow, step: Step, result: dict[str, Any]) -> None:
        data = {}
        for target, source in wf.save.items():
            ref = workflows.reference(source, [step.id])
            if ref is not None and ref[0] == step.id:
                data[target] = _jsonable(result.get(ref[1]), f"output {ref[1]!r} of step {step.id!r}")
        if not data:
            return
        write_lock(ctx.session, RUN_WAIT)
        try:
            writes.update_record(ctx, self.record_id, {"data": data})
        except BenchbookError as exc:
            raise StepFailed("save_failed", f"saving {', '.join(sorted(data))} into record {self.record_id}: "
                                            f"{exc.detail}") from None
        self.log.add(f"[{step.id}] saved {', '.join(sorted(data))}")

    # ------------------------------------------------------------------ endings
    def _stopped(self, s: Session, wf: Workflow, index: int, status: str) -> str:
        left = wf.steps[index:]
        if status == "deleted":
            return "deleted"
        if status == "interrupted":
            return self._finish(s, "failed", kind="interrupted", step=left[0].id, message=(
                f"interrupted: the server stopped before step {left[0].id!r}; the steps before it stay done"))
        for st in left:
            self.executions.append({"step_id": st.id, "plugin": st.plugin, "status": "cancelled", "started_at": None,
                                    "finished_at": None, "duration_ms": None, "error": None, "problems": None})
        self.log.add(f"cancelled before step {left[0].id!r} ({index} of {len(wf.steps)} step(s) had run)")
        return self._finish(s, "cancelled")

    def _finish(self, s: Session, status: str, *, kind: str | None = None, step: str | None = None,
                message: str | None = None) -> str:
        error = details = None
        if kind is not None:
            error = f"step {step!r} failed: {message}" if step else message
            details = {"kind": kind, "step": step, "message": message}
        ctx, self.held = self.held or self._ctx(s), None
        self._commit(ctx, final=True, status=status, finished_at=utcnow(), error=error, error_details=details)
        self.ended = "deleted" if self.deleted else status
        return self.ended

    def _drop_empty_batch(self, s: Session) -> None:
        try:
            write_lock(s, RUN_WAIT)
            drop_empty_batch(s, self.batch_id)
            s.commit()
        except Exception:
            s.rollback()
            log.exception("could not drop the empty batch of run %s", self.job_id)


def _run(db: Database, project: Project, claimed: Claimed, worker: str, should_stop: Callable[[], bool],
         drain: Drain | None) -> str:
    with Drain(project_root=project.root) if drain is None else nullcontext(drain) as used:
        run = _Run(db, project, claimed, should_stop, used)
        run.log.add(f"started by worker {worker or '?'} (depth {claimed.depth}, trigger {claimed.trigger})")
        return run.go()


def execute(db: Database, project: Project, job_id: str, *, worker: str = "",
            should_stop: Callable[[], bool] = lambda: False, drain: Drain | None = None) -> str | None:
    """Run the waiting run ``job_id`` to its end; returns its final status (``completed``,
    ``failed``, ``cancelled``, or ``deleted`` when it was deleted meanwhile), or None when it was
    no longer waiting (cancelled or taken meanwhile). ``worker`` (who runs it) opens the log;
    ``should_stop()`` true before a step ends the run as interrupted (the server is stopping);
    ``drain``: what the drain this run is part of keeps (default: nothing kept)."""
    claimed = claim(db, project, job_id)
    return None if claimed is None else _run(db, project, claimed, worker, should_stop, drain)


Together = Callable[[Claimed], "list[tuple[str, str]] | None"]
"""``together(claimed)``: run ``claimed`` with the waiting runs that go with it and return each
one's ``(id, final status)``, or None when it runs alone (:mod:`.batch_runs`)."""


def execute_next(db: Database, project: Project, *, worker: str = "", should_stop: Callable[[], bool] = lambda: False,
                 drain: Drain | None = None) -> tuple[str, str] | None:
    """Take the oldest waiting run (``created_at``, then id) and run it alone as :func:`execute`
    does; returns ``(its id, its final status)``, or None when no run was waiting (see
    :func:`execute_runs`)."""
    ran = execute_runs(db, project, worker=worker, should_stop=should_stop, drain=drain)
    return ran[0] if ran else None


def execute_runs(db: Database, project: Project, *, worker: str = "", should_stop: Callable[[], bool] = lambda: False,
                 drain: Drain | None = None, together: Together | None = None) -> list[tuple[str, str]]:
    """Take the oldest waiting run (``created_at``, then id) and run it as :func:`execute` does,
    or, when ``together`` takes it, with the runs that go with it; returns ``(id, final status)``
    of each run, or ``[]`` when no run was waiting. The run the previous run of a chaining
    ``drain`` claimed comes first. A run of a group that failed rolls the group back (drain.py):
    the oldest waiting run is then taken again, and the statuses returned for the group's runs
    before it do not hold (they run again)."""
    while True:
        claimed = drain.next if drain is not None else None
        if drain is not None:
            drain.next = None
        claimed = claimed or claim(db, project, None)
        if claimed is None:
            return []
        try:
            if together is not None and (ran := together(claimed)) is not None:
                return ran
            return [(claimed.id, _run(db, project, claimed, worker, should_stop, drain))]
        except Regroup as broken:
            assert drain is not None
            drain.break_group(broken.job_id)
