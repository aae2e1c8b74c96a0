"""Handlers of the OpenAPI document's ``audit`` tag."""
from __future__ import annotations

from typing import Any

from benchbook.domain.catalog.lookup import find_collection, find_schema
from benchbook.domain.history import entries as domain
from benchbook.domain.history import events as history_events
from benchbook.domain.history import filters as history_filters
from benchbook.domain.history import storage as history_storage
from benchbook.domain.history.shapes import (
    AuditBatchResponse,
    AuditEventResponse,
    AuditLogResponse,
    PaginatedAuditEventResponse,
    PaginatedAuditLogResponse,
)
from benchbook.domain.progress import reporting
from benchbook.domain.records.rows import find_record
from benchbook.handlers.uow import read, services, write

Body = dict[str, Any]


def _page(conds: list[Any], action: str | None = None, limit: int = 50, offset: int = 0, since: str | None = None,
          sort: str | None = None) -> tuple[PaginatedAuditLogResponse, int]:
    with read() as s:
        return domain.list_entries(s, conds, action=action, since=since, sort=sort, limit=limit,
                                   offset=offset), 200


def list_audit(entity_id: str | None = None, entity_type: str | None = None,
               **shared: Any) -> tuple[PaginatedAuditLogResponse, int]:
    return _page(domain.scope(entity_id=entity_id, entity_types=(entity_type,) if entity_type else ()), **shared)


def create_batch(body: Body | None = None) -> tuple[AuditBatchResponse, int]:
    with write() as ctx:
        batch = domain.open_batch(ctx, "import", (body or {}).get("label"))
        ctx.session.flush()
        return domain.batch_response(batch), 201


def get_batch_event(batch_id: str) -> tuple[AuditEventResponse, int]:
    with read() as s:
        return domain.batch_event(s, batch_id), 200


def list_batch_entries(batch_id: str, **shared: Any) -> tuple[PaginatedAuditLogResponse, int]:
    with read() as s:
        bid = domain.find_batch(s, batch_id).id
    return _page(domain.scope(batch_id=bid), **shared)


def list_events(filter: str | None = None, limit: int = 25, offset: int = 0, q: str | None = None,
                sort: str | None = None) -> tuple[PaginatedAuditEventResponse, int]:
    with read() as s:
        return history_events.list_events(s, q=q, tree=filter, sort=sort, limit=limit, offset=offset), 200


def list_filter_fields() -> tuple[list[Body], int]:
    return history_filters.FIELDS, 200


def get_storage() -> tuple[Body, int]:
    with read() as s:
        return history_storage.storage(services().db.engine, s, reporting()), 200


def reclaim_storage() -> tuple[Body, int]:
    history_storage.reclaim(services().db.engine)
    return get_storage()


def get_audit_entry(audit_id: str) -> tuple[AuditLogResponse, int]:
    with read() as s:
        return domain.get_entry(s, audit_id), 200


def list_record_audit(record_id: str, **shared: Any) -> tuple[PaginatedAuditLogResponse, int]:
    with read() as s:
        rid = find_record(s, record_id, live=None).id
    return _page(domain.scope(entity_types=("record",), entity_id=rid), **shared)


def list_schema_audit(name: str, **shared: Any) -> tuple[PaginatedAuditLogResponse, int]:
    with read() as s:
        sid = find_schema(s, name, deleted=None).id
    return _page(domain.scope(schema_id=sid, entity_types=("schema", "field")), **shared)


def list_collection_audit(name_or_id: str, **shared: Any) -> tuple[PaginatedAuditLogResponse, int]:
    with read() as s:
        cid = find_collection(s, name_or_id, deleted=None).id
    return _page(domain.scope(dataset_id=cid, entity_types=("dataset",)), **shared)


from benchbook.handlers.revert import apply_revert, restore_all_plan, revert_plan
from benchbook.handlers.revert import restore_all_apply as restore_all

__all__ = ["apply_revert", "restore_all", "restore_all_plan", "revert_plan"]
