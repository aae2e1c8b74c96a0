"""What the API shows of a workflow run (OpenAPI ``WorkflowJobResponse``), as a type:
:func:`.jobs.job_response` builds it, the handlers answer it, and
``tests/test_response_shapes.py`` holds it to the document's keys. ``error_details``,
``step_executions``, ``affected_records`` and ``trigger_detail`` are the run's stored JSON,
shown as stored.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import Any, NotRequired, TypedDict


class WorkflowJobResponse(TypedDict):
    """OpenAPI ``WorkflowJobResponse``: one run."""

    id: str
    workflow_name: str
    record_id: str
    record_name: str | None
    schema_name: str
    trigger: str
    status: str
    error: str | None
    error_details: dict[str, Any] | None
    log: str | None
    step_executions: list[Any] | None
    affected_records: list[Any] | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    depth: NotRequired[int]
    trigger_detail: NotRequired[dict[str, Any] | None]
    problems: NotRequired[int]
    summary: NotRequired[str]
    cancel_requested: NotRequired[bool]
