"""Handlers of the ``views`` tag: saved views of a schema's records table (issue 16 item 2)."""
from __future__ import annotations

from typing import Any

from benchbook.domain.catalog import views as domain
from benchbook.domain.catalog.shapes import ViewResponse
from benchbook.handlers.uow import read, write

Body = dict[str, Any]


def list_views() -> tuple[list[ViewResponse], int]:
    with read() as s:
        return domain.list_views(s), 200


def list_schema_views(name: str) -> tuple[list[ViewResponse], int]:
    with read() as s:
        return domain.list_views(s, name), 200


def create_view(name: str, body: Body) -> tuple[ViewResponse, int]:
    with write() as ctx:
        return domain.view_response(ctx.session, domain.create_view(ctx, name, body)), 201


def get_view(name: str, view: str) -> tuple[ViewResponse, int]:
    with read() as s:
        return domain.view_response(s, domain.get_view(s, name, view)), 200


def update_view(name: str, view: str, body: Body) -> tuple[ViewResponse, int]:
    with write() as ctx:
        return domain.view_response(ctx.session, domain.update_view(ctx, name, view, body)), 200


def delete_view(name: str, view: str) -> tuple[None, int]:
    with write() as ctx:
        domain.delete_view(ctx, name, view)
    return None, 204
