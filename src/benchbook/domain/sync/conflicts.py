"""A device's sync rows and their resolutions (``GET /remote/conflicts``,
``POST /remote/conflicts/{id}/resolve``, ``resolve-many``; docs/sync.md *Resolving*).

A row lives on the device's own audit entry it is about (``sync``); its id is
``<entry id>.<index>``. Resolutions:

- ``theirs``: keep what the authority has (the device shows it already): the row is closed.
- ``mine`` / ``value``: an ordinary edit of the field to ``yours`` / the given ``value``, synced
  like any edit; 409 when the field changed here since the row was made, unless ``force``.
- ``delete``: for an edit against a delete, let the delete stand: the device deletes the record
  too when it still holds it live.
- ``retry``: send the entry again (after a fix elsewhere): a refused create goes as the record
  now stands.
- ``restore_above``: for an edit that met a delete at the authority, bring the record back here
  with its deleted ancestors (a restore, synced like any) and make the edit again on it.
- ``edited``: not chosen by a person: a sync closes an open ``conflict`` row whose field was
  changed here since (:func:`close_edited`): that newer edit is the answer, and goes as one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, NotFound
from benchbook.domain.history import entries as audit
from benchbook.domain.history import restore
from benchbook.domain.records import writes
from benchbook.domain.records.rows import find_record
from benchbook.domain.sync import catalog, outbox, rows
from benchbook.domain.sync.rows import PARENT
from benchbook.persistence.tables import HAS_ROWS, AuditEntry, Record

TAKES = ("theirs", "mine", "value", "delete", "retry", "restore_above")


def _with_rows(session: Session) -> list[AuditEntry]:
    """The entries holding rows, oldest first: read through the partial index of those alone
    (``ix_audit_entries_rows``, migration 0028), not every sent entry (each has ``sync = []``)."""
    has_rows = HAS_ROWS[session.get_bind().dialect.name]
    return list(session.scalars(select(AuditEntry).where(has_rows).order_by(AuditEntry.id)))


def _listed(entry: AuditEntry, index: int, r: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"{entry.id}.{index}", "entry_id": entry.id, "entity_type": entry.entity_type,
            "entity_id": entry.entity_id, "field": r.get("field"), **rows.shown([r])[0]}


def list_rows(session: Session, *, status: str | None = "open", kind: str | None = None,
              record_id: str | None = None) -> list[dict[str, Any]]:
    """SyncConflict rows (``SyncRow``'s keys plus ``id``, ``entry_id``, ``entity_type``,
    ``entity_id``, ``field``), oldest first, filtered by ``status``, ``kind`` and record."""
    out = []
    for entry in _with_rows(session):
        if record_id and entry.entity_id != record_id.strip().upper():
            continue
        for index, r in enumerate(entry.sync or []):
            if (status is None or r.get("status") == status) and (kind is None or r.get("kind") == kind):
                out.append(_listed(entry, index, r))
    return out


def open_count(session: Session) -> int:
    """Open rows on this device (``GET /remote`` ``open_conflicts``)."""
    return len(list_rows(session))


def _find(session: Session, row_id: str) -> tuple[AuditEntry, int, dict[str, Any]]:
    entry_id, _, index = row_id.strip().upper().partition(".")
    entry = session.get(AuditEntry, entry_id)
    if entry is None or not index.isdigit() or int(index) >= len(entry.sync or []):
        raise NotFound(f"sync row {row_id!r} not found")
    return entry, int(index), dict((entry.sync or [])[int(index)])


def resolve(ctx: Ctx, row_id: str, take: str, *, value: Any = None, force: bool = False) -> dict[str, Any]:
    """Resolve row ``row_id`` by ``take`` (:data:`TAKES`); returns the row as listed. Raises
    ``NotFound``, ``Invalid`` (a take that does not apply to the row's kind, or a row resolved
    already) and ``Conflict`` (``mine``/``value`` when the field changed since, without ``force``).
    The row is checked, the take's change made (:data:`_TAKE_CHANGES`), then the row closed."""
    s = ctx.session
    entry, index, r = _find(s, row_id)
    _check_open(row_id, r, take)
    _TAKE_CHANGES[take](ctx, entry, r, take, value, force)
    r.update(status="resolved", resolution=take)
    kept = list(entry.sync or [])
    kept[index] = r
    s.execute(update(AuditEntry).where(AuditEntry.id == entry.id).values(sync=kept))
    if take == "retry":
        outbox.send_again(s, entry.id)
    return _listed(entry, index, r)


def _check_open(row_id: str, r: dict[str, Any], take: str) -> None:
    """Raise ``Invalid`` when row ``r`` is resolved already (checked first) or ``take`` is not
    one of :data:`TAKES`."""
    if r.get("status") != "open":
        raise Invalid(f"sync row {row_id} is resolved already ({r.get('resolution')})")
    if take not in TAKES:
        raise Invalid(f"take must be one of {', '.join(TAKES)}")


def _take_theirs(ctx: Ctx, entry: AuditEntry, r: dict[str, Any], take: str, value: Any, force: bool) -> None:
    """``theirs``: the device shows the authority's state already; nothing to change."""


def _take_chosen(ctx: Ctx, entry: AuditEntry, r: dict[str, Any], take: str, value: Any, force: bool) -> None:
    """``mine`` / ``value``: set the row's field (a record's) or attribute (a catalog thing's)
    to ``yours`` / ``value``. Raises ``Invalid`` for a row not about one field, ``Conflict``
    (unless ``force``), ``NotFound`` and ``Invalid`` as :func:`_set_field` and
    :func:`_set_attribute` do."""
    if r["kind"] != "conflict" and not (r["kind"] == "rejected" and r.get("field")):
        raise Invalid(f"'{take}' resolves a conflict about one field; this row is {r['kind']!r}")
    chosen = r.get("yours") if take == "mine" else value
    if entry.entity_type == "record":
        _set_field(ctx, entry.entity_id, r, chosen, force=force)
    else:
        _set_attribute(ctx, entry, r, chosen, force=force)


def _take_delete(ctx: Ctx, entry: AuditEntry, r: dict[str, Any], take: str, value: Any, force: bool) -> None:
    """``delete``: the device deletes the record too when it still holds it live. Raises
    ``Invalid`` for a row that is not an edit against a delete."""
    if r["kind"] != "edit_vs_delete":
        raise Invalid("'delete' resolves an edit against a delete")
    rec = ctx.session.get(Record, entry.entity_id)
    if rec is not None and rec.deleted_at is None:
        writes.delete_records(ctx, [rec], force=True)


def _take_retry(ctx: Ctx, entry: AuditEntry, r: dict[str, Any], take: str, value: Any, force: bool) -> None:
    """``retry``: a refused record create takes the record as it now stands (the entry is
    sent again once the row is closed)."""
    if entry.action == "create" and entry.entity_type == "record":
        _as_it_stands(ctx.session, entry)


def _take_restore_above(ctx: Ctx, entry: AuditEntry, r: dict[str, Any], take: str, value: Any,
                        force: bool) -> None:
    """``restore_above``: bring the record back with its deleted ancestors and edit it again.
    Raises ``Invalid`` for a row that is not a record's edit the authority's delete met."""
    if r["kind"] != "edit_vs_delete" or r.get("attempted") != "update" or entry.entity_type != "record":
        raise Invalid("'restore_above' resolves an edit of a record the authority deleted")
    _restore_and_edit(ctx, entry, r.get("changes") or [])


_TakeChange = Callable[[Ctx, AuditEntry, dict[str, Any], str, Any, bool], None]
_TAKE_CHANGES: dict[str, _TakeChange] = {
    "theirs": _take_theirs, "mine": _take_chosen, "value": _take_chosen, "delete": _take_delete,
    "retry": _take_retry, "restore_above": _take_restore_above}
"""The change each of :data:`TAKES` makes before its row is closed: ``(ctx, entry, row, take,
value, force)``."""


def resolve_many(ctx: Ctx, row_ids: list[str], take: str, *, force: bool = False) -> dict[str, Any]:
    """Resolve each of ``row_ids`` by ``take`` in one transaction: ``{resolved, rows}``; the
    first that cannot be resolved raises and nothing is resolved."""
    done = [resolve(ctx, row_id, take, force=force) for row_id in row_ids]
    return {"resolved": len(done), "rows": done}


def _set_field(ctx: Ctx, record_id: str, r: dict[str, Any], value: Any, *, force: bool) -> None:
    rec = find_record(ctx.session, record_id)
    key = str(r.get("field"))
    current = rows.value_of(rec, key)
    if current != r.get("theirs") and not force:
        raise Conflict(f"{r.get('field_label')} changed here since this row was made; pass force to set it anyway")
    if key == PARENT:
        writes.update_record(ctx, record_id, {PARENT: value})
        return
    meta = SchemaCache(ctx.session).meta(rec.schema_id)
    field = meta.by_id.get(str(key))
    if field is None:
        raise Invalid(f"the field {r.get('field_label')!r} no longer exists in this project")
    writes.update_record(ctx, record_id, {"data": {field.name: value}})


def _set_attribute(ctx: Ctx, entry: AuditEntry, r: dict[str, Any], value: Any, *, force: bool) -> None:
    """``mine``/``value`` for a schema, field, collection or view: an ordinary change of the
    attribute, through the catalog's own function."""
    thing = catalog.thing_of(ctx.session, entry.entity_type, entry.entity_id)
    if thing is None:
        raise NotFound(f"the {entry.entity_type} of sync row {entry.id} is no longer here")
    key = str(r.get("field"))
    if catalog.attributes_of(ctx.session, entry.entity_type, thing).get(key) != r.get("theirs") and not force:
        raise Conflict(f"{key} changed here since this row was made; pass force to set it anyway")
    catalog.change(ctx, entry.entity_type, thing, {key: value})


def _as_it_stands(session: Session, entry: AuditEntry) -> None:
    """A refused create sent again carries the record's values as they are now (the fix made
    since): its ``new_data`` takes them."""
    rec = session.get(Record, entry.entity_id)
    if rec is None:
        return
    new = dict(entry.new_data or {})
    new["data"] = dict(rec.data)
    new["parent_record_id"] = rec.parent_id
    session.execute(update(AuditEntry).where(AuditEntry.id == entry.id).values(new_data=new))


def _restore_and_edit(ctx: Ctx, entry: AuditEntry, changes: list[dict[str, Any]]) -> None:
    """Bring the entry's record back with its deleted ancestors, then make the edit again: an
    ordinary edit where this device's values differ from the edit's by now, else the edit
    written again as a new entry (the values are here already; the authority still needs them)."""
    rec = find_record(ctx.session, entry.entity_id, live=None)
    if rec.deleted_at is not None:
        restore.restore_record(ctx, entry.entity_id, with_parents=True)
    meta = SchemaCache(ctx.session).meta(rec.schema_id)
    data = {meta.by_id[c["field"]].name: c.get("after") for c in changes if c.get("field") in meta.by_id}
    if any(rec.data.get(c["field"]) != c.get("after") for c in changes if c.get("field") in meta.by_id):
        writes.update_record(ctx, entry.entity_id, {"data": data})
    elif data:
        audit.write(ctx, "update", "record", entry.entity_id, old=entry.old_data, new=entry.new_data,
                    dataset_id=entry.dataset_id, schema_id=entry.schema_id)


def close_edited(session: Session) -> int:
    """Close, as ``edited``, each open ``conflict`` row whose field no longer holds the
    authority's value here (changed since the row was made: that edit answers it, and goes as
    an ordinary change). Returns how many were closed."""
    closed = 0
    for entry in _with_rows(session):
        if entry.entity_type != "record" or not any(
                r.get("status") == "open" and r.get("kind") == "conflict" for r in entry.sync or []):
            continue
        rec = session.get(Record, entry.entity_id)
        kept = []
        for r in entry.sync or []:
            r = dict(r)
            if rec is not None and r.get("status") == "open" and r.get("kind") == "conflict":
                now = rows.value_of(rec, r.get("field"))
                if now != r.get("theirs"):
                    r.update(status="resolved", resolution="edited")
                    closed += 1
            kept.append(r)
        session.execute(update(AuditEntry).where(AuditEntry.id == entry.id).values(sync=kept))
    return closed
