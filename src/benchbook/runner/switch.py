"""The automation switch (docs/automation.md *The switch*; OpenAPI ``AutomationStatusResponse``).

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

from sqlalchemy import func, literal, select, union_all, update
from sqlalchemy.orm import Session

from benchbook.persistence.tables import Job, utcnow
from benchbook.runner import queue
from benchbook.settings.config import read_paused, write_paused

BATCH_SCAN = 20_000
"""Most finished runs looked at to find where the current stretch of work began."""


def _reading(session: Session) -> tuple[dict[str, Any], list[Any]]:
    """The waiting and running runs (count and earliest ``created_at`` per status) and the most
    recently finished runs (``status, created_at, finished_at``, newest first), read in ONE
    statement: one statement sees one snapshot on SQLite and PostgreSQL alike, where two reads
    would let a run that finished between them count as both waiting and done (the bar's total
    then overshot: 354 of 344)."""
    active = (select(Job.status, func.count().label("n"), func.min(Job.created_at).label("created_at"),
                     literal(None, Job.finished_at.type).label("finished_at"))
              .where(Job.status.in_(queue.ACTIVE)).group_by(Job.status))
    busy = select(Job.id).where(Job.status.in_(queue.ACTIVE)).exists()  # idle: no batch, nothing to scan
    recent = (select(Job.status, literal(1).label("n"), Job.created_at, Job.finished_at)
              .where(Job.finished_at.is_not(None), Job.status.in_(queue.FINISHED), busy)
              .order_by(Job.finished_at.desc()).limit(BATCH_SCAN).subquery())
    rows = session.execute(union_all(active, select(recent))).all()
    waiting = [r for r in rows if r.finished_at is None]
    reading: dict[str, Any] = {r.status: int(r.n) for r in waiting}
    reading["start"] = min((r.created_at for r in waiting), default=None)
    return reading, sorted((r for r in rows if r.finished_at is not None), key=lambda r: r.finished_at, reverse=True)


def _batch(reading: dict[str, Any], finished: list[Any]) -> dict[str, Any] | None:
    pending, running, start = reading.get("pending", 0), reading.get("running", 0), reading["start"]
    if (not pending and not running) or start is None:
        return None
    counted = {"completed": 0, "failed": 0, "cancelled": 0}
    for status, _, created_at, finished_at in finished:
        if finished_at < start:
            break
        counted[status] += 1
        start = min(start, created_at)
    return {"started_at": start.isoformat(), "pending": pending + running, "succeeded": counted["completed"],
            "failed": counted["failed"], "cancelled": counted["cancelled"]}


def status(session: Session, project_root: Path, *, cancelled: int = 0) -> dict[str, Any]:
    """AutomationStatusResponse: ``paused``, ``pending`` and ``running`` runs, ``cancelled`` (by
    the call that answers it), ``batch`` ``{started_at, pending (waiting or running), succeeded,
    failed, cancelled}`` or null; the counts and the batch come from one snapshot (:func:`_reading`)."""
    reading, finished = _reading(session)
    return {"paused": read_paused(project_root), "pending": reading.get("pending", 0),
            "running": reading.get("running", 0), "cancelled": cancelled, "batch": _batch(reading, finished)}


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
