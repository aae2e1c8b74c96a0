"""What the API shows of a workflow run (OpenAPI ``WorkflowJobResponse`` and the
``StepExecution`` and ``AffectedRecord`` entries inside it), of a rerun of many
(``JobRerunResponse``, ``SkippedJob``), of manual runs of many records
(``WorkflowRunManyResponse``), of a group of failed runs (``FailureGroupResponse``), of a
drain (``DrainResponse``), the counts ``JobCountResponse`` and ``JobDeleteResponse`` and of a
workflow file (``WorkflowResponse``, with its ``WorkflowStep`` and ``WorkflowProblem`` entries),
as types: :mod:`.run_list`, :mod:`.manual_runs`, :mod:`.failure_groups`, :mod:`.worker`,
:mod:`.workflows` and the jobs handlers build them, the handlers answer them, and
``tests/test_response_shapes.py`` holds them to the document's keys. ``error_details``,
``step_executions``, ``affected_records`` and ``trigger_detail`` are the run's stored JSON,
shown as stored: :mod:`.execution` writes ``step_executions`` and ``affected_records`` in the
shapes of :class:`StepExecution` and :class:`AffectedRecord` (a run stored before ``outputs``
existed lacks it, as the document says).

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import Any, NotRequired, TypedDict


class StepExecution(TypedDict):
    """OpenAPI ``StepExecution``: one step of a run, as :mod:`.execution` stores it in the run's
    ``step_executions``. Times are ISO 8601 text (None before the step started or ended),
    ``duration_ms`` milliseconds; ``status`` is ``running``, ``completed``, ``failed``,
    ``skipped`` or ``cancelled``; ``outputs`` (None when its JSON is over 16 KiB) and
    ``outputs_bytes`` are there once the step's plugin returned."""

    step_id: str
    plugin: str
    status: str
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    error: str | None
    problems: int | None
    outputs: NotRequired[dict[str, Any] | None]
    outputs_bytes: NotRequired[int]


class AffectedRecord(TypedDict):
    """OpenAPI ``AffectedRecord``: a record a run wrote, once, with the first write's ``action``
    (``created`` or ``updated``) and its schema's name (None when the schema is gone)."""

    record_id: str
    schema_name: str | None
    action: str


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
    step_executions: list[StepExecution] | None
    affected_records: list[AffectedRecord] | None
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    depth: NotRequired[int]
    trigger_detail: NotRequired[dict[str, Any] | None]
    problems: NotRequired[int]
    summary: NotRequired[str]
    cancel_requested: NotRequired[bool]


class SkippedJob(TypedDict):
    """OpenAPI ``SkippedJob``: a run (``id`` as given) that was not rerun, and why."""

    id: str
    reason: str


class JobRerunResponse(TypedDict):
    """OpenAPI ``JobRerunResponse``: the runs queued again (the new runs) and those skipped."""

    started: list[WorkflowJobResponse]
    skipped: list[SkippedJob]


class FailureGroupResponse(TypedDict):
    """OpenAPI ``FailureGroupResponse``: ``count`` failed runs of ``workflow`` sharing error
    ``kind``, failed ``step`` and ``message`` template (``example``: one of their messages as
    it was); ``last_at`` the latest failure, ISO 8601 text (None only for a run with neither
    an end nor a creation time, which the table does not allow)."""

    workflow: str
    count: int
    last_at: str | None
    kind: str | None
    message: str | None
    example: str | None
    step: str | None


class WorkflowRunManyResponse(TypedDict):
    """OpenAPI ``WorkflowRunManyResponse``: how many manual runs were queued (``started``), their
    ids in the order of the records given, and the records skipped, with why."""

    started: int
    job_ids: list[str]
    skipped: list[SkippedJob]


class DrainResponse(TypedDict):
    """OpenAPI ``DrainResponse``: the runs one drain ran, and how they ended."""

    ran: int
    completed: int
    failed: int
    cancelled: int


class JobCountResponse(TypedDict):
    """OpenAPI ``JobCountResponse``: how many runs match."""

    count: int


class JobDeleteResponse(TypedDict):
    """OpenAPI ``JobDeleteResponse``: how many runs were deleted."""

    deleted: int


class WorkflowProblem(TypedDict):
    """OpenAPI ``WorkflowProblem``: what is wrong with a workflow file, where (``loc``: keys and
    list indexes into the YAML document, empty for the file as a whole); a YAML syntax error also
    has the 1-based ``line`` and ``column`` where PyYAML marks it."""

    loc: list[str | int]
    msg: str
    line: NotRequired[int]
    column: NotRequired[int]


WorkflowStep = TypedDict("WorkflowStep", {
    "id": str,
    "plugin": str,
    "config": Any,
    "inputs": Any,
    "timeout": Any,
    "if": Any,
})
"""OpenAPI ``WorkflowStep``: one step of a workflow as its file gives it: the plugin's ``config``
(an object), its ``inputs`` (an object of literals or references), ``timeout`` in seconds (None:
the plugin's) and ``if`` (a record filter tree, or None). Typed ``Any``: for an invalid file
these four are the YAML values as written (a list, a text, a negative timeout...), which the
document's types do not allow, listed in the workflow's ``problems``. The functional form
because ``if`` is a Python keyword."""


class WorkflowResponse(TypedDict):
    """OpenAPI ``WorkflowResponse``: a workflow file as loaded: its definition (empty text, ``{}``
    or ``[]`` where the file gives none or gives it wrong), its YAML ``content``, ``valid`` (no
    ``problems``) and its ``problems``."""

    name: str
    description: str
    record_schema: str
    triggers: dict[str, Any]
    steps: list[WorkflowStep]
    save: dict[str, str]
    content: str
    valid: bool
    problems: list[WorkflowProblem]
