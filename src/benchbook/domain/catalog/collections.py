"""Collection rules (OpenAPI tag ``collections``; its schemas call a collection a *dataset*:
``DatasetResponse``)."""
from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import (
    ancestors,
    find_collection,
    find_schema,
    refuse_reserved,
    schema_names,
)
from benchbook.domain.catalog.shapes import CollectionResponse, RestorePlanResponse
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, NotFound, error_entry, missing
from benchbook.domain.history import entries as audit
from benchbook.domain.records.rows import (
    lock_collection,
    purge_records,
    record_rows,
    restore_records,
    soft_delete_records,
)
from benchbook.persistence.record_counts import live_counts
from benchbook.persistence.tables import Collection, CollectionSchema, Record, RecordLink, Schema, utcnow

SCOPES = ("local", "global")


def collection_response(session: Session, c: Collection) -> CollectionResponse:
    """DatasetResponse (every key, the optional ones too); ``record_count`` counts live records
    (deleted ones for a deleted collection that would come back with it)."""
    if c.deleted_at is None:  # kept by SQLite, counted by PostgreSQL (persistence.record_counts)
        count = sum(live_counts(session, c.id).values())
    else:
        count = session.scalar(select(func.count()).select_from(Record).where(
            Record.dataset_id == c.id, Record.delete_op == c.delete_op)) or 0
    return {"id": c.id, "name": c.name, "description": c.description, "record_count": count,
            "schemas": schema_names(session, c.id), "scope": c.scope, "timezone": c.timezone,
            "deleted_at": c.deleted_at.isoformat() if c.deleted_at else None,
            "created_at": c.created_at.isoformat(), "updated_at": c.updated_at.isoformat()}


def _snapshot(session: Session, c: Collection) -> dict[str, Any]:
    snap: dict[str, Any] = dict(collection_response(session, c))
    snap.pop("record_count")
    return snap


def list_collections(session: Session, *, deleted: bool = False) -> list[CollectionResponse]:
    """Live collections by name, or deleted ones most recently deleted first."""
    if deleted:
        q = select(Collection).where(Collection.deleted_at.is_not(None)).order_by(Collection.deleted_at.desc())
    else:
        q = select(Collection).where(Collection.deleted_at.is_(None)).order_by(Collection.name)
    return [collection_response(session, c) for c in session.scalars(q)]


def _check_timezone(tz: str) -> str:
    """``tz`` if it names an IANA zone: the rule datetime values are read with (dtypes._zone),
    which refuses the system's ``localtime`` and ``posixrules`` files though zoneinfo reads them."""
    try:
        if tz in ("localtime", "posixrules"):
            raise ValueError(tz)
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise Invalid(f"unknown timezone {tz!r}",
                      [error_entry(["body", "timezone"], "not an IANA timezone name", "timezone", tz)]) from None
    return tz


def _schemas_for(session: Session, names: list[str]) -> list[Schema]:
    """Resolve schema names: ``NotFound`` for unknown ones; a child schema's parent schema must
    be listed too (``Conflict``)."""
    schemas, errors = [], []
    for i, name in enumerate(dict.fromkeys(names)):
        try:
            schemas.append(find_schema(session, name))
        except NotFound:
            errors.append(error_entry(["body", "schemas", i], f"unknown schema {name!r}", "unknown_schema", name))
    if errors:
        raise missing("; ".join(e["msg"] for e in errors), errors)
    listed = {s.id for s in schemas}
    for s in schemas:
        for parent in ancestors(session, s)[:1]:
            if parent.id not in listed:
                errors.append(error_entry(["body", "schemas"], f"schema {s.name!r} nests under {parent.name!r}, "
                                          "which must be listed too", "parent_missing", s.name))
    if errors:
        raise Conflict("; ".join(e["msg"] for e in errors), errors)
    return schemas


def _name_free(session: Session, name: str) -> None:
    """Raises ``Invalid`` for a reserved name (:func:`.lookup.refuse_reserved`) and ``Conflict``
    for one a live collection has."""
    refuse_reserved(name, "collection")
    if session.scalar(select(Collection.id).where(Collection.name == name, Collection.deleted_at.is_(None))):
        raise Conflict(f"a collection named {name!r} already exists")


def _set_schemas(session: Session, c: Collection, schemas: list[Schema]) -> None:
    session.execute(delete(CollectionSchema).where(CollectionSchema.collection_id == c.id))
    for i, s in enumerate(schemas):
        session.add(CollectionSchema(collection_id=c.id, schema_id=s.id, position=i))


def create_collection(ctx: Ctx, body: dict[str, Any]) -> Collection:
    """Create a collection. Raises ``Conflict`` (name taken), ``Invalid`` (schemas, timezone, scope)."""
    s = ctx.session
    _name_free(s, body["name"])
    scope = body.get("scope") or "local"
    tz = _check_timezone(body["timezone"]) if body.get("timezone") else None
    c = Collection(id=ctx.given_id(body), name=body["name"], description=body.get("description"), scope=scope, timezone=tz)
    s.add(c)
    s.flush()
    _set_schemas(s, c, _schemas_for(s, body.get("schemas") or []))
    s.flush()
    audit.write(ctx, "create", "dataset", c.id, new=_snapshot(s, c), dataset_id=c.id)
    return c


def referenced_from_elsewhere(session: Session, c: Collection) -> int:
    """How many live records of other collections reference records of ``c``."""
    target = select(Record.id).where(Record.dataset_id == c.id)
    return session.scalar(
        select(func.count(func.distinct(RecordLink.source_id))).join(Record, Record.id == RecordLink.source_id)
        .where(RecordLink.kind == "record", RecordLink.target_id.in_(target), Record.dataset_id != c.id,
               Record.deleted_at.is_(None))) or 0


def update_collection(ctx: Ctx, name_or_id: str, body: dict[str, Any]) -> Collection:
    """Apply ``description``/``rename``/``schemas``/``scope``/``timezone`` (omitted or null:
    unchanged; ``timezone: ""`` clears). Raises ``Conflict`` when renaming onto a taken name,
    removing a schema that has records here, or making a referenced global collection local."""
    s = ctx.session
    c = find_collection(s, name_or_id)
    before = _snapshot(s, c)
    if body.get("rename") and body["rename"] != c.name:
        _name_free(s, body["rename"])
        c.name = body["rename"]
    if body.get("description") is not None:
        c.description = body["description"] or None
    if body.get("timezone") is not None:
        c.timezone = _check_timezone(body["timezone"]) if body["timezone"] else None
    if body.get("scope") is not None and body["scope"] != c.scope:
        _change_scope(s, c, body["scope"])
    if body.get("schemas") is not None:
        _replace_schemas(s, c, body["schemas"])
    s.flush()
    _audit_update(ctx, c, before, _snapshot(s, c))
    return c


def _change_scope(session: Session, c: Collection, scope: str) -> None:
    """Set ``c.scope`` to ``scope`` (``"local"`` or ``"global"``). Raises ``Conflict`` when ``c`` would become
    local while live records of other collections reference its records."""
    if scope == "local":
        refs = referenced_from_elsewhere(session, c)
        if refs:
            raise Conflict(f"collection {c.name!r} cannot become local: {refs} record(s) in other "
                           "collections reference its records")
    c.scope = scope


def _replace_schemas(session: Session, c: Collection, names: list[str]) -> None:
    """Make ``names`` (schema names or ids, in order) ``c``'s schemas. Raises as :func:`_schemas_for` does, and
    ``Conflict`` for the first schema dropped that still has live records in ``c``."""
    new = _schemas_for(session, names)
    kept = {x.id for x in new}
    current = session.scalars(select(Schema).join(CollectionSchema).where(CollectionSchema.collection_id == c.id))
    for removed in [x for x in current if x.id not in kept]:
        n = session.scalar(select(func.count()).select_from(Record).where(
            Record.dataset_id == c.id, Record.schema_id == removed.id, Record.deleted_at.is_(None)))
        if n:
            raise Conflict(f"schema {removed.name!r} cannot be removed from collection {c.name!r}: "
                           f"it has {n} record(s) there")
    _set_schemas(session, c, new)


def _audit_update(ctx: Ctx, c: Collection, before: dict[str, Any], after: dict[str, Any]) -> None:
    """One ``update`` audit entry listing the attributes whose snapshot changed from ``before`` to ``after``
    (``updated_at`` aside), and ``c.updated_at`` set; nothing when none did."""
    changed = [k for k in after if k not in ("updated_at",) and after[k] != before[k]]
    if changed:
        c.updated_at = utcnow()
        ident = {"id": c.id, "name": c.name}
        audit.write(ctx, "update", "dataset", c.id,
                    changes=[{"field": k, "label": k, "dtype": "json", "before": before[k], "after": after[k],
                              "deleted": None} for k in changed],
                    old={**ident, **{k: before[k] for k in changed}}, new={**ident, **{k: after[k] for k in changed}},
                    dataset_id=c.id)


def delete_collection(ctx: Ctx, name_or_id: str) -> None:
    """Soft-delete a collection and its live records together (one delete batch)."""
    s = ctx.session
    c = find_collection(s, name_or_id)
    if not lock_collection(s, c.id, share=False):  # creates in it wait, then find it deleted
        raise NotFound(f"collection {name_or_id!r} not found")
    with audit.server_batch(ctx, "delete", f"collection {c.name}") as batch_id:
        audit.write(ctx, "delete", "dataset", c.id, old=_snapshot(s, c), dataset_id=c.id)
        records = record_rows(s, Record.dataset_id == c.id, Record.deleted_at.is_(None), data=False)
        soft_delete_records(ctx, records, op=batch_id)
        c.deleted_at = utcnow()
        c.delete_op = batch_id


def restore_plan(session: Session, name_or_id: str) -> RestorePlanResponse:
    """RestorePlanResponse: ``records`` counts the records deleted together with it."""
    c = find_collection(session, name_or_id, deleted=None)
    blocked = _blocker(session, c)
    count = session.scalar(select(func.count()).select_from(Record).where(
        Record.dataset_id == c.id, Record.delete_op == c.delete_op)) if c.delete_op else 0
    return {"kind": "collection", "id": c.id, "name": c.name, "records": count or 0,
            "can_restore": blocked is None, "blocked": blocked, "blocked_by": None,
            "collection": c.name, "collection_id": c.id, "conflict": None,
            "deleted_at": c.deleted_at.isoformat() if c.deleted_at else None, "parents_needed": None,
            "schema_name": None}


def _blocker(session: Session, c: Collection) -> str | None:
    if c.deleted_at is None:
        return "the collection is not deleted"
    if session.scalar(select(Collection.id).where(Collection.name == c.name, Collection.deleted_at.is_(None))):
        return f"another collection is now named {c.name!r}"
    return None


def restore_collection(ctx: Ctx, name_or_id: str) -> Collection:
    """Bring a deleted collection back with exactly the records deleted together with it.
    Raises ``NotFound``, ``Conflict`` (the collection is not deleted, or its name was taken meanwhile)."""
    s = ctx.session
    try:
        c = find_collection(s, name_or_id, deleted=True)
    except NotFound:
        find_collection(s, name_or_id)
        raise Conflict(f"collection {name_or_id!r} is not deleted: there is nothing to restore") from None
    blocked = _blocker(s, c)
    if blocked:
        raise Conflict(f"cannot restore collection {c.name!r}: {blocked}")
    with audit.server_batch(ctx, "restore", f"collection {c.name}"):
        records = list(s.scalars(select(Record).where(Record.dataset_id == c.id, Record.delete_op == c.delete_op)))
        c.deleted_at = None
        c.delete_op = None
        c.updated_at = utcnow()
        ident = {"id": c.id, "name": c.name}
        audit.write(ctx, "restore", "dataset", c.id, old=ident, new=ident, dataset_id=c.id)
        restore_records(ctx, records)
    return c


def purge_collection(ctx: Ctx, name_or_id: str) -> None:
    """Remove a deleted collection and all its records for good (``purge`` entries list the
    values lost). Raises ``NotFound``, ``Conflict`` (the collection is still live)."""
    s = ctx.session
    try:
        c = find_collection(s, name_or_id, deleted=True)
    except NotFound:
        find_collection(s, name_or_id)
        raise Conflict(f"collection {name_or_id!r} is live: delete it before purging it") from None
    with audit.server_batch(ctx, "purge", f"collection {c.name}"):
        purge_records(ctx, list(s.scalars(select(Record).where(Record.dataset_id == c.id))))
        audit.write(ctx, "purge", "dataset", c.id, old=_snapshot(s, c), dataset_id=c.id)
        s.execute(delete(CollectionSchema).where(CollectionSchema.collection_id == c.id))
        s.delete(c)
