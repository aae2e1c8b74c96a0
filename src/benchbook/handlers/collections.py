"""Handlers of the OpenAPI document's ``collections`` tag."""
from __future__ import annotations

from typing import Any

from benchbook.domain.catalog import collections as domain
from benchbook.domain.catalog.lookup import find_collection
from benchbook.domain.catalog.shapes import CollectionResponse, RestorePlanResponse
from benchbook.domain.records.lists import record_counts as count_records
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.shapes import RecordCountsResponse
from benchbook.handlers.uow import read, write

Body = dict[str, Any]


def list_collections() -> tuple[list[CollectionResponse], int]:
    with read() as s:
        return domain.list_collections(s), 200


def list_deleted_collections() -> tuple[list[CollectionResponse], int]:
    with read() as s:
        return domain.list_collections(s, deleted=True), 200


def create_collection(body: Body) -> tuple[CollectionResponse, int]:
    with write() as ctx:
        return domain.collection_response(ctx.session, domain.create_collection(ctx, body)), 201


def get_collection(name_or_id: str) -> tuple[CollectionResponse, int]:
    with read() as s:
        return domain.collection_response(s, find_collection(s, name_or_id)), 200


def update_collection(name_or_id: str, body: Body) -> tuple[CollectionResponse, int]:
    with write() as ctx:
        return domain.collection_response(ctx.session, domain.update_collection(ctx, name_or_id, body)), 200


def delete_collection(name_or_id: str) -> tuple[None, int]:
    with write() as ctx:
        domain.delete_collection(ctx, name_or_id)
    return None, 204


def purge_collection(name_or_id: str) -> tuple[None, int]:
    with write() as ctx:
        domain.purge_collection(ctx, name_or_id)
    return None, 204


def restore_collection(name_or_id: str) -> tuple[CollectionResponse, int]:
    with write() as ctx:
        return domain.collection_response(ctx.session, domain.restore_collection(ctx, name_or_id)), 200


def collection_restore_plan(name_or_id: str) -> tuple[RestorePlanResponse, int]:
    with read() as s:
        return domain.restore_plan(s, name_or_id), 200


def record_counts(name_or_id: str, **params: Any) -> tuple[RecordCountsResponse, int]:
    with read() as s:
        return count_records(s, name_or_id, RecordQuery(**params)), 200
