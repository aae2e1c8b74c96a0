"""Handlers for reverting history entries (operationIds ``audit.revert_plan`` and
``audit.apply_revert``, re-exported by :mod:`benchbook.handlers.audit`)."""
from __future__ import annotations

from typing import Any

from benchbook.domain import revert as domain
from benchbook.handlers.uow import read, write

Body = dict[str, Any]


def revert_plan(audit_id: str, fields: list[str] | None = None) -> tuple[Body, int]:
    with read() as s:
        return domain.revert_plan(s, audit_id, fields), 200


def apply_revert(audit_id: str, body: Body | None = None) -> tuple[Body, int]:
    body = body or {}
    with write() as ctx:
        return domain.apply_revert(ctx, audit_id, force=bool(body.get("force")), fields=body.get("fields")), 200
