"""Handlers of the OpenAPI document's ``fields`` tag."""
from __future__ import annotations

from typing import Any

from benchbook.domain.catalog import fields as domain
from benchbook.domain.catalog.schemas import schema_response
from benchbook.domain.catalog.shapes import FieldResponse, RestorePlanResponse, SchemaResponse
from benchbook.handlers.uow import read, write

Body = dict[str, Any]


def create_field(name: str, body: Body) -> tuple[FieldResponse, int]:
    with write() as ctx:
        return domain.field_response(domain.create_field(ctx, name, body)), 201


def reorder_fields(name: str, body: Body) -> tuple[SchemaResponse, int]:
    with write() as ctx:
        return schema_response(ctx.session, domain.reorder_fields(ctx, name, body["order"])), 200


def update_field(name: str, field: str, body: Body) -> tuple[FieldResponse, int]:
    with write() as ctx:
        return domain.field_response(domain.update_field(ctx, name, field, body)), 200


def delete_field(name: str, field: str) -> tuple[None, int]:
    with write() as ctx:
        domain.delete_field(ctx, name, field)
    return None, 204


def field_restore_plan(name: str, field: str) -> tuple[RestorePlanResponse, int]:
    with read() as s:
        return domain.restore_plan(s, name, field), 200


def restore_field(name: str, field: str) -> tuple[FieldResponse, int]:
    with write() as ctx:
        return domain.field_response(domain.restore_field(ctx, name, field)), 200


def purge_field(name: str, field: str) -> tuple[None, int]:
    with write() as ctx:
        domain.purge_field(ctx, name, field)
    return None, 204
