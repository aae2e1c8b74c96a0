"""Deleting many records at once, as one history batch: exactly what a list shows
(``DELETE /collections/{dataset_name}/records``) or the records named by id
(``POST /records/bulk-delete``); both through :func:`~benchbook.domain.records.writes.delete_records`."""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from benchbook.domain import collector
from benchbook.domain.catalog.lookup import find_collection
from benchbook.domain.context import Ctx
from benchbook.domain.errors import error_entry, missing
from benchbook.domain.progress import Progress, silent
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.rows import record_rows
from benchbook.domain.records.writes import delete_records
from benchbook.persistence.tables import Record


@collector.paused()
def delete_by_query(ctx: Ctx, collection_name: str, query: RecordQuery, *, force: bool,
                    references: str | None = None, progress: Progress = silent) -> dict[str, Any]:
    """Soft-delete exactly what the same list shows, as one batch: ``{deleted, batch_id}``;
    ``progress`` as :func:`~benchbook.domain.records.writes.delete_records` reports it.
    Raises ``Conflict`` when records with live children block and ``force`` is off, or when
    live records reference them and ``references`` is not given (``writes.delete_records``)."""
    collection = find_collection(ctx.session, collection_name)
    records = record_rows(ctx.session, *query.conditions(ctx.session, collection), data=False)
    if not records:
        return {"deleted": 0, "batch_id": None}
    deleted, batch_id = delete_records(ctx, records, force=force, always_batch=True, references=references,
                                       progress=progress)
    return {"deleted": deleted, "batch_id": batch_id}


@collector.paused()
def bulk_delete(ctx: Ctx, ids: list[str], *, force: bool, references: str | None = None,
                progress: Progress = silent) -> dict[str, Any]:
    """Soft-delete the live records ``ids`` (full ids) as one batch (``progress`` as for
    :func:`delete_by_query`). Raises ``Conflict`` naming
    the ids that are not live records (the body names them: :func:`missing`), and as
    ``writes.delete_records`` does (live children, live referrers)."""
    wanted = list(dict.fromkeys(i.strip().upper() for i in ids))
    records = list(ctx.session.scalars(select(Record).where(Record.id.in_(wanted), Record.deleted_at.is_(None))))
    live = {r.id for r in records}
    gone = [(i, rid) for i, rid in enumerate(wanted) if rid not in live]
    if gone:
        raise missing(f"{len(gone)} record(s) not found or already deleted: {', '.join(r for _, r in gone[:10])}",
                      [error_entry(["body", "ids", i], "not found or already deleted", "not_found", rid)
                       for i, rid in gone])
    deleted, batch_id = delete_records(ctx, records, force=force, always_batch=True, references=references,
                                       loc=("body", "references"), progress=progress)
    return {"deleted": deleted, "batch_id": batch_id}
