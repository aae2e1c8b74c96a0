"""Record deletions still in effect, for Recently deleted (``GET /records/deleted``,
``POST /records/deleted/purge``; docs/deletes.md *Restoring*, issue 37 item 3).

A deletion is one operation: every record a delete marked with the same ``delete_op`` (a bulk
delete, or a delete that took children along, is one ``delete`` batch and its ``delete_op`` is
the batch id; a record deleted on its own gets an op of its own, with no batch, and is always
one record). Only the records of an op that are still deleted count: a record restored since
has no ``delete_op`` any more, a purged one is gone, so a deletion restored or purged in full
is not listed. Only records whose collection is live are counted here: a deleted collection
is listed (and restored or purged) on its own.

The operations are found through ``ix_records_delete_op`` (partial, ``delete_op IS NOT
NULL``): only deleted records are in it, so the list reads those and never the live ones.
"""
from __future__ import annotations

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from benchbook.domain.context import Ctx
from benchbook.domain.errors import Invalid, error_entry, missing
from benchbook.domain.history import entries as audit
from benchbook.domain.history.restore import purge_record
from benchbook.domain.records.shapes import (
    DeletedRecordExample,
    DeletedRecordsResponse,
    PaginatedDeletedRecordsResponse,
)
from benchbook.persistence.tables import AuditBatch, Collection, Record, Schema

EXAMPLES = 5
"""Records named per deletion (``examples``), oldest created first."""

PURGE_MAX = 1000
"""Most records ``POST /records/deleted/purge`` purges in one request: the most one
``POST /records/bulk-delete`` deletes (``BulkDeleteRequest.ids`` ``maxItems``)."""


def _still_deleted() -> list[ColumnElement[bool]]:
    """Records deleted by some operation, in a live collection. Written as "not in a deleted
    collection" (there are few): an ``IN`` of the live collections would lead SQLite's planner
    to ``ix_records_listing``, reading every record of them, live ones included."""
    return [Record.delete_op.is_not(None), Record.deleted_at.is_not(None),
            Record.dataset_id.not_in(select(Collection.id).where(Collection.deleted_at.is_not(None)))]


def _op(op: str) -> str:
    return op.strip().upper()


def list_deleted(session: Session, *, limit: int, offset: int) -> PaginatedDeletedRecordsResponse:
    """The record deletions still in effect, newest first (ties: the op, descending), one item
    per deleting operation; paginated ``{items, total, offset, limit}``. Each item (OpenAPI
    ``DeletedRecordsResponse``): ``op``, ``deleted_at``, ``count`` (its records still deleted),
    ``collections`` and ``schemas`` (names, sorted), ``examples`` (up to :data:`EXAMPLES`
    ``{id, natural_name, schema_name, collection}``, oldest created first), ``batch_id`` (the
    history batch of the deletion, or None for a record deleted on its own) and ``record_id``
    (the record when ``count`` is 1, else None)."""
    groups = (select(Record.delete_op.label("op"), func.max(Record.deleted_at).label("at"),
                     func.count().label("n"))
              .where(*_still_deleted()).group_by(Record.delete_op))
    total = session.scalar(select(func.count()).select_from(groups.subquery())) or 0
    rows = session.execute(groups.order_by(func.max(Record.deleted_at).desc(), Record.delete_op.desc())
                           .limit(limit).offset(offset)).all()
    ops = [r.op for r in rows]
    if not ops:
        return {"items": [], "total": total, "offset": offset, "limit": limit}
    mine = [*_still_deleted(), Record.delete_op.in_(ops)]
    names: dict[str, tuple[set[str], set[str]]] = {op: (set(), set()) for op in ops}
    for op, coll, schema in session.execute(
            select(Record.delete_op, Collection.name, Schema.name).distinct()
            .join(Collection, Collection.id == Record.dataset_id).join(Schema, Schema.id == Record.schema_id)
            .where(*mine)):
        names[str(op)][0].add(coll)
        names[str(op)][1].add(schema)
    ranked = (select(Record.id, Record.natural_name, Record.delete_op, Record.dataset_id, Record.schema_id,
                     func.row_number().over(partition_by=Record.delete_op,
                                            order_by=(Record.created_at, Record.id)).label("rank"))
              .where(*mine).subquery())
    examples: dict[str, list[DeletedRecordExample]] = {op: [] for op in ops}
    for rid, natural_name, op, coll, schema in session.execute(
            select(ranked.c.id, ranked.c.natural_name, ranked.c.delete_op, Collection.name, Schema.name)
            .join(Collection, Collection.id == ranked.c.dataset_id).join(Schema, Schema.id == ranked.c.schema_id)
            .where(ranked.c.rank <= EXAMPLES).order_by(ranked.c.delete_op, ranked.c.rank)):
        examples[op].append({"id": rid, "natural_name": natural_name, "schema_name": schema, "collection": coll})
    batches = set(session.scalars(select(AuditBatch.id).where(AuditBatch.id.in_(ops))))
    items: list[DeletedRecordsResponse] = [
        {"op": r.op, "deleted_at": r.at.isoformat(), "count": r.n,
         "collections": sorted(names[r.op][0]), "schemas": sorted(names[r.op][1]),
         "examples": examples[r.op], "batch_id": r.op if r.op in batches else None,
         "record_id": examples[r.op][0]["id"] if r.n == 1 and examples[r.op] else None}
        for r in rows]
    return {"items": items, "total": total, "offset": offset, "limit": limit}


def purge_deleted(ctx: Ctx, op: str) -> dict[str, int]:
    """Purge every record deletion ``op`` left deleted (in a live collection), as
    ``DELETE /records/{id}/purge`` purges each (:func:`benchbook.domain.history.restore.purge_record`:
    the record and everything below it, a ``purge`` entry each), in one ``purge`` batch.
    Returns ``{purged: n}``, n counting the records below too; 0 when nothing of it is left.

    Raises 409 (``missing``: the body names what does not exist, docs/decisions.md) when no
    record carries ``op`` and it names no history batch; ``Invalid`` (422) when more than
    :data:`PURGE_MAX` records of it are still deleted."""
    s = ctx.session
    op = _op(op)
    rows = s.execute(select(Record.id, Record.parent_id).where(*_still_deleted(), Record.delete_op == op)
                     .limit(PURGE_MAX + 1)).all()
    if not rows and s.get(AuditBatch, op) is None \
            and s.scalar(select(Record.id).where(Record.delete_op == op).limit(1)) is None:
        raise missing(f"no record deletion {op!r}",
                      [error_entry(["body", "op"], "no record deletion has this op", "not_found", op)])
    if len(rows) > PURGE_MAX:
        count = s.scalar(select(func.count()).select_from(Record).where(*_still_deleted(), Record.delete_op == op))
        raise Invalid(f"deletion {op} still holds {count} records; at most {PURGE_MAX} are purged in one request "
                      "(purge its records one by one, or restore it)",
                      [error_entry(["body", "op"], f"more than {PURGE_MAX} records", "too_many", op,
                                   {"max": PURGE_MAX, "count": count})])
    if not rows:
        return {"purged": 0}
    ids = {r.id for r in rows}
    roots = sorted(r.id for r in rows if r.parent_id not in ids)  # what is below a root goes with it
    purged = 0
    with audit.server_batch(ctx, "purge", f"purge {len(rows)} records"):
        for rid in roots:
            # a root may sit below another root (a record between them deleted on its own earlier)
            if s.scalar(select(Record.id).where(Record.id == rid)) is not None:
                purged += purge_record(ctx, rid)
    return {"purged": purged}
