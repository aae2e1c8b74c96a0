"""Handlers of the ``jobs`` tag (docs/automation.md *The run list*): workflow runs — listing, one run,
cancel, delete, rerun, draining the queue — and starting runs by hand."""
from __future__ import annotations

from typing import Any

from benchbook.handlers.uow import kick_worker, read, services, write
from benchbook.runner import failure_groups, manual_runs, worker
from benchbook.runner import run_list as domain
from benchbook.runner.shapes import (
    DrainResponse,
    FailureGroupResponse,
    JobCountResponse,
    JobDeleteResponse,
    JobRerunResponse,
    WorkflowJobResponse,
    WorkflowRunManyResponse,
)

Body = dict[str, Any]


def _conds(s: Any, filters: dict[str, Any]) -> list[Any]:
    return domain.conditions(s, **filters)


def list_jobs(limit: int = 50, offset: int = 0, sort: str | None = None,
              **filters: Any) -> tuple[list[WorkflowJobResponse], int]:
    with read() as s:
        return domain.list_jobs(s, _conds(s, filters), sort=sort, limit=limit, offset=offset), 200


def count_jobs(**filters: Any) -> tuple[JobCountResponse, int]:
    with read() as s:
        return {"count": domain.count_jobs(s, _conds(s, filters))}, 200


def list_filter_fields() -> tuple[list[Body], int]:
    return domain.FIELDS, 200


def list_failure_groups(filter: str | None = None) -> tuple[list[FailureGroupResponse], int]:
    with read() as s:
        return failure_groups.failure_groups(s, filter), 200


def get_job(job_id: str) -> tuple[WorkflowJobResponse, int]:
    with read() as s:
        return domain.job_response(domain.find_job(s, job_id)), 200


def delete_job(job_id: str) -> tuple[None, int]:
    with write() as ctx:
        domain.delete_job(ctx.session, job_id)
    return None, 204


def cancel_job(job_id: str) -> tuple[WorkflowJobResponse, int]:
    with write() as ctx:
        return domain.job_response(domain.cancel(ctx.session, job_id)), 200


def rerun_job(job_id: str) -> tuple[WorkflowJobResponse, int]:
    with write() as ctx:
        job = domain.rerun(ctx.session, services().project.root, job_id)
        ctx.session.flush()
        out = domain.job_response(job)
    kick_worker()
    return out, 201


def rerun_many(body: Body) -> tuple[JobRerunResponse, int]:
    with write() as ctx:
        out = domain.rerun_many(ctx.session, services().project.root, body.get("ids"), body.get("filter"))
    if out["started"]:
        kick_worker()
    return out, 200


def delete_many(body: Body) -> tuple[JobDeleteResponse, int]:
    with write() as ctx:
        return {"deleted": domain.delete_many(ctx.session, body.get("ids"), body.get("filter"))}, 200


def drain_jobs() -> tuple[DrainResponse, int]:
    svc = services()
    return worker.for_database(svc.db, svc.project).drain(wait=True).response(), 200


def run_workflow(name: str, body: Body) -> tuple[WorkflowJobResponse, int]:
    with write() as ctx:
        job = manual_runs.run_manual(ctx.session, services().project.root, name, body["record_id"])
        ctx.session.flush()
        out = domain.job_response(job)
    kick_worker()
    return out, 201


def run_workflow_many(name: str, body: Body) -> tuple[WorkflowRunManyResponse, int]:
    with write() as ctx:
        out = manual_runs.run_many(ctx.session, services().project.root, name, body["record_ids"])
    if out["started"]:
        kick_worker()
    return out, 200
