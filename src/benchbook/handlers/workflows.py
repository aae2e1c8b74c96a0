"""Handlers of the ``workflows`` tag: workflow files in the project's ``workflows/`` folder."""
from __future__ import annotations

from typing import Any

from benchbook.handlers.uow import read, services, write
from benchbook.runner import workflows as domain
from benchbook.runner.shapes import WorkflowResponse

Body = dict[str, Any]


def list_workflows() -> tuple[list[WorkflowResponse], int]:
    with read() as s:
        return [domain.workflow_response(w) for w in domain.load_all(s, services().project.root)], 200


def get_workflow(name: str) -> tuple[WorkflowResponse, int]:
    with read() as s:
        return domain.workflow_response(domain.find(s, services().project.root, name)), 200


def put_workflow(name: str, body: Body) -> tuple[WorkflowResponse, int]:
    with read() as s:
        wf, created = domain.put(s, services().project.root, name, body["content"])
    return domain.workflow_response(wf), 201 if created else 200


def delete_workflow(name: str, force: bool = False) -> tuple[None, int]:
    with write() as ctx:
        domain.delete(ctx.session, services().project.root, name, force=force)
    return None, 204
