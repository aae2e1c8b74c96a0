"""Runs started by hand (``POST /workflows/{name}/run``, ``POST /workflows/{name}/run-many``) and
the refusal of work while automation is paused."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict, Invalid, NotFound
from benchbook.domain.records.rows import find_record
from benchbook.persistence.tables import Job, Record, Schema
from benchbook.runner import queue, workflows
from benchbook.runner.shapes import SkippedJob, WorkflowRunManyResponse
from benchbook.runner.workflows import Workflow
from benchbook.settings.config import read_paused


def refuse_while_paused(project_root: Path, what: str, *, invalid: bool = False) -> None:
    """Raise ``Conflict`` (409; ``invalid``: ``Invalid``, 422) naming ``what`` while automation
    is paused."""
    if read_paused(project_root):
        message = f"automation is paused: {what} is refused until it is resumed (POST /automation/resume)"
        raise Invalid(message) if invalid else Conflict(message)


def manual_workflow(session: Session, project_root: Path, name: str) -> Workflow:
    """The workflow ``name``, checked to be runnable by hand. Raises ``NotFound``, ``Invalid``."""
    wf = workflows.find(session, project_root, name)
    if wf.problems:
        raise Invalid(f"workflow {name!r} has {len(wf.problems)} problem(s) and cannot run: "
                      + "; ".join(p["msg"] for p in wf.problems[:3]))
    if "manual" not in wf.triggers:
        raise Invalid(f"workflow {name!r} cannot be run by hand: its triggers do not include manual")
    return wf


def _record_for(session: Session, wf: Workflow, record_id: str) -> Record:
    rec = find_record(session, record_id)
    schema = session.get(Schema, rec.schema_id)
    if schema is None or schema.name != wf.record_schema:
        raise Invalid(f"record {rec.id} is a {schema.name if schema else '?'!r} record; workflow {wf.name!r} runs "
                      f"for {wf.record_schema!r} records")
    return rec


def run_manual(session: Session, project_root: Path, name: str, record_id: str) -> Job:
    """Queue a manual run of workflow ``name`` for ``record_id``. Raises ``Conflict`` while
    paused, ``NotFound`` (workflow, record), ``Invalid`` (workflow not runnable by hand, or for
    another schema)."""
    refuse_while_paused(project_root, "a manual run")
    wf = manual_workflow(session, project_root, name)
    rec = _record_for(session, wf, record_id)
    return queue.enqueue(session, workflow=wf.name, record_id=rec.id, schema_name=wf.record_schema, trigger="manual")


def run_many(session: Session, project_root: Path, name: str, record_ids: list[str]) -> WorkflowRunManyResponse:
    """Queue one manual run of ``name`` per record of ``record_ids`` (each once); those that
    cannot run are skipped with a reason. Returns ``{started, job_ids, skipped}``."""
    refuse_while_paused(project_root, "a manual run")
    wf = manual_workflow(session, project_root, name)
    started: list[str] = []
    skipped: list[SkippedJob] = []
    seen: set[str] = set()
    for given in record_ids:
        try:
            rec = _record_for(session, wf, given)
        except (NotFound, Invalid) as exc:
            skipped.append({"id": given, "reason": exc.detail})
            continue
        if rec.id in seen:
            skipped.append({"id": given, "reason": f"record {rec.id} is listed more than once"})
            continue
        seen.add(rec.id)
        job = queue.enqueue(session, workflow=wf.name, record_id=rec.id, schema_name=wf.record_schema,
                            trigger="manual")
        started.append(job.id)
    return {"started": len(started), "job_ids": started, "skipped": skipped}
