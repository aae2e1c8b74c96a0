"""Reverting one history entry (OpenAPI ``GET|POST /audit/{audit_id}/revert``).

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

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid
from benchbook.domain.history.entity_kinds import KINDS
from benchbook.domain.history.entries import derived, find_entry, record_changes
from benchbook.domain.history.own_values import whole_values
from benchbook.domain.history.restore import record_restore_plan
from benchbook.persistence.tables import AuditEntry, Record

STATUSES = ("revert", "unchanged", "conflict", "cannot")


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _entry(session: Session, audit_id: str) -> AuditEntry:
    return find_entry(session, audit_id)


def _current_thing(session: Session, entry: AuditEntry) -> Any:
    kind = KINDS.get(entry.entity_type)
    return session.get(kind.model, entry.entity_id) if kind is not None else None


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
    attributes = KINDS[entry.entity_type].attributes
    assert session is not None and attributes is not None
    return attributes(session, thing)


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
        KINDS[entry.entity_type].put_back(ctx, entry.entity_id, {r["field"]: r["target"] for r in rows})
    elif plan["kind"] == "delete":
        KINDS[entry.entity_type].delete(ctx, entry.entity_id, force)
    else:
        KINDS[entry.entity_type].restore(ctx, entry.entity_id)
    s.flush()
    latest = s.scalars(select(AuditEntry).where(AuditEntry.entity_id == entry.entity_id)
                       .order_by(AuditEntry.timestamp.desc(), AuditEntry.id.desc()).limit(1)).one()
    return {"audit_id": latest.id, "entity_id": entry.entity_id, "kind": plan["kind"], "applied": applied}
