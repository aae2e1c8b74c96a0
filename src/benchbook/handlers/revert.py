"""Handlers for undoing history: revert one entry and restore-all (operationIds ``audit.*``,
re-exported by :mod:`benchbook.handlers.audit`)."""
from __future__ import annotations

from typing import Any

from benchbook.domain.history import restore_all
from benchbook.domain.history import revert as domain
from benchbook.domain.progress import reporting
from benchbook.handlers.uow import read, write

Body = dict[str, Any]


def revert_plan(audit_id: str, fields: list[str] | None = None) -> tuple[Body, int]:
    with read() as s:
        return domain.revert_plan(s, audit_id, fields), 200


def apply_revert(audit_id: str, body: Body | None = None) -> tuple[Body, int]:
    body = body or {}
    with write() as ctx:
        return domain.apply_revert(ctx, audit_id, force=bool(body.get("force")), fields=body.get("fields")), 200


def restore_all_plan(batch: str | None = None, filter: str | None = None, q: str | None = None) -> tuple[Body, int]:
    with read() as s:
        return restore_all.plan(s, batch=batch, tree=filter, q=q), 200


def restore_all_apply(body: Body | None = None) -> tuple[Body, int]:
    body = body or {}
    with write() as ctx:
        return restore_all.restore_all(ctx, batch=body.get("batch"), tree=body.get("filter"), q=body.get("q"),
                                       progress=reporting()), 200
