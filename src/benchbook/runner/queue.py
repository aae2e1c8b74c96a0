"""The run queue: ``jobs`` rows, and the lease that lets one worker per project drain them.

A run is a :class:`~benchbook.persistence.tables.Job` row, added with :func:`enqueue` in the
transaction of whatever caused it (a record change, a manual run, a rerun), so it exists exactly
when its cause commits. Runs are taken oldest first (:func:`next_pending`).

Draining is single-file across every process that opens the database (the server, a second
server on the same file, command-line sessions): a worker drains only while it holds the one
``worker_leases`` row (:func:`acquire`), which it renews well before ``expires_at``; a lease
whose holder stopped renewing (a crash) may be taken over once it expired. Whoever takes a lease
it did not hold marks the runs left ``running`` as interrupted (:func:`recover`): no worker holds
them any more.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from benchbook.domain.ids import new_id
from benchbook.persistence.tables import Job, WorkerLease, utcnow

LEASE = "runs"
"""The name of the one lease row of the run queue."""
ACTIVE = ("pending", "running")
FINISHED = ("completed", "failed", "cancelled")
STATUSES = ("pending", "running", "completed", "failed", "cancelled")
TRIGGERS = ("record_created", "record_updated", "manual")
MAX_DEPTH = 10
"""Workflow-triggered-by-workflow hops a chain may take (docs/limits.md *Runs and the plugin wire*)."""


def enqueue(session: Session, *, workflow: str, record_id: str, schema_name: str, trigger: str, depth: int = 0,
            trigger_detail: dict[str, Any] | None = None, inputs: dict[str, Any] | None = None) -> Job:
    """Add a ``pending`` run to ``session`` (committed with the caller's transaction)."""
    job = Job(id=new_id(), workflow_name=workflow, record_id=record_id, schema_name=schema_name, trigger=trigger,
              status="pending", depth=depth, trigger_detail=trigger_detail, inputs=inputs or {},
              created_at=utcnow(), problems=0, cancel_requested=False)
    session.add(job)
    return job


def next_pending(session: Session) -> str | None:
    """The id of the oldest waiting run, or None."""
    return session.scalar(select(Job.id).where(Job.status == "pending").order_by(Job.created_at, Job.id).limit(1))


def counts(session: Session) -> dict[str, int]:
    """How many runs are in each status (statuses without runs are 0)."""
    found = dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
    return {status: int(found.get(status, 0)) for status in STATUSES}


def active_ids(session: Session) -> list[str]:
    """Ids of the runs waiting or running now."""
    return list(session.scalars(select(Job.id).where(Job.status.in_(ACTIVE))))


# ---------------------------------------------------------------------------- the lease
def acquire(engine: Engine, holder: str, ttl: float) -> tuple[bool, bool]:
    """Take or renew the lease for ``holder`` until ``ttl`` seconds from now. Returns ``(held,
    fresh)``: ``held`` when ``holder`` has it now, ``fresh`` when it did not have it before (it
    was free or expired), so runs left ``running`` are nobody's."""
    now = utcnow()
    until = now + timedelta(seconds=ttl)
    with Session(engine) as s, s.begin():
        mine = s.execute(update(WorkerLease).where(WorkerLease.name == LEASE, WorkerLease.holder == holder)
                         .values(expires_at=until))
        if mine.rowcount:  # type: ignore[attr-defined]
            return True, False
        taken = s.execute(update(WorkerLease).where(WorkerLease.name == LEASE, WorkerLease.expires_at < now)
                          .values(holder=holder, expires_at=until))
        if taken.rowcount:  # type: ignore[attr-defined]
            return True, True
        if s.scalar(select(WorkerLease.name).where(WorkerLease.name == LEASE)) is not None:
            return False, False
    try:
        with Session(engine) as s, s.begin():
            s.add(WorkerLease(name=LEASE, holder=holder, expires_at=until))
    except IntegrityError:  # another process inserted it first
        return False, False
    return True, True


def release(engine: Engine, holder: str) -> None:
    """Give the lease up if ``holder`` has it."""
    with Session(engine) as s, s.begin():
        s.execute(delete(WorkerLease).where(WorkerLease.name == LEASE, WorkerLease.holder == holder))


def live_holder(engine: Engine) -> str | None:
    """Who holds an unexpired lease now, or None."""
    with Session(engine) as s:
        row = s.get(WorkerLease, LEASE)
        return row.holder if row is not None and row.expires_at >= utcnow() else None


def recover(session: Session) -> list[str]:
    """Mark every ``running`` run ``failed`` with error kind ``interrupted`` (called by whoever
    just took the lease over: the process that ran them is gone). Record changes they made stay.
    Returns their ids."""
    now = utcnow()
    ids = []
    for job in session.scalars(select(Job).where(Job.status == "running")):
        done = [e for e in job.step_executions or [] if e.get("status") in ("completed", "skipped")]
        message = (f"interrupted: the process running this run stopped before it finished ({len(done)} step(s) "
                   "had finished); record changes it had already made stay")
        job.status, job.finished_at, job.error = "failed", now, message
        job.error_details = {"kind": "interrupted", "step": None, "message": message}
        ids.append(job.id)
    return ids
