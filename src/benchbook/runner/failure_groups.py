"""Failure groups (``GET /jobs/failure-groups``, issue 36 item 3): failed runs grouped by
workflow, error kind, failed step and the *template* of their message — the message with its
variable parts replaced by placeholders, so that one failure met on 10,000 records is one group,
not 10,000.

The template is computed by the database in the ``GROUP BY`` (PostgreSQL: nested
``regexp_replace``; SQLite: :func:`~benchbook.domain.message_template.template` registered on
the connection as a deterministic SQL function), so a group list over 100,000 failed runs reads
each run once and sends back one row per group. ``domain/message_template.py`` holds the rules
(``RULES``) once; ``docs/automation.md`` (*Failure groups*) describes them for users, and
``tests/api/test_failure_groups.py`` checks that both databases and ``template`` agree.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, literal, select
from sqlalchemy.orm import Session

from benchbook.domain.message_template import RULES, template
from benchbook.persistence.tables import Job
from benchbook.runner.run_list import column_of, compile_run_filter
from benchbook.runner.shapes import FailureGroupResponse

SQLITE_FUNCTION = "benchbook_message_template"


def template_sql(session: Session, message: ColumnElement[Any]) -> ColumnElement[Any]:
    """SQL computing :func:`template` of ``message`` on the session's database. On SQLite this
    registers :data:`SQLITE_FUNCTION` on the session's connection (cheap; idempotent)."""
    connection = session.connection()
    if connection.dialect.name == "sqlite":
        raw = connection.connection.dbapi_connection
        raw.create_function(SQLITE_FUNCTION, 1, template, deterministic=True)  # type: ignore[union-attr]
        shaped: ColumnElement[Any] = getattr(func, SQLITE_FUNCTION)(message)
        return shaped
    for pattern, placeholder, _ in RULES:
        message = func.regexp_replace(message, literal(pattern), literal(placeholder), literal("g"))
    return message


def failure_groups(session: Session, tree: Any = None) -> list[FailureGroupResponse]:
    """Failed runs (those matching the run filter ``tree``, when given) grouped by workflow,
    error kind, failed step and message template; FailureGroupResponse dicts ``{workflow, count,
    last_at, kind, message (the template), example (one message of the group), step}``, most
    runs first, then the latest failure first. ``Invalid`` for a bad ``tree``."""
    kind, step = column_of("error_kind"), column_of("failed_step")
    message = Job.error_details["message"].as_string()
    shape = template_sql(session, message)
    conds: list[ColumnElement[bool]] = [Job.status == "failed"]
    if tree:
        conds.append(compile_run_filter(tree))
    last = func.max(func.coalesce(Job.finished_at, Job.created_at))
    count = func.count()
    rows = session.execute(select(Job.workflow_name, kind, step, shape, count, last, func.max(message))
                           .where(*conds).group_by(Job.workflow_name, kind, step, shape)
                           .order_by(count.desc(), last.desc()))
    out: list[FailureGroupResponse] = []
    for wf, k, st, shaped, n, last_at, example in rows:
        if isinstance(last_at, str):  # SQLite gives an aggregate of timestamps back as text
            last_at = datetime.fromisoformat(last_at)
        if last_at is not None and last_at.tzinfo is None:
            last_at = last_at.replace(tzinfo=UTC)
        out.append({"workflow": wf, "count": int(n), "last_at": last_at.isoformat() if last_at else None,
                    "kind": k, "message": shaped, "example": example, "step": st})
    return out
