"""Handlers of the OpenAPI document's ``schemas`` tag."""
from __future__ import annotations

from typing import Any

from benchbook.domain.catalog import schemas as domain
from benchbook.domain.catalog.lookup import find_schema
from benchbook.domain.catalog.shapes import FieldTypeResponse, RestorePlanResponse, SchemaResponse
from benchbook.handlers.uow import read, write

Body = dict[str, Any]


def list_schemas() -> tuple[list[SchemaResponse], int]:
    with read() as s:
        return domain.list_schemas(s), 200


def list_deleted_schemas() -> tuple[list[SchemaResponse], int]:
    with read() as s:
        return domain.list_schemas(s, deleted=True), 200


def list_field_types() -> tuple[list[FieldTypeResponse], int]:
    return domain.field_types(), 200


def create_schema(body: Body) -> tuple[SchemaResponse, int]:
    with write() as ctx:
        return domain.schema_response(ctx.session, domain.create_schema(ctx, body)), 201


def get_schema(name: str) -> tuple[SchemaResponse, int]:
    with read() as s:
        return domain.schema_response(s, find_schema(s, name)), 200


def update_schema(name: str, body: Body) -> tuple[SchemaResponse, int]:
    with write() as ctx:
        return domain.schema_response(ctx.session, domain.update_schema(ctx, name, body)), 200


def delete_schema(name: str) -> tuple[None, int]:
    with write() as ctx:
        domain.delete_schema(ctx, name)
    return None, 204


def restore_schema(name: str) -> tuple[SchemaResponse, int]:
    with write() as ctx:
        return domain.schema_response(ctx.session, domain.restore_schema(ctx, name)), 200


def schema_restore_plan(name: str) -> tuple[RestorePlanResponse, int]:
    with read() as s:
        return domain.restore_plan(s, name), 200


def purge_schema(name: str) -> tuple[None, int]:
    with write() as ctx:
        domain.purge_schema(ctx, name)
    return None, 204


def set_unique_keys(name: str, body: Body) -> tuple[SchemaResponse, int]:
    with write() as ctx:
        return domain.schema_response(ctx.session, domain.set_unique_keys(ctx, name, body["keys"])), 200
