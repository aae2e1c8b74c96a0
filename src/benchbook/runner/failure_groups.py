"""Failure groups (``GET /jobs/failure-groups``, issue 36 item 3): failed runs grouped by
workflow, error kind, failed step and the *template* of their message — the message with its
variable parts replaced by placeholders, so that one failure met on 10,000 records is one group,
not 10,000.

The template is computed by the database in the ``GROUP BY`` (PostgreSQL: nested
``regexp_replace``; SQLite: :func:`template` registered on the connection as a deterministic
SQL function), so a group list over 100,000 failed runs reads each run once and sends back one
row per group. :data:`RULES` are the one definition of the normalisation, applied in order;
``docs/automation.md`` (*Failure groups*) describes them for users, and
``tests/runner/test_failure_groups.py`` checks that both databases and :func:`template` agree.
"""
from __future__ import annotations

import functools
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, literal, select
from sqlalchemy.orm import Session

from benchbook.persistence.tables import Job
from benchbook.runner.jobs import column_of, compile_run_filter

_WORD_BEFORE = r"(?<!\w)"
_WORD_AFTER = r"(?!\w)"
_ULID = "[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}"
_HEX = "[0-9a-fA-F]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_PATH_CHAR = r"[^\s'\"`,;:()<>\[\]{}]"

RULES: list[tuple[str, str, str]] = [
    # quoted values: '…', "…" and `…` (an apostrophe inside a word, as in "can't", opens nothing)
    (rf"(?=['\"`]){_WORD_BEFORE}(?:'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`)", "<value>", "'\"`"),
    # ids: a 26-character ULID (every id of benchbook) or a UUID, standing alone
    (f"{_WORD_BEFORE}(?:{_UUID}|{_ULID}){_WORD_AFTER}", "<id>", ""),
    # paths: /abs, ~/…, ./…, ../…, C:\…, and relative a/b/c.ext (a last part with an extension)
    ((rf"(?<![\w/.~])(?:~|\.\.?)?/{_PATH_CHAR}+|{_WORD_BEFORE}[A-Za-z]:\\{_PATH_CHAR}+"
      rf"|{_WORD_BEFORE}[\w.-]+(?:/[\w.-]+)*/[\w-]+\.\w+{_WORD_AFTER}"), "<path>", "/\\"),
    # numbers: every run of digits, with its decimal parts and exponent (1, 0.40, 1.2.3, 3e-5)
    (r"\d+(?:\.\d+)*(?:[eE][+-]?\d+)?", "<n>", "0123456789"),
]
"""``(pattern, placeholder, needs)`` triples, applied in this order; a pattern matches only a
message holding one of the characters ``needs`` (when given), which spares :func:`template` most
searches. The patterns use only what Python's ``re`` and PostgreSQL's regular expressions read
alike (``\\w``, ``\\d``, ``\\s``, lookahead and lookbehind; no ``\\b``)."""
_COMPILED = [(re.compile(pattern), placeholder, frozenset(needs)) for pattern, placeholder, needs in RULES]
SQLITE_FUNCTION = "benchbook_message_template"


@functools.lru_cache(maxsize=8192)
def template(message: str | None) -> str | None:
    """The template of a run's error ``message``: each of :data:`RULES` replaces what it matches
    by its placeholder (``"record 01J… has 'x' in /tmp/a.csv row 12"`` → ``"record <id> has
    <value> in <path> row <n>"``). None stays None."""
    if message is None:
        return None
    for pattern, placeholder, needs in _COMPILED:
        if not needs or not needs.isdisjoint(message):
            message = pattern.sub(placeholder, message)
    return message


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


def failure_groups(session: Session, tree: Any = None) -> list[dict[str, Any]]:
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
    out = []
    for wf, k, st, shaped, n, last_at, example in rows:
        if isinstance(last_at, str):  # SQLite gives an aggregate of timestamps back as text
            last_at = datetime.fromisoformat(last_at)
        if last_at is not None and last_at.tzinfo is None:
            last_at = last_at.replace(tzinfo=UTC)
        out.append({"workflow": wf, "count": int(n), "last_at": last_at.isoformat() if last_at else None,
                    "kind": k, "message": shaped, "example": example, "step": st})
    return out
