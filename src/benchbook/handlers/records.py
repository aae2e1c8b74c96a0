"""Handlers of the OpenAPI document's ``records`` tag."""
from __future__ import annotations

from typing import Any

from starlette.responses import StreamingResponse

from benchbook.domain.catalog import views
from benchbook.domain.catalog.shapes import RestorePlanResponse
from benchbook.domain.history import restore
from benchbook.domain.progress import reporting
from benchbook.domain.records import deleted, deleting, exports, lists
from benchbook.domain.records import writes as domain
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.rows import find_record
from benchbook.domain.records.shapes import (
    PaginatedDeletedRecordsResponse,
    PaginatedRecordResponse,
    RecordResponse,
)
from benchbook.domain.records.shaping import RecordShaper, single_record
from benchbook.handlers.uow import read, services, write

Body = dict[str, Any]
QUERY_KEYS = ("filter", "parent_record_id", "schema", "search", "sort", "where", "within")


def _query(params: dict[str, Any]) -> RecordQuery:
    return RecordQuery(**{k: params[k] for k in QUERY_KEYS if params.get(k) is not None})


def list_records(dataset_name: str, limit: int = 50, offset: int = 0, child_counts: bool = False,
                 columns: list[str] | None = None, view: str | None = None,
                 **params: Any) -> tuple[PaginatedRecordResponse, int]:
    with read() as s:
        query = _query(params)
        if view:
            query, columns = views.with_view(s, dataset_name, view, query, columns)
        return lists.list_page(s, dataset_name, query, limit=limit, offset=offset,
                               child_counts=child_counts, columns=columns), 200


def create_record(dataset_name: str, body: Body) -> tuple[RecordResponse, int]:
    with write() as ctx:
        rec = domain.create_record(ctx, dataset_name, body)
        return RecordShaper(ctx.session).single(rec), 201


def delete_records(dataset_name: str, force: bool = False, references: str | None = None,
                   **params: Any) -> tuple[Body, int]:
    with write() as ctx:
        return deleting.delete_by_query(ctx, dataset_name, _query(params), force=force, references=references,
                                     progress=reporting()), 200


def export_csv(collection_name: str, columns: list[str] | None = None, **params: Any) -> StreamingResponse:
    session = services().db.sessions()
    try:
        chunks = exports.export_rows(session, collection_name, _query(params), columns=columns)
        first = next(chunks)  # raises NotFound / Invalid before the response starts
    except BaseException:
        session.close()
        raise

    def stream() -> Any:
        try:
            yield first
            yield from chunks
        finally:
            session.close()

    return StreamingResponse(stream(), media_type="text/csv; charset=utf-8", headers={
        "content-disposition": f'attachment; filename="{collection_name}.csv"'})


def search_records(limit: int = 20, schema: str | None = None, search: str | None = None,
                   reachable_from: str | None = None) -> tuple[list[RecordResponse], int]:
    with read() as s:
        return lists.search_records(s, limit=limit, schema=schema, search=search,
                                    reachable_from=reachable_from), 200


def bulk_delete_records(body: Body) -> tuple[Body, int]:
    with write() as ctx:
        return deleting.bulk_delete(ctx, body["ids"], force=bool(body.get("force")),
                                 references=body.get("references"), progress=reporting()), 200


def get_record(record_id: str) -> tuple[RecordResponse, int]:
    with read() as s:
        return single_record(s, record_id), 200


def update_record(record_id: str, body: Body) -> tuple[RecordResponse, int]:
    with write() as ctx:
        rec = domain.update_record(ctx, record_id, body)
        return RecordShaper(ctx.session).single(rec), 200


def delete_record(record_id: str, force: bool = False, references: str | None = None) -> tuple[None, int]:
    with write() as ctx:
        domain.delete_records(ctx, [find_record(ctx.session, record_id)], force=force, references=references)
    return None, 204


def list_orphans(limit: int = 50, offset: int = 0) -> tuple[PaginatedRecordResponse, int]:
    with read() as s:
        rows, total = restore.orphans(s, limit, offset)
        return {"items": RecordShaper(s).shape(rows), "total": total, "total_exact": True,
                "offset": offset, "limit": limit}, 200


def record_restore_plan(record_id: str) -> tuple[RestorePlanResponse, int]:
    with read() as s:
        return restore.record_restore_plan(s, record_id), 200


def restore_record(record_id: str, with_parents: bool = False, only_this: bool = False) -> tuple[RecordResponse, int]:
    with write() as ctx:
        rec = restore.restore_record(ctx, record_id, with_parents=with_parents, only_this=only_this)
        return RecordShaper(ctx.session).single(rec), 200


def restore_above(record_id: str) -> tuple[list[RecordResponse], int]:
    with write() as ctx:
        return RecordShaper(ctx.session).shape(restore.restore_above(ctx, record_id)), 200


def purge_record(record_id: str) -> tuple[None, int]:
    with write() as ctx:
        restore.purge_record(ctx, record_id)
    return None, 204


def list_referrers(record_id: str) -> tuple[list[RecordResponse], int]:
    with read() as s:
        return RecordShaper(s).shape(restore.referrers(s, record_id)), 200


def list_deleted_records(limit: int = 50, offset: int = 0) -> tuple[PaginatedDeletedRecordsResponse, int]:
    with read() as s:
        return deleted.list_deleted(s, limit=limit, offset=offset), 200


def purge_deleted(body: Body) -> tuple[Body, int]:
    with write() as ctx:
        return deleted.purge_deleted(ctx, body["op"]), 200
