"""History: writing audit entries and batches, and reading them back.

Every change writes one :class:`AuditEntry` in the change's own transaction (docs/architecture.md
*How history is written*; OpenAPI ``AuditLogResponse``). Record values inside entries are keyed by
field id, so history survives a field rename; ``changes`` carry the field's label and dtype.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, func, literal_column, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Invalid, NotFound
from benchbook.domain.history.own_values import whole_values
from benchbook.domain.history.shapes import (
    AuditBatchResponse,
    AuditChange,
    AuditEventResponse,
    AuditLogResponse,
    PaginatedAuditLogResponse,
)
from benchbook.domain.history.value_labels import value_labels
from benchbook.domain.ids import new_id, resolve_prefix
from benchbook.domain.records.rows import value_changes
from benchbook.domain.sync import rows as sync_rows
from benchbook.persistence.tables import AuditBatch, AuditEntry, Field, Record, utcnow

ACTIONS = ("create", "update", "delete", "restore", "purge")
ENTITY_TYPES = ("record", "schema", "field", "dataset", "view")
BATCH_KINDS = ("import", "delete", "restore", "purge", "workflow", "update")


def write(ctx: Ctx, action: str, entity_type: str, entity_id: str, *,
          changes: list[dict[str, Any]] | None = None, old: dict[str, Any] | None = None,
          new: dict[str, Any] | None = None, dataset_id: str | None = None,
          schema_id: str | None = None) -> AuditEntry:
    """Add one audit entry to ``ctx.session`` (flushed with the change's transaction).

    ``changes``: ``[{field, label, dtype, before, after, deleted}]`` in schema order;
    ``old``/``new``: ``AuditLogResponse``'s ``old_data``/``new_data``. While sync applies a change made
    elsewhere (``ctx.origin``), the entry takes that change's id, actor, time, batch and device.
    """
    origin = ctx.entry_origin()
    entry = AuditEntry(id=new_id(), action=action, entity_type=entity_type, entity_id=entity_id,
                       timestamp=utcnow(), actor=ctx.actor, changes=changes or [], old_data=old,
                       new_data=new, batch_id=ctx.batch_id, request_id=ctx.request_id,
                       dataset_id=dataset_id, schema_id=schema_id)
    if origin is not None:  # a change made elsewhere, applied by sync: its entry as it was made
        entry.id, entry.actor, entry.timestamp = origin.entry_id, origin.actor, origin.timestamp
        entry.device, entry.seq, entry.batch_id = origin.device, origin.seq, origin.batch_id
    ctx.session.add(entry)  # its flush notes it for the batch figures (history.batch_figures)
    return entry


def open_batch(ctx: Ctx, kind: str, label: str | None = None, ref: str | None = None) -> AuditBatch:
    """Create a batch (OpenAPI ``AuditBatchResponse``); ``kind`` one of ``BATCH_KINDS``."""
    batch = AuditBatch(id=new_id(), kind=kind, label=label, ref=ref, actor=ctx.actor, created_at=utcnow())
    ctx.session.add(batch)
    return batch


@contextmanager
def server_batch(ctx: Ctx, kind: str, label: str | None = None) -> Iterator[str]:
    """Group the changes made inside into one batch: the client's (``X-Service-Batch``) when
    one is open, else a new server batch of ``kind``. Yields the batch id."""
    if ctx.batch_id:
        yield ctx.batch_id
        return
    batch = open_batch(ctx, kind, label)
    ctx.batch_id = batch.id
    try:
        yield batch.id
    finally:
        ctx.batch_id = None


def get_batch(session: Session, batch_id: str) -> AuditBatch:
    """The batch whose id is exactly ``batch_id`` (a client batch a request joins); raises
    ``NotFound``."""
    batch = session.get(AuditBatch, batch_id)
    if batch is None:
        raise NotFound(f"batch {batch_id} not found")
    return batch


def find_batch(session: Session, batch_id: str) -> AuditBatch:
    """The batch ``batch_id`` names: its whole id, a unique prefix or its last 8 characters
    (:func:`benchbook.domain.ids.resolve_prefix`, as record ids). Raises ``NotFound``, or
    ``Invalid`` (422) for a prefix several batches share."""
    batch = session.get(AuditBatch, resolve_prefix(session, AuditBatch, batch_id, what="batch"))
    assert batch is not None
    return batch


def find_entry(session: Session, audit_id: str) -> AuditEntry:
    """The history entry ``audit_id`` names: its whole id, a unique prefix or its last 8
    characters (what ``--table`` shows). Raises ``NotFound``, or ``Invalid`` (422) for a prefix
    several entries share (the entries of one batch share their time prefix)."""
    entry = session.get(AuditEntry, resolve_prefix(session, AuditEntry, audit_id, what="audit entry"))
    assert entry is not None
    return entry


def batch_response(batch: AuditBatch) -> AuditBatchResponse:
    """``batch`` as AuditBatchResponse: ``label`` and ``ref`` always present (None when not given)."""
    return {"id": batch.id, "kind": batch.kind, "created_at": batch.created_at.isoformat(),
            "label": batch.label, "ref": batch.ref}


def parse_since(since: str | None) -> datetime | None:
    """Parse the ``since`` parameter (ISO 8601; no zone = UTC). Raises ``Invalid``."""
    if not since:
        return None
    try:
        value = datetime.fromisoformat(since.strip())
    except ValueError:
        raise Invalid(f"since: {since!r} is not an ISO 8601 date or date-time") from None
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-05:00 is in year 10000 in UTC: later than every entry
        return datetime(9999, 12, 31, tzinfo=UTC)


def _entity_types(types: tuple[str, ...]) -> ColumnElement[bool]:
    """``entity_type`` among ``types``, the known ones written as SQL constants, so that the
    planners see the partial indexes' conditions (``entity_type IN ('schema', 'field')``,
    ``entity_type = 'dataset'``) and use them."""
    if not set(types) <= set(ENTITY_TYPES):
        return AuditEntry.entity_type.in_(types)
    if len(types) == 1:
        return AuditEntry.entity_type == literal_column(f"'{types[0]}'")
    return AuditEntry.entity_type.in_([literal_column(f"'{t}'") for t in types])


def scope(*, entity_id: str | None = None, entity_types: tuple[str, ...] = (), batch_id: str | None = None,
          schema_id: str | None = None, dataset_id: str | None = None) -> list[ColumnElement[bool]]:
    """Conditions for :func:`list_entries`: entries of one entity (id, any case), of these entity
    types, in one batch, or filed under a schema or a collection; each given one must hold."""
    conds: list[ColumnElement[bool]] = []
    if entity_id:
        conds.append(AuditEntry.entity_id == entity_id.strip().upper())
    if entity_types:
        conds.append(_entity_types(entity_types))
    if batch_id:
        conds.append(AuditEntry.batch_id == batch_id)
    if schema_id:
        conds.append(AuditEntry.schema_id == schema_id)
    if dataset_id:
        conds.append(AuditEntry.dataset_id == dataset_id)
    return conds


def list_entries(session: Session, conds: list[ColumnElement[bool]], *, action: str | None,
                 since: str | None, sort: str | None, limit: int, offset: int) -> PaginatedAuditLogResponse:
    """A page of entries matching ``conds`` (from :func:`scope`) and the shared list parameters
    (OpenAPI: ``GET /audit``).

    ``sort``: ``timestamp`` or ``action`` with optional ``:asc``/``:desc``; newest first by
    default. Returns the paginated wrapper ``{items, total, offset, limit}``
    (PaginatedAuditLogResponse).
    """
    conds = list(conds)
    if action:
        conds.append(AuditEntry.action == action)
    since_at = parse_since(since)
    if since_at is not None:
        conds.append(AuditEntry.timestamp >= since_at)
    column, _, direction = (sort or "timestamp:desc").partition(":")
    col = AuditEntry.action if column == "action" else AuditEntry.timestamp
    order = [col.asc(), AuditEntry.id.asc()] if direction == "asc" else [col.desc(), AuditEntry.id.desc()]
    total = session.scalar(select(func.count()).select_from(AuditEntry).where(*conds)) or 0
    rows = session.scalars(select(AuditEntry).where(*conds).order_by(*order).limit(limit).offset(offset)).all()
    return {"items": entry_responses(session, list(rows)), "total": total, "offset": offset, "limit": limit}


def get_entry(session: Session, audit_id: str) -> AuditLogResponse:
    """One entry (named as :func:`find_entry` takes it) as AuditLogResponse; raises ``NotFound``
    or ``Invalid`` (an ambiguous prefix)."""
    return entry_responses(session, [find_entry(session, audit_id)])[0]


class _NoFields:
    """What :func:`value_changes` needs of a schema whose fields are gone (purged)."""

    change_fields: tuple[tuple[str, str, str, bool], ...] = ()
    change_ids: frozenset[str] = frozenset()


def derived(entry: AuditEntry) -> bool:
    """True when ``entry``'s ``changes`` are worked out from its values rather than stored: a
    record entry with no stored changes (for a create of no values or a restore that derives
    ``[]`` as well)."""
    return entry.entity_type == "record" and not entry.changes


def record_changes(entry: AuditEntry, cache: SchemaCache, whole: dict[str, Any] | None = None) -> list[AuditChange]:
    """The AuditChange rows of record entry ``entry`` when its ``changes`` are not stored
    (:func:`derived`): a parent change first (an ``update`` whose ``parent_record_id`` differs
    before and after), then every field id whose value differs between ``old_data.data`` and
    ``new_data.data`` (absent = null), in schema order, exactly as the writer's
    :func:`value_changes` lists them. ``cache`` supplies the schema's fields; ``whole``, when
    given, is the entry's ``{"old_data", "new_data"}`` made whole (:func:`.own_values.whole_values`:
    values that are still the record's own)."""
    whole = whole or {"old_data": entry.old_data, "new_data": entry.new_data}
    old, new = whole["old_data"] or {}, whole["new_data"] or {}
    out: list[AuditChange] = []
    if entry.action == "update" and old.get("parent_record_id") != new.get("parent_record_id"):
        out.append({"field": "parent_record_id", "label": "parent", "dtype": "reference",
                    "before": old.get("parent_record_id"), "after": new.get("parent_record_id"), "deleted": None})
    try:
        meta = cache.meta(entry.schema_id) if entry.schema_id else cast(SchemaMeta, _NoFields)
    except NotFound:
        meta = cast(SchemaMeta, _NoFields)
    return out + value_changes(meta, old.get("data") or {}, new.get("data") or {})


def entry_changes(session: Session, entries: list[AuditEntry],
                  whole: dict[str, dict[str, Any]] | None = None) -> dict[str, list[AuditChange]]:
    """Each entry's AuditChange rows by entry id: derived (:func:`record_changes`) or stored,
    the stored ones of record fields with their label and ``deleted`` as the field is now.
    ``whole``: :func:`.own_values.whole_values` of ``entries`` when already read."""
    cache = SchemaCache(session)
    whole = whole_values(session, entries) if whole is None else whole
    field_ids = {c.get("field") for e in entries if e.entity_type == "record" for c in e.changes}
    fields = {f.id: f for f in session.scalars(select(Field).where(Field.id.in_(field_ids)))} if field_ids else {}
    out: dict[str, list[AuditChange]] = {}
    for e in entries:
        if derived(e):
            out[e.id] = record_changes(e, cache, whole.get(e.id))
            continue
        changes: list[AuditChange] = []
        for stored in e.changes:  # the stored JSON rows, each an AuditChange
            c: AuditChange = stored.copy()  # a dict, copied as dict(c) would
            f = fields.get(str(c.get("field"))) if e.entity_type == "record" else None
            if f is not None:
                c["label"] = f.label or f.name
                c["deleted"] = f.deleted_at is not None
            changes.append(c)
        out[e.id] = changes
    return out


def entry_responses(session: Session, entries: list[AuditEntry]) -> list[AuditLogResponse]:
    """Shape entries as AuditLogResponse: changes (:func:`entry_changes`), ``now`` and
    ``value_labels`` (:func:`.value_labels.value_labels`) in a few queries for the whole list."""
    whole = whole_values(session, entries)
    every_changes = entry_changes(session, entries, whole)
    labels = value_labels(session, every_changes)
    record_ids = {e.entity_id for e in entries if e.entity_type == "record"}
    records = ({r.id: r for r in session.scalars(select(Record).where(Record.id.in_(record_ids)))}
               if record_ids else {})
    out: list[AuditLogResponse] = []
    for e in entries:
        changes = every_changes[e.id]
        body: AuditLogResponse = {
            "id": e.id, "action": e.action, "entity_type": e.entity_type, "entity_id": e.entity_id,
            "timestamp": e.timestamp.isoformat(), "actor": e.actor, "changes": changes, "device": e.device}
        made_whole = whole.get(e.id)
        if made_whole is None:  # the stored values, in the order the answer has always had
            body["new_data"], body["old_data"] = e.new_data, e.old_data
        else:
            body["old_data"], body["new_data"] = made_whole["old_data"], made_whole["new_data"]
        body["now"] = _now(e, records) if e.entity_type == "record" else None
        body["sync"], body["batch_id"] = sync_rows.shown(e.sync), e.batch_id
        body["value_labels"] = labels.get(e.id, {})
        out.append(body)
    return out


def _now(entry: AuditEntry, records: dict[str, Record]) -> dict[str, Any]:
    """Where the record is now: ``live``, ``edited`` (changed since the entry), ``deleted``
    or ``purged``; with ``at`` the time of that state when known."""
    rec = records.get(entry.entity_id)
    if rec is None:
        return {"state": "purged", "at": None}
    if rec.deleted_at is not None:
        return {"state": "deleted", "at": rec.deleted_at.isoformat()}
    if rec.updated_at > entry.timestamp:
        return {"state": "edited", "at": rec.updated_at.isoformat()}
    return {"state": "live", "at": None}


def batch_devices(session: Session, batch_ids: list[str]) -> dict[str, str | None]:
    """``{batch id: device}``: the device the batch's changes came through (the OpenAPI
    document's ``AuditEventResponse.device``, as for an entry; docs/sync.md *What travels*), None
    for one made here. A batch is one operation made in one place, so one entry of it tells (one
    index lookup per batch, whatever its size)."""
    if not batch_ids:
        return {}
    one = (select(AuditEntry.device).where(AuditEntry.batch_id == AuditBatch.id).limit(1)
           .correlate(AuditBatch).scalar_subquery())
    rows = session.execute(select(AuditBatch.id, one).where(AuditBatch.id.in_(batch_ids)))
    return {batch_id: device for batch_id, device in rows}


def batch_event(session: Session, batch_id: str) -> AuditEventResponse:
    """AuditEventResponse for a batch: its changes counted by action and entity type (``parts``)."""
    batch = find_batch(session, batch_id)
    rows = session.execute(select(AuditEntry.action, AuditEntry.entity_type, func.count(), func.max(AuditEntry.timestamp))
                           .where(AuditEntry.batch_id == batch.id)
                           .group_by(AuditEntry.action, AuditEntry.entity_type)
                           .order_by(AuditEntry.entity_type, AuditEntry.action)).all()
    latest = max((r[3] for r in rows), default=batch.created_at)
    return {"id": batch.id, "kind": "batch", "timestamp": latest.isoformat(), "count": sum(r[2] for r in rows),
            "actor": batch.actor, "device": batch_devices(session, [batch.id]).get(batch.id), "entry": None,
            "batch": batch_response(batch),
            "parts": [{"action": a, "entity_type": e, "count": n} for a, e, n, _ in rows]}
