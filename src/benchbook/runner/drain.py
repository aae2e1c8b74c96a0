"""What one drain of the run queue keeps from one run to the next (:class:`Drain`), claiming a
waiting run (:func:`claim`), and the group commit of quick runs.

**Group commit** (issue #11: runs/s; ``docs/decisions.md`` *Workflows*). A worker's drain
(``group_seconds`` > 0) may run the next waiting run in the transaction of the run before it
instead of committing between them, while (all of these):

- the next run's workflow has only built-in steps (run in process: nothing outside the
  database happens, and no plugin process runs while the write lock is held);
- the group is younger than ``group_seconds`` (:data:`GROUP_SECONDS`, 50 ms: how long other
  writers may wait for the lock on top of a run) and has fewer than :data:`GROUP_RUNS` runs;
- the run before it was not one that had to run alone (below).

One commit then ends the whole group: the runs' writes, their history batches and figures, the
runs they trigger and their final states, all or nothing. Each run stays its own history batch
and its own state; a crash loses the group's uncommitted runs, which are then still
``pending`` (their claim was in the group's transaction), except the group's first run,
claimed by the commit before, which the next worker marks interrupted as any run left
``running``. A run of a group that fails (a step fails, or anything unexpected) rolls the whole
group back (:class:`Regroup`): the group's first run is handed back to ``pending``, the failed
run is remembered as one that runs alone, and the drain goes on from the oldest waiting run, so
every run ends exactly as if it had run on its own. A drain stopping with a group open commits
it first.
"""
from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from sqlalchemy import Table, bindparam, delete, exists, insert, select, update
from sqlalchemy.orm import Session

from benchbook.domain.ids import new_id
from benchbook.persistence.db import Database, write_lock
from benchbook.persistence.tables import AuditBatch, AuditEntry, Job, utcnow
from benchbook.runner import workflows
from benchbook.runner.plugin_host import pool, processes, scratch
from benchbook.settings.config import Project
from benchbook.settings.limits import DEFAULT, Limits

log = logging.getLogger("benchbook.runs")

RUN_WAIT = 300.0
"""Seconds a run's write waits for the database (an import in another process may hold it for
a minute): a run should not fail because someone else is writing; requests wait less."""
GROUP_SECONDS = 0.05
"""How long a worker's group of runs may hold one transaction (see the module docstring)."""
GROUP_RUNS = 100
"""At most this many runs in one group."""
_JOBS: Table = Job.__table__  # type: ignore[assignment]
_BATCHES: Table = AuditBatch.__table__  # type: ignore[assignment]
_OLDEST = (select(_JOBS.c.id).where(_JOBS.c.status == "pending").order_by(_JOBS.c.created_at, _JOBS.c.id)
           .limit(1).scalar_subquery())


def _claiming(picked: Any) -> Any:
    return (update(_JOBS).where(_JOBS.c.id == picked, _JOBS.c.status == "pending")
            .values(status="running", started_at=bindparam("started"))
            .returning(_JOBS.c.id, _JOBS.c.workflow_name, _JOBS.c.record_id, _JOBS.c.depth, _JOBS.c.trigger))


_CLAIM_NEXT = _claiming(_OLDEST)
_CLAIM_ONE = _claiming(bindparam("job_id"))
_OPEN_BATCH = insert(_BATCHES).values(kind="workflow")  # id, label, ref, actor, created_at given


@dataclass(frozen=True)
class Claimed:
    """A run just moved from ``pending`` to ``running``, with its history batch opened."""

    id: str
    workflow_name: str
    record_id: str
    depth: int
    trigger: str
    batch_id: str


@dataclass
class _Group:
    """An open group: its session (holding the write lock), its first run (claimed by the
    commit before the group), when it started and how many runs it holds."""

    session: Session
    first: Claimed
    started: float
    runs: int = 1


def claim(db: Database, project: Project, job_id: str | None) -> Claimed | None:
    """Move run ``job_id`` (None: the oldest waiting run) from ``pending`` to ``running`` and
    open its history batch, in one commit: one UPDATE … RETURNING, so taking the next run costs
    no separate look at the queue. None when it (or any run) was not waiting."""
    with db.session() as s, s.begin():
        write_lock(s, RUN_WAIT)
        return claim_in(s, project, job_id)


def claim_in(s: Session, project: Project, job_id: str | None) -> Claimed | None:
    """:func:`claim` in ``s``'s transaction, which holds the write lock (committed by the caller)."""
    row = s.execute(_CLAIM_NEXT if job_id is None else _CLAIM_ONE,
                    {"job_id": job_id, "started": utcnow()}).first()
    if row is None:
        return None
    batch_id = new_id()  # entries.open_batch's row, written without the ORM (a run's claim is per run)
    s.execute(_OPEN_BATCH, {"id": batch_id, "label": row.workflow_name, "ref": row.id, "actor": project.actor,
                            "created_at": utcnow()})
    return Claimed(row.id, row.workflow_name, row.record_id, row.depth, row.trigger, batch_id)


def drop_empty_batch(s: Session, batch_id: str) -> None:
    """Delete the run's history batch ``batch_id`` if it holds no entry (a run that wrote nothing
    leaves no batch), in ``s``'s transaction."""
    s.execute(delete(AuditBatch).where(AuditBatch.id == batch_id, ~exists().where(AuditEntry.batch_id == batch_id)))


class Drain:
    """What one drain of the run queue keeps from one run to the next, so that a run costs
    little more than the record writes it makes (issue #11: ``bench/automation.py``,
    ``docs/performance.md``): the workflows read and checked (:class:`~.workflows.Loaded`),
    and for at most ``recheck`` seconds each the plugins as registered, where a
    ``record.<field>`` input lives and collection time zones (a change to them reaches the
    drain within that time), plus one scratch folder the in-process steps reuse (removed with
    the drain) and the warm tier-1 plugin processes (:attr:`pool`, :mod:`.plugins.pool`: made on
    first use with ``limits``' ``plugin_warm_runs`` and ``plugin_idle_seconds``, its processes
    ended with the drain). Use ``with Drain(project_root=project.root) as drain:``; not shared between
    threads. That folder is made in this process's scratch area of the project
    (:mod:`.plugins.scratch`; ``project_root`` None: the user's cache folder's); before it is
    made, what processes that are gone left there is cleared
    (:func:`.plugins.processes.clear_leftovers`: their plugins' processes, their scratch areas).

    ``chain`` (the worker's drains): a run's final commit also claims the next waiting run
    (:attr:`next`), unless the worker is stopping or automation is paused, which saves the
    claim its own commit; a run claimed so that the drain does not run (it stopped or paused
    in between) is handed back to ``pending`` when the drain closes (``cancelled`` when it was
    asked to stop meanwhile, as a waiting run is). ``group_seconds`` > 0 (with ``chain``):
    quick runs share commits (the module docstring)."""

    def __init__(self, recheck: float = workflows.RECHECK, *, chain: Database | None = None,
                 group_seconds: float = 0.0, project_root: Path | None = None, limits: Limits = DEFAULT) -> None:
        self.recheck = recheck
        self.project_root = project_root
        self.limits = limits
        self.workflows = workflows.Loaded(recheck)
        self.chain = chain
        self.group_seconds = group_seconds if chain is not None else 0.0
        self.next: Claimed | None = None
        self.group: _Group | None = None
        self.solo: set[str] = set()  # runs that failed in a group: they run alone
        self.groups = 0  # groups rolled back (tests, benchmarks)
        self._pace: dict[str, float] = {}  # workflow → seconds a run of it took lately (batch_runs.py)
        self._kept: dict[tuple[str, ...], tuple[float, Any]] = {}
        self._scratch: Path | None = None
        self._pool: pool.Pool | None = None

    @property
    def pool(self) -> pool.Pool:
        """The drain's warm tier-1 plugin processes (made on first use, see the class docstring)."""
        if self._pool is None:
            self._pool = pool.Pool(project_root=self.project_root, warm_runs=self.limits.plugin_warm_runs,
                                   idle_seconds=self.limits.plugin_idle_seconds)
        return self._pool

    def kept(self, key: tuple[str, ...], compute: Callable[[], Any]) -> Any:
        """``compute()``, or what it returned for ``key`` less than ``recheck`` seconds ago (an
        exception it raises is not kept)."""
        now = time.monotonic()
        found = self._kept.get(key)
        if found is not None and now - found[0] < self.recheck:
            return found[1]
        value = compute()
        self._kept[key] = (now, value)
        return value

    def paced(self, workflow_name: str, seconds: float, runs: int) -> None:
        """``runs`` runs of ``workflow_name`` took ``seconds`` of wall clock from their claim to
        their end: folded into :meth:`pace` (each measure weighs half)."""
        if runs > 0:
            each = seconds / runs
            before = self._pace.get(workflow_name)
            self._pace[workflow_name] = each if before is None else (before + each) / 2

    def pace(self, workflow_name: str) -> float | None:
        """Seconds a run of ``workflow_name`` took lately in this drain (None before the first)."""
        return self._pace.get(workflow_name)

    @property
    def scratch(self) -> Path:
        """The drain's scratch folder (made on first use, see the class docstring). Raises
        ``OSError`` when it cannot be made."""
        if self._scratch is None:
            try:
                processes.clear_leftovers(self.project_root)
            except OSError:  # a leftover that cannot be removed does not stop the runs (doctor reports it)
                log.exception("could not clear what stopped benchbook processes left behind")
            self._scratch = scratch.area(scratch.root_of(self.project_root)).make("drain")
        return self._scratch

    # ------------------------------------------------------------------ group commit
    def keeps_open(self, s: Session, run: Claimed, claimed: Claimed | None, groupable: Callable[[str], bool]) -> bool:
        """Whether the final commit of ``run`` (in ``s``, having just claimed ``claimed``) is
        left open so that ``claimed`` runs in the same transaction; records the open group when
        it is. ``groupable(workflow_name)``: only built-in steps (both runs must be: the first
        run of a group rolled back runs again, so it may not have done anything outside the
        database)."""
        group = self.group
        if (not self.group_seconds or claimed is None or run.id in self.solo or claimed.id in self.solo
                or (group is not None and (group.runs >= GROUP_RUNS
                                           or time.monotonic() - group.started >= self.group_seconds))
                or not groupable(claimed.workflow_name) or (group is None and not groupable(run.workflow_name))):
            return False
        if group is None:
            self.group = _Group(session=s, first=run, started=time.monotonic())
        else:
            group.runs += 1
        return True

    def committed(self) -> None:
        """The open group (if any) was committed: the next run starts afresh."""
        self.group = None

    def break_group(self, failed: str) -> None:
        """Roll the open group back after its run ``failed`` failed (:class:`Regroup`): hand
        its first run back to ``pending`` and have ``failed`` run alone from now on."""
        group, self.group, self.next = self.group, None, None
        self.solo.add(failed)
        self.groups += 1
        if group is None:
            return
        try:
            group.session.rollback()
        finally:
            group.session.close()
        self._hand_back(group.first)  # as a run claimed and not run: its next claim opens a new batch

    # ------------------------------------------------------------------ the end
    def close(self) -> None:
        """Commit a group left open, hand a run claimed and not run back (``pending``), end
        the warm plugin processes and remove the scratch folder."""
        group, self.group = self.group, None
        try:
            if group is not None:
                try:
                    group.session.commit()
                finally:
                    group.session.close()
            claimed, self.next = self.next, None
            if claimed is not None:
                self._hand_back(claimed)
        except Exception:  # what stays running is marked interrupted by the next worker to take the lease
            log.exception("could not end the drain's last runs cleanly")
        finally:
            warm, self._pool = self._pool, None
            if warm is not None:
                warm.close()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    def _hand_back(self, claimed: Claimed) -> None:
        if self.chain is None:
            return
        with self.chain.session() as s, s.begin():
            write_lock(s, RUN_WAIT)
            # asked to stop meanwhile (POST /automation/stop, a cancel): it was waiting, so cancelled
            s.execute(update(Job).where(Job.id == claimed.id, Job.status == "running", Job.cancel_requested)
                      .values(status="cancelled", finished_at=utcnow(), log="cancelled before it started"))
            s.execute(update(Job).where(Job.id == claimed.id, Job.status == "running")
                      .values(status="pending", started_at=None))
            drop_empty_batch(s, claimed.batch_id)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self.group is not None:  # an error ends the drain: nothing half-done is kept
            failed = self.group.first.id
            self.break_group(failed)
            self.solo.discard(failed)
        self.close()
