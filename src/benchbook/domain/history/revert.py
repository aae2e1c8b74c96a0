"""Reverting one history entry (spec *Audit*: ``GET|POST /audit/{audit_id}/revert``).

What a revert does depends on the entry:

=============  ==========  ==========================================================
entry action   ``kind``    effect
=============  ==========  ==========================================================
update         update      changed fields are put back (through the normal update)
create         delete      the thing is deleted (a record with live children needs force)
restore        delete      the thing is deleted again
delete         restore     the thing is restored (same rules as a restore)
purge          null        nothing can be undone: the thing is gone
=============  ==========  ==========================================================

Field statuses in a plan: ``revert`` (will be put back), ``unchanged`` (already holds the old
value), ``conflict`` (edited since the entry: left alone unless ``force``) and ``cannot``
(the field was deleted since, or the value no longer fits). The revert is itself recorded and
can be reverted.
"""
from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog import collections as collection_rules
from benchbook.domain.catalog import fields as field_rules
from benchbook.domain.catalog import schemas as schema_rules
from benchbook.domain.catalog import views as view_rules
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, NotFound
from benchbook.domain.history.entries import derived, find_entry, record_changes
from benchbook.domain.history.own_values import whole_values
from benchbook.domain.history.restore import record_restore_plan, restore_record
from benchbook.domain.records.writes import delete_records, update_record
from benchbook.persistence.tables import AuditEntry, Collection, Field, Record, Schema, View

STATUSES = ("revert", "unchanged", "conflict", "cannot")
_RENAMED = {"name": "rename"}


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _entry(session: Session, audit_id: str) -> AuditEntry:
    return find_entry(session, audit_id)


def _current_thing(session: Session, entry: AuditEntry) -> Any:
    model = {"record": Record, "dataset": Collection, "schema": Schema, "field": Field,
             "view": View}.get(entry.entity_type)
    return session.get(model, entry.entity_id) if model is not None else None


def _record_fields(session: Session, entry: AuditEntry, rec: Record, only: set[str] | None) -> list[dict[str, Any]]:
    cache = SchemaCache(session)
    meta = cache.meta(rec.schema_id)
    out = []
    whole = whole_values(session, [entry]).get(entry.id)
    for change in (record_changes(entry, cache, whole) if derived(entry) else entry.changes):
        fid = change["field"]
        if fid == "parent_record_id":
            name, current, field = "parent_record_id", rec.parent_id, None
        else:
            field = meta.by_id.get(fid)
            name = field.name if field is not None else fid
            current = rec.data.get(fid)
        if only and name not in only and fid not in only:
            continue
        row = {"field": name, "label": (field.label or field.name) if field else change.get("label"),
               "dtype": field.type if field else change.get("dtype"), "current": current,
               "target": change.get("before"), "status": "revert", "reason": None}
        if fid != "parent_record_id" and (field is None or field.deleted_at is not None):
            row["status"], row["reason"] = "cannot", "the field has been deleted since"
        elif _same(current, change.get("before")):
            row["status"], row["reason"] = "unchanged", "already holds the old value"
        elif not _same(current, change.get("after")):
            row["status"], row["reason"] = "conflict", "edited since this change"
        out.append(row)
    return out


def _attribute_fields(entry: AuditEntry, thing: Any, only: set[str] | None) -> list[dict[str, Any]]:
    out = []
    current_view = _attributes(entry, thing)
    for change in entry.changes:
        key = change["field"]
        if only and key not in only:
            continue
        current = current_view.get(key)
        row = {"field": key, "label": change.get("label") or key, "dtype": change.get("dtype"), "current": current,
               "target": change.get("before"), "status": "revert", "reason": None}
        if _same(current, change.get("before")):
            row["status"], row["reason"] = "unchanged", "already holds the old value"
        elif not _same(current, change.get("after")):
            row["status"], row["reason"] = "conflict", "edited since this change"
        out.append(row)
    return out


def _attributes(entry: AuditEntry, thing: Any) -> dict[str, Any]:
    from sqlalchemy.orm import object_session
    session = object_session(thing)
    assert session is not None
    if entry.entity_type == "dataset":
        return collection_rules.collection_response(session, thing)
    if entry.entity_type == "schema":
        body = schema_rules.schema_response(session, thing)
        body["field_order"] = [f["name"] for f in body["fields"]]
        return body
    if entry.entity_type == "view":
        return view_rules.view_response(session, thing)
    return field_rules.field_response(thing)


def revert_plan(session: Session, audit_id: str, fields: list[str] | None = None) -> dict[str, Any]:
    """RevertPlanResponse: what reverting the entry would do, field by field."""
    entry = _entry(session, audit_id)
    only = set(fields) if fields else None
    plan: dict[str, Any] = {"audit_id": entry.id, "entity_type": entry.entity_type, "entity_id": entry.entity_id,
                            "can_apply": False, "has_conflicts": False, "blocked": None, "blocker": None,
                            "fields": [], "kind": None}
    thing = _current_thing(session, entry)
    if entry.action == "purge" or thing is None:
        plan["blocked"] = "it has been purged for good; nothing can bring it back"
        return plan
    if entry.action == "update":
        plan["kind"] = "update"
        if getattr(thing, "deleted_at", None) is not None:
            plan["blocked"] = f"the {entry.entity_type} is deleted; restore it first"
            plan["blocker"] = {"kind": entry.entity_type, "id": entry.entity_id}
            return plan
        rows = (_record_fields(session, entry, thing, only) if entry.entity_type == "record"
                else _attribute_fields(entry, thing, only))
        plan["fields"] = rows
        plan["has_conflicts"] = any(r["status"] == "conflict" for r in rows)
        plan["can_apply"] = any(r["status"] in ("revert", "conflict") for r in rows)
        if not plan["can_apply"]:
            plan["blocked"] = "nothing to put back: every field already holds its old value or cannot change"
        return plan
    live = getattr(thing, "deleted_at", None) is None
    if entry.action in ("create", "restore"):
        plan["kind"] = "delete"
        plan["can_apply"] = live
        if not live:
            plan["blocked"] = f"the {entry.entity_type} is already deleted"
        return plan
    plan["kind"] = "restore"
    if live:
        plan["blocked"] = f"the {entry.entity_type} is live already"
        return plan
    if entry.entity_type == "record":
        restore = record_restore_plan(session, entry.entity_id)
        plan["can_apply"] = restore["can_restore"]
        plan["blocked"] = restore["blocked"] or (restore["conflict"] or {}).get("message")
        plan["blocker"] = restore["blocked_by"]
        return plan
    plan["can_apply"] = True
    return plan


def apply_revert(ctx: Ctx, audit_id: str, *, force: bool = False, fields: list[str] | None = None) -> dict[str, Any]:
    """Revert the entry; returns RevertResultResponse whose ``audit_id`` is the new entry the revert
    wrote (so the revert can be reverted in turn). Raises ``Invalid`` (422) when blocked or nothing
    applies, ``Conflict`` (409) when every field to put back was edited since and ``force`` is off."""
    s = ctx.session
    plan = revert_plan(s, audit_id, fields)
    entry = _entry(s, audit_id)
    if plan["blocked"] or not plan["can_apply"]:
        raise Invalid(f"cannot revert entry {entry.id}: {plan['blocked'] or 'nothing to do'}")
    applied: list[str] = []
    if plan["kind"] == "update":
        rows = [r for r in plan["fields"] if r["status"] == "revert" or (force and r["status"] == "conflict")]
        if not rows:
            raise Conflict(f"every field of entry {entry.id} was edited since; pass force=true to put them back")
        applied = [r["field"] for r in rows]
        _put_back(ctx, entry, rows)
    elif plan["kind"] == "delete":
        _delete(ctx, entry, force)
    else:
        _restore(ctx, entry)
    s.flush()
    latest = s.scalars(select(AuditEntry).where(AuditEntry.entity_id == entry.entity_id)
                       .order_by(AuditEntry.timestamp.desc(), AuditEntry.id.desc()).limit(1)).one()
    return {"audit_id": latest.id, "entity_id": entry.entity_id, "kind": plan["kind"], "applied": applied}


def _put_back(ctx: Ctx, entry: AuditEntry, rows: list[dict[str, Any]]) -> None:
    targets = {r["field"]: r["target"] for r in rows}
    if entry.entity_type == "record":
        body: dict[str, Any] = {"data": {k: v for k, v in targets.items() if k != "parent_record_id"}}
        if "parent_record_id" in targets:
            body["parent_record_id"] = targets["parent_record_id"]
        update_record(ctx, entry.entity_id, body)
        return
    if entry.entity_type == "schema":
        schema = ctx.session.get(Schema, entry.entity_id)
        assert schema is not None
        if "unique_keys" in targets:
            schema_rules.set_unique_keys(ctx, schema.name, targets.pop("unique_keys") or [])
        if "field_order" in targets:
            field_rules.reorder_fields(ctx, schema.name, targets.pop("field_order") or [])
        if targets:
            schema_rules.update_schema(ctx, schema.name, _update_body(targets))
        return
    if entry.entity_type == "dataset":
        collection_rules.update_collection(ctx, entry.entity_id, _update_body(targets, clear_timezone=True))
        return
    if entry.entity_type == "view":
        view_rules.revert_attributes(ctx, entry.entity_id, targets)
        return
    field_rules.update_field(ctx, _schema_of_field(ctx.session, entry.entity_id), entry.entity_id,
                             _update_body(targets))


def _update_body(targets: dict[str, Any], clear_timezone: bool = False) -> dict[str, Any]:
    body = {_RENAMED.get(k, k): v for k, v in targets.items()}
    for key in ("label", "description", "display_template"):
        if key in body and body[key] is None:
            body[key] = ""
    if clear_timezone and "timezone" in body and body["timezone"] is None:
        body["timezone"] = ""
    return body


def _delete(ctx: Ctx, entry: AuditEntry, force: bool) -> None:
    s = ctx.session
    if entry.entity_type == "record":
        rec = s.get(Record, entry.entity_id)
        assert rec is not None
        delete_records(ctx, [rec], force=force, loc=None)  # a revert offers only force
    elif entry.entity_type == "dataset":
        collection_rules.delete_collection(ctx, entry.entity_id)
    elif entry.entity_type == "schema":
        schema_rules.delete_schema(ctx, entry.entity_id)
    elif entry.entity_type == "view":
        view_rules.delete_view_by_id(ctx, entry.entity_id)
    else:
        field_rules.delete_field(ctx, _schema_of_field(s, entry.entity_id), entry.entity_id)


def _restore(ctx: Ctx, entry: AuditEntry) -> None:
    s = ctx.session
    if entry.entity_type == "record":
        restore_record(ctx, entry.entity_id)
    elif entry.entity_type == "dataset":
        collection_rules.restore_collection(ctx, entry.entity_id)
    elif entry.entity_type == "schema":
        schema_rules.restore_schema(ctx, entry.entity_id)
    elif entry.entity_type == "view":
        view_rules.restore_view(ctx, entry.entity_id)
    else:
        field_rules.restore_field(ctx, _schema_of_field(s, entry.entity_id), entry.entity_id)


def _schema_of_field(session: Session, field_id: str) -> str:
    field = session.get(Field, field_id)
    schema = session.get(Schema, field.schema_id) if field else None
    if field is None or schema is None:
        raise NotFound(f"field {field_id} no longer exists")
    return schema.name
