"""Runs as the API shows and handles them (docs/automation.md *The run list*): WorkflowJobResponse,
the run list with its filters, the run filter tree (fields of :data:`FIELDS`, ``GET
/jobs/filter-fields``; the tree form is the record and history filters'), cancel, delete and
rerun, one by one and by ids or filter (at most :data:`MAX_MATCHED` runs). Failure groups are
:mod:`benchbook.runner.failure_groups`; the answers' types are :mod:`benchbook.runner.shapes`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, delete, exists, func, or_, select, true, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session, object_session

from benchbook.domain.errors import Conflict, Invalid, NotFound, error_entry
from benchbook.domain.history.entries import parse_since
from benchbook.domain.history.filters import compile_tree, read_leaf
from benchbook.domain.ids import resolve_prefix
from benchbook.domain.records.search import like_pattern
from benchbook.persistence.tables import Job, Record, utcnow
from benchbook.runner import manual_runs, queue, workflows
from benchbook.runner.shapes import JobRerunResponse, SkippedJob, WorkflowJobResponse

MAX_MATCHED = 1000
"""Most runs one rerun or delete by filter acts on (docs/limits.md *Runs and the plugin wire*)."""
SORTABLE = ("workflow_name", "status", "trigger", "schema_name", "created_at")

_TEXT = ["eq", "ne", "in", "contains"]
_CHOICE = ["eq", "ne", "in"]
_NUMBER = ["eq", "ne", "gt", "gte", "lt", "lte"]
_TIME = ["gt", "gte", "lt", "lte", "is_null"]
FIELDS: list[dict[str, Any]] = [
    {"name": "workflow_name", "label": "Workflow", "description": "The workflow's name.", "type": "string",
     "operators": _TEXT, "choices": None},
    {"name": "status", "label": "Status", "description": "Where the run is.", "type": "string",
     "operators": _CHOICE, "choices": list(queue.STATUSES)},
    {"name": "trigger", "label": "Trigger", "description": "What started the run.", "type": "string",
     "operators": _CHOICE, "choices": list(queue.TRIGGERS)},
    {"name": "schema_name", "label": "Schema", "description": "Schema of the record the run is for.",
     "type": "string", "operators": _TEXT, "choices": None},
    {"name": "record_id", "label": "Record", "description": "Id of the record the run is for.", "type": "string",
     "operators": _CHOICE, "choices": None},
    {"name": "error", "label": "Error", "description": "Why the run failed.", "type": "string",
     "operators": ["contains", "is_null"], "choices": None},
    {"name": "error_kind", "label": "Error kind", "description": "Kind of the failure (timeout, interrupted, …).",
     "type": "string", "operators": [*_CHOICE, "is_null"], "choices": None},
    {"name": "failed_step", "label": "Failed step", "description": "Id of the step that failed.",
     "type": "string", "operators": [*_CHOICE, "is_null"], "choices": None},
    {"name": "depth", "label": "Depth", "description": "Hops from a run started by a person or an edit.",
     "type": "integer", "operators": _NUMBER, "choices": None},
    {"name": "problems", "label": "Problems", "description": "Problems its steps reported.", "type": "integer",
     "operators": _NUMBER, "choices": None},
    {"name": "created_at", "label": "Queued", "description": "When the run was queued (zone-less = UTC).",
     "type": "datetime", "operators": _TIME[:-1], "choices": None},
    {"name": "started_at", "label": "Started", "description": "When the run started.", "type": "datetime",
     "operators": _TIME, "choices": None},
    {"name": "finished_at", "label": "Finished", "description": "When the run ended.", "type": "datetime",
     "operators": _TIME, "choices": None},
]
_BY_NAME = {f["name"]: f for f in FIELDS}


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def summary(job: Job) -> str:
    """How the run reads in a list: ``waiting``, ``running``, ``completed``, ``completed with N
    problems`` (never a plain success), ``failed``, ``cancelled``."""
    if job.status == "pending":
        return "waiting"
    if job.status == "completed" and job.problems:
        return f"completed with {job.problems} problem{'s' if job.problems != 1 else ''}"
    if job.status == "running" and job.cancel_requested:
        return "running (stops before its next step)"
    return job.status


def record_names(session: Session, jobs: list[Job]) -> dict[str, str | None]:
    """The natural name of each live record ``jobs`` ran on, by record id, in one query (a
    record deleted or gone is absent)."""
    ids = {j.record_id for j in jobs if j.record_id}
    if not ids:
        return {}
    rows = session.execute(select(Record.id, Record.natural_name)
                           .where(Record.id.in_(ids), Record.deleted_at.is_(None)))
    return {record_id: name for record_id, name in rows}


def job_response(job: Job, names: dict[str, str | None] | None = None) -> WorkflowJobResponse:
    """WorkflowJobResponse (plus ``problems``, ``summary`` and ``cancel_requested``), with
    ``record_name``: the natural name of the run's record (None when it is deleted or gone),
    from ``names`` (:func:`record_names`) or read now through the job's session."""
    if names is None:
        held = object_session(job)
        names = record_names(held, [job]) if held is not None else {}
    return {"id": job.id, "workflow_name": job.workflow_name, "record_id": job.record_id,
            "record_name": names.get(job.record_id), "schema_name": job.schema_name, "trigger": job.trigger,
            "status": job.status, "error": job.error,
            "error_details": job.error_details, "log": job.log, "step_executions": job.step_executions,
            "affected_records": job.affected_records, "created_at": _iso(job.created_at),
            "started_at": _iso(job.started_at), "finished_at": _iso(job.finished_at), "depth": job.depth,
            "trigger_detail": job.trigger_detail, "problems": job.problems, "summary": summary(job),
            "cancel_requested": job.cancel_requested}


def find_job(session: Session, job_id: str) -> Job:
    """The run with id (or unique prefix) ``job_id``. Raises ``NotFound``, ``Invalid``."""
    job = session.get(Job, resolve_prefix(session, Job, job_id, what="run"))
    assert job is not None
    return job


# ---------------------------------------------------------------------------- the filter tree
def column_of(name: str) -> Any:
    """The column (or JSON value) a run filter field ``name`` of :data:`FIELDS` reads."""
    if name == "error_kind":
        return Job.error_details["kind"].as_string()
    if name == "failed_step":
        return Job.error_details["step"].as_string()
    return getattr(Job, name)


def _leaf(node: dict[str, Any], loc: list[Any]) -> ColumnElement[bool]:
    leaf = read_leaf(node, loc, _BY_NAME, column_of, "GET /jobs/filter-fields")
    name, op, value, col, bad = leaf.spec["name"], leaf.op, leaf.value, leaf.column, leaf.bad
    if op == "is_null":
        return leaf.null_test()
    kind = leaf.spec["type"]
    if op == "in":
        values = leaf.strings()
        return col.in_([v.upper() for v in values] if name == "record_id" else values)  # type: ignore[no-any-return]
    if kind == "integer":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise bad("value must be a number")
    elif kind == "datetime":
        try:
            value = parse_since(value) if isinstance(value, str) else None
        except Invalid:
            value = None
        if value is None:
            raise bad("value must be an ISO 8601 date or date-time")
    elif not isinstance(value, str):
        raise bad("value must be a string")
    if op == "contains":
        return col.ilike(like_pattern(str(value)), escape="\\")  # type: ignore[no-any-return]
    if name == "record_id" and isinstance(value, str):
        value = value.upper()
    compare: dict[str, Any] = {"eq": lambda: col == value, "ne": lambda: or_(col != value, col.is_(None)),
                               "gt": lambda: col > value, "gte": lambda: col >= value, "lt": lambda: col < value,
                               "lte": lambda: col <= value}
    return compare[str(op)]()  # type: ignore[no-any-return]


def compile_run_filter(tree: Any, loc: list[Any] | None = None) -> ColumnElement[bool]:
    """SQL condition over ``jobs`` for a run filter tree (dict, or JSON text from a query
    parameter). Raises ``Invalid``."""
    loc = loc or ["query", "filter"]
    if isinstance(tree, str):
        try:
            tree = json.loads(tree)
        except (ValueError, RecursionError) as exc:
            msg = f"invalid JSON: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else "nested too deep"
            raise Invalid(f"filter: {msg}", [error_entry(loc, msg, "json_invalid", tree[:200])]) from None
    return compile_tree(tree, loc, _leaf)


def _affected(dialect: str, key: str, value: str) -> ColumnElement[bool]:
    """Runs whose ``affected_records`` hold an entry with ``key`` = ``value``."""
    if dialect == "postgresql":
        return type_coerce(Job.affected_records, JSONB).contains([{key: value}])
    each = func.json_each(Job.affected_records).table_valued("value")
    return exists(select(1).select_from(each).where(func.json_extract(each.c.value, f"$.{key}") == value))


def conditions(session: Session, *, affected_record_id: str | None = None, affected_schema: str | None = None,
               filter: Any = None, record_id: str | None = None, search: str | None = None,
               status: str | None = None, trigger: str | None = None,
               workflow: str | None = None) -> list[ColumnElement[bool]]:
    """Conditions for the run list filters (OpenAPI: ``GET /jobs``; docs/automation.md *The run
    list*). Raises ``Invalid``."""
    dialect = session.get_bind().dialect.name
    conds: list[ColumnElement[bool]] = []
    if affected_record_id:
        conds.append(_affected(dialect, "record_id", affected_record_id.strip().upper()))
    if affected_schema:
        conds.append(_affected(dialect, "schema_name", affected_schema))
    if filter:
        conds.append(compile_run_filter(filter))
    if record_id:
        conds.append(Job.record_id == record_id.strip().upper())
    if search:
        pattern = like_pattern(search)
        conds.append(or_(Job.workflow_name.ilike(pattern, escape="\\"), Job.error.ilike(pattern, escape="\\")))
    if status:
        conds.append(Job.status == status)
    if trigger:
        conds.append(Job.trigger == trigger)
    if workflow:
        conds.append(Job.workflow_name == workflow)
    return conds


def _order(sort: str | None) -> list[Any]:
    if not sort:
        return [Job.created_at.desc(), Job.id.desc()]
    column, _, direction = sort.partition(":")
    if column not in SORTABLE or direction not in ("", "asc", "desc"):
        raise Invalid(f"sort: {sort!r} is not column[:asc|desc] over {', '.join(SORTABLE)}",
                      [error_entry(["query", "sort"], "unknown sort", "sort", sort)])
    col = getattr(Job, column)
    first = col.desc() if direction == "desc" else col.asc()
    return [first, Job.created_at.desc(), Job.id.desc()]


def list_jobs(session: Session, conds: list[ColumnElement[bool]], *, sort: str | None, limit: int,
              offset: int) -> list[WorkflowJobResponse]:
    """A page of runs matching ``conds``, newest first unless ``sort`` says otherwise."""
    rows = list(session.scalars(select(Job).where(*conds).order_by(*_order(sort)).limit(limit).offset(offset)))
    names = record_names(session, rows)
    return [job_response(j, names) for j in rows]


def count_jobs(session: Session, conds: list[ColumnElement[bool]]) -> int:
    """How many runs match ``conds``."""
    return int(session.scalar(select(func.count()).select_from(Job).where(*conds)) or 0)


# ---------------------------------------------------------------------------- acting on runs
def cancel(session: Session, job_id: str) -> Job:
    """Cancel a run: a waiting one never starts (``cancelled``); a running one stops before its
    next step; a finished one is returned as it is."""
    job = find_job(session, job_id)
    if job.status == "pending":
        job.status, job.finished_at = "cancelled", utcnow()
        job.log = "cancelled before it started"
    elif job.status == "running":
        job.cancel_requested = True
    session.flush()
    return job


def delete_job(session: Session, job_id: str) -> None:
    """Delete a run whatever its state (a running one stops before its next step; what it
    changed stays, with its history)."""
    session.delete(find_job(session, job_id))


def _matched(session: Session, ids: list[str] | None, tree: Any, what: str) -> list[Job] | list[str]:
    if (ids is None) == (tree is None):
        raise Invalid(f"{what}: give either ids or filter",
                      [error_entry(["body"], "exactly one of ids and filter is needed", "value_error")])
    if ids is not None:
        return ids
    cond = compile_run_filter(tree, ["body", "filter"]) if tree else true()
    n = count_jobs(session, [cond])
    if n > MAX_MATCHED:
        raise Invalid(f"the filter matches {n} runs; at most {MAX_MATCHED} are {what} per request",
                      [error_entry(["body", "filter"], f"matches more than {MAX_MATCHED} runs", "too_many", None,
                                   {"matched": n, "limit": MAX_MATCHED})])
    return list(session.scalars(select(Job).where(cond).order_by(*_order(None))))


def delete_many(session: Session, ids: list[str] | None, tree: Any) -> int:
    """Delete the runs ``ids`` (unknown ones are ignored) or every run ``tree`` matches."""
    found = _matched(session, ids, tree, "deleted")
    keys = [j.id for j in found] if found and isinstance(found[0], Job) else \
        [i.strip().upper() for i in found if isinstance(i, str)]
    deleted = 0
    for chunk in range(0, len(keys), 500):
        done = session.execute(delete(Job).where(Job.id.in_(keys[chunk:chunk + 500])))
        deleted += int(done.rowcount)  # type: ignore[attr-defined]
    return deleted


def _rerun_of(session: Session, project_root: Path, job: Job) -> Job:
    if job.status not in queue.FINISHED:
        raise Conflict(f"run {job.id} is {'waiting' if job.status == 'pending' else 'running'}; only a finished "
                       "run can be run again")
    if session.scalar(select(Record.id).where(Record.id == job.record_id, Record.deleted_at.is_(None))) is None:
        raise Conflict(f"record {job.record_id} of run {job.id} no longer exists (deleted)")
    workflows.find(session, project_root, job.workflow_name)
    return queue.enqueue(session, workflow=job.workflow_name, record_id=job.record_id, schema_name=job.schema_name,
                         trigger="manual", inputs={**(job.inputs or {}), "rerun_of": job.id})


def rerun(session: Session, project_root: Path, job_id: str) -> Job:
    """Queue the finished run ``job_id`` again: same workflow, record and input; the original is
    untouched. Refused (422) while paused; ``Conflict`` when it is not finished or its record is
    deleted; ``NotFound`` for an unknown run or workflow."""
    manual_runs.refuse_while_paused(project_root, "rerunning", invalid=True)
    return _rerun_of(session, project_root, find_job(session, job_id))


def rerun_many(session: Session, project_root: Path, ids: list[str] | None, tree: Any) -> JobRerunResponse:
    """Rerun the runs ``ids`` (in the order given) or every run ``tree`` matches (newest first);
    those that cannot be rerun are skipped with a reason: JobRerunResponse ``{started: [runs],
    skipped: [{id, reason}]}``."""
    manual_runs.refuse_while_paused(project_root, "rerunning", invalid=True)
    started: list[WorkflowJobResponse] = []
    skipped: list[SkippedJob] = []
    for item in _matched(session, ids, tree, "rerun"):
        given = item.id if isinstance(item, Job) else item
        try:
            job = item if isinstance(item, Job) else find_job(session, item)
            new = _rerun_of(session, project_root, job)
        except (NotFound, Invalid, Conflict) as exc:
            skipped.append({"id": given, "reason": exc.detail})
            continue
        session.flush()
        started.append(job_response(new))
    return {"started": started, "skipped": skipped}
