"""Handlers of the ``remote`` tag: a device's side of sync (docs/sync.md)."""
from __future__ import annotations

from typing import Any

from benchbook.domain.sync import conflicts
from benchbook.handlers.uow import read, services, write
from benchbook.remote import syncing

Body = dict[str, Any]


def get_remote() -> tuple[Body, int]:
    svc = services()
    return syncing.status(svc.db, svc.project), 200


def connect(body: Body) -> tuple[Body, int]:
    svc = services()
    return syncing.connect(svc.db, svc.project, body["url"], body["invite"]), 200


def sync() -> tuple[Body, int]:
    svc = services()
    return syncing.sync(svc.db, svc.project), 200


def disconnect() -> tuple[Body, int]:
    svc = services()
    return syncing.disconnect(svc.db, svc.project), 200


def list_conflicts(status: str = "open", kind: str | None = None, record_id: str | None = None) -> tuple[list[Body], int]:
    with read() as s:
        return conflicts.list_rows(s, status=status, kind=kind, record_id=record_id), 200


def resolve_conflict(conflict_id: str, body: Body) -> tuple[Body, int]:
    with write() as ctx:
        return conflicts.resolve(ctx, conflict_id, body["take"], value=body.get("value"),
                                 force=bool(body.get("force"))), 200


def resolve_many(body: Body) -> tuple[Body, int]:
    with write() as ctx:
        return conflicts.resolve_many(ctx, body["ids"], body["take"], force=bool(body.get("force"))), 200
