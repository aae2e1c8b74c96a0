"""The automation switch (spec *Automation switch*, AutomationStatusResponse).

``paused`` lives in the project's ``benchbook.toml`` (``[automation] paused``), so it survives a
restart and applies to the server and every command-line session alike. Stopping pauses,
cancels every waiting run and asks the running one to stop before its next step; while paused,
triggers queue nothing, the worker takes nothing, manual runs are refused (409) and reruns too
(422). Resuming lets triggers fire and the worker drain again.

``batch`` describes the current stretch of work — from when the queue last stopped being empty —
derived from the runs themselves, so every process reports the same: a finished run belongs to
the stretch when it finished after the stretch began, and then the stretch began no later than
that run was queued. It is null when nothing waits or runs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from benchbook.config import read_paused, write_paused
from benchbook.persistence.tables import Job, utcnow
from benchbook.runner import queue

BATCH_SCAN = 20_000
"""Most finished runs looked at to find where the current stretch of work began."""


def _batch(session: Session, pending: int, running: int) -> dict[str, Any] | None:
    if not pending and not running:
        return None
    start = session.scalar(select(func.min(Job.created_at)).where(Job.status.in_(queue.ACTIVE)))
    if start is None:
        return None
    counted = {"completed": 0, "failed": 0, "cancelled": 0}
    rows = session.execute(select(Job.status, Job.created_at, Job.finished_at)
                           .where(Job.finished_at.is_not(None), Job.status.in_(queue.FINISHED))
                           .order_by(Job.finished_at.desc()).limit(BATCH_SCAN))
    for status, created_at, finished_at in rows:
        if finished_at is None or finished_at < start:
            break
        counted[status] += 1
        start = min(start, created_at)
    return {"started_at": start.isoformat(), "pending": pending + running, "succeeded": counted["completed"],
            "failed": counted["failed"], "cancelled": counted["cancelled"]}


def status(session: Session, project_root: Path, *, cancelled: int = 0) -> dict[str, Any]:
    """AutomationStatusResponse: ``paused``, ``pending`` and ``running`` runs, ``cancelled`` (by
    the call that answers it), ``batch`` ``{started_at, pending (waiting or running), succeeded,
    failed, cancelled}`` or null."""
    counts = queue.counts(session)
    return {"paused": read_paused(project_root), "pending": counts["pending"], "running": counts["running"],
            "cancelled": cancelled, "batch": _batch(session, counts["pending"], counts["running"])}


def cancel_waiting(session: Session, *, where: Any = None, reason: str) -> int:
    """Cancel the waiting runs (matching ``where``) and ask the running ones to stop before their
    next step; returns how many waiting runs were cancelled."""
    now = utcnow()
    conds = [where] if where is not None else []
    done = session.execute(update(Job).where(Job.status == "pending", *conds)
                           .values(status="cancelled", finished_at=now, log=reason))
    session.execute(update(Job).where(Job.status == "running", *conds).values(cancel_requested=True))
    return int(done.rowcount)  # type: ignore[attr-defined]


def stop(session: Session, project_root: Path) -> dict[str, Any]:
    """Pause automation, cancel every waiting run, stop the running one before its next step."""
    write_paused(project_root, True)
    cancelled = cancel_waiting(session, reason="cancelled by POST /automation/stop before it started")
    session.flush()
    return status(session, project_root, cancelled=cancelled)


def resume(session: Session, project_root: Path) -> dict[str, Any]:
    """Resume automation: triggers fire and waiting runs are taken again."""
    write_paused(project_root, False)
    return status(session, project_root)
