"""Schema rules: create, update, soft delete, restore, purge, unique keys (OpenAPI tag ``schemas``)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.fields import add_field, field_response
from benchbook.domain.catalog.lookup import fields_of, find_schema, refuse_reserved
from benchbook.domain.catalog.naming import check_template
from benchbook.domain.catalog.shapes import (
    FieldTypeResponse,
    RestoreBlocker,
    RestorePlanResponse,
    SchemaResponse,
)
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, NotFound, error_entry, missing
from benchbook.domain.history import entries as audit
from benchbook.domain.records.rows import purge_records
from benchbook.domain.records.uniqueness import first_violation
from benchbook.persistence.tables import (
    CollectionSchema,
    Field,
    Record,
    RecordLink,
    Schema,
    utcnow,
)

EDITABLE = ("label", "description", "display_template")
MAX_DEPTH = 32  # schema chains are walked at most this far up (as the record filters do)


def template_fields(session: Session, schema: Schema, own: set[str] | None = None) -> set[str]:
    """The field names a display template of ``schema`` may use: its own live fields (``own``,
    read when not given) and those of every ancestor schema (inherited fields, issue 14 item 8;
    the nearest owner's value is used, ``docs/filters.md``)."""
    names = set(own) if own is not None else {f.name for f in fields_of(session, schema.id)}
    parent_id, steps = schema.parent_id, 0
    while parent_id is not None and steps < MAX_DEPTH:
        names.update(f.name for f in fields_of(session, parent_id))
        parent = session.get(Schema, parent_id)
        parent_id, steps = (parent.parent_id if parent else None), steps + 1
    return names


def schema_response(session: Session, schema: Schema) -> SchemaResponse:
    """SchemaResponse (every key, the optional ones too): ``fields`` in order, ``unique_keys`` as
    field names, ``parent`` by name."""
    fields = fields_of(session, schema.id)
    names = {f.id: f.name for f in fields}
    parent = session.get(Schema, schema.parent_id) if schema.parent_id else None
    return {
        "id": schema.id, "name": schema.name, "label": schema.label, "description": schema.description,
        "parent": parent.name if parent else None, "display_template": schema.display_template,
        "fields": [field_response(f) for f in fields],
        "unique_keys": [[names[i] for i in key if i in names] for key in schema.unique_keys],
        "deleted_at": schema.deleted_at.isoformat() if schema.deleted_at else None,
        "created_at": schema.created_at.isoformat(), "updated_at": schema.updated_at.isoformat(),
    }


def _identity(schema: Schema) -> dict[str, Any]:
    return {"id": schema.id, "name": schema.name}


def _snapshot(session: Session, schema: Schema) -> dict[str, Any]:
    return dict(schema_response(session, schema))


def list_schemas(session: Session, *, deleted: bool = False) -> list[SchemaResponse]:
    """Live schemas by name, or deleted ones most recently deleted first."""
    if deleted:
        q = select(Schema).where(Schema.deleted_at.is_not(None)).order_by(Schema.deleted_at.desc())
    else:
        q = select(Schema).where(Schema.deleted_at.is_(None)).order_by(Schema.name)
    return [schema_response(session, s) for s in session.scalars(q)]


def field_types() -> list[FieldTypeResponse]:
    """FieldTypeResponse for every field type."""
    return [{"name": t.name, "label": t.label, "description": t.description,
             "restrictions": list(t.restrictions), "operators": list(t.operators)}
            for t in dtypes.FIELD_TYPES.values()]


def _name_free(session: Session, name: str, *, except_id: str | None = None) -> None:
    """Raises ``Invalid`` for a reserved name (:func:`.lookup.refuse_reserved`) and ``Conflict``
    for one a live schema has."""
    refuse_reserved(name, "schema")
    clash = session.scalar(select(Schema.id).where(Schema.name == name, Schema.deleted_at.is_(None),
                                                    Schema.id != (except_id or "")))
    if clash:
        raise Conflict(f"a schema named {name!r} already exists")


def create_schema(ctx: Ctx, body: dict[str, Any]) -> Schema:
    """Create a schema with its ``fields``; raises ``Conflict`` (name taken; a parent, field or
    template placeholder named that does not exist) or ``Invalid`` (bad field)."""
    s = ctx.session
    _name_free(s, body["name"])
    try:
        parent = find_schema(s, body["parent"]) if body.get("parent") else None
    except NotFound:
        raise missing(f"parent schema {body['parent']!r} not found", [
            error_entry(["body", "parent"], "unknown schema", "unknown_schema", body["parent"])]) from None
    schema = Schema(id=ctx.given_id(body), name=body["name"], label=body.get("label"),
                    description=body.get("description"), parent_id=parent.id if parent else None,
                    display_template=body.get("display_template") or None, unique_keys=[])
    s.add(schema)
    s.flush()
    seen: set[str] = set()
    for i, fbody in enumerate(body.get("fields") or []):
        if fbody["name"] in seen:
            raise Invalid(f"field {fbody['name']!r} is listed twice",
                          [error_entry(["body", "fields", i, "name"], "duplicate field name", "duplicate",
                                       fbody["name"])])
        seen.add(fbody["name"])
        add_field(ctx, schema, fbody, position=i, loc_prefix=["body", "fields", i], write_audit=False)
    s.flush()
    check_template(schema.display_template, template_fields(s, schema, seen))
    audit.write(ctx, "create", "schema", schema.id, new=_snapshot(s, schema), schema_id=schema.id)
    return schema


def update_schema(ctx: Ctx, name: str, body: dict[str, Any]) -> Schema:
    """Apply ``rename``/``label``/``description``/``display_template`` (omitted: unchanged;
    ``""`` clears). Raises ``NotFound``, ``Conflict`` (name taken), ``Invalid``."""
    s = ctx.session
    schema = find_schema(s, name)
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    changes = []
    if body.get("rename") and body["rename"] != schema.name:
        _name_free(s, body["rename"], except_id=schema.id)
        old["name"], new["name"] = schema.name, body["rename"]
        schema.name = body["rename"]
    for key in EDITABLE:
        if key in body and body[key] is not None:
            value = body[key] or None
            if value != getattr(schema, key):
                old[key], new[key] = getattr(schema, key), value
                setattr(schema, key, value)
    if "display_template" in new:
        check_template(schema.display_template, template_fields(s, schema))
    if new:
        schema.updated_at = utcnow()
        changes = [{"field": k, "label": k, "dtype": "string", "before": old[k], "after": new[k],
                    "deleted": None} for k in new]
        audit.write(ctx, "update", "schema", schema.id, changes=changes,
                    old={**_identity(schema), **old}, new={**_identity(schema), **new}, schema_id=schema.id)
    return schema


def _live_records(session: Session, schema_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Record).where(
        Record.schema_id == schema_id, Record.deleted_at.is_(None))) or 0


def delete_schema(ctx: Ctx, name: str) -> None:
    """Soft-delete a schema. Raises ``Conflict`` while it has live records or live child schemas."""
    s = ctx.session
    schema = find_schema(s, name)
    count = _live_records(s, schema.id)
    if count:
        raise Conflict(f"schema {schema.name!r} still has {count} live record(s); delete them first")
    kids = [c.name for c in s.scalars(select(Schema).where(Schema.parent_id == schema.id,
                                                            Schema.deleted_at.is_(None)))]
    if kids:
        raise Conflict(f"schema {schema.name!r} has child schema(s) {', '.join(kids)}; delete them first")
    entry = audit.write(ctx, "delete", "schema", schema.id, old=_snapshot(s, schema), schema_id=schema.id)
    schema.deleted_at = utcnow()
    schema.delete_op = entry.id


def restore_plan(session: Session, name: str) -> RestorePlanResponse:
    """RestorePlanResponse for a deleted schema (``records`` is 0: records are never deleted
    together with a schema, which refuses to go while it has live ones)."""
    schema = find_schema(session, name, deleted=None)
    blocked, blocked_by = _restore_blocker(session, schema)
    return {"kind": "schema", "id": schema.id, "name": schema.name, "records": 0,
            "can_restore": schema.deleted_at is not None and blocked is None, "blocked": blocked,
            "blocked_by": blocked_by, "deleted_at": schema.deleted_at.isoformat() if schema.deleted_at else None,
            "schema_name": schema.name, "collection": None, "collection_id": None, "conflict": None,
            "parents_needed": None}


def _restore_blocker(session: Session, schema: Schema) -> tuple[str | None, RestoreBlocker | None]:
    if schema.deleted_at is None:
        return "the schema is not deleted", None
    parent = session.get(Schema, schema.parent_id) if schema.parent_id else None
    if parent is not None and parent.deleted_at is not None:
        return (f"its parent schema {parent.name!r} is deleted; restore it first",
                {"kind": "schema", "id": parent.id, "name": parent.name})
    clash = session.scalar(select(Schema.id).where(Schema.name == schema.name, Schema.deleted_at.is_(None)))
    if clash:
        return f"another schema is now named {schema.name!r}", None
    return None, None


def restore_schema(ctx: Ctx, name: str) -> Schema:
    """Bring a deleted schema back. Raises ``NotFound``, ``Conflict`` (409: the schema is not
    deleted, or its name was taken meanwhile) and ``Invalid`` (422: blocked by its deleted parent
    schema, as a record is blocked by a deleted parent; docs/decisions.md *Status codes*)."""
    try:
        schema = find_schema(ctx.session, name, deleted=True)
    except NotFound:
        find_schema(ctx.session, name)
        raise Conflict(f"schema {name!r} is not deleted: there is nothing to restore") from None
    blocked, blocked_by = _restore_blocker(ctx.session, schema)
    if blocked:
        raise (Invalid if blocked_by else Conflict)(f"cannot restore schema {schema.name!r}: {blocked}")
    schema.deleted_at = None
    schema.delete_op = None
    schema.updated_at = utcnow()
    audit.write(ctx, "restore", "schema", schema.id, old=_identity(schema), new=_identity(schema),
                schema_id=schema.id)
    return schema


def purge_schema(ctx: Ctx, name: str) -> None:
    """Remove a deleted schema for good, with its fields and any (deleted) records of it.
    Raises ``NotFound``, ``Conflict`` (the schema is live, or a schema still nests under it)."""
    s = ctx.session
    try:
        schema = find_schema(s, name, deleted=True)
    except NotFound:
        find_schema(s, name)
        raise Conflict(f"schema {name!r} is live: delete it before purging it") from None
    if s.scalar(select(Schema.id).where(Schema.parent_id == schema.id)):
        raise Conflict(f"schema {schema.name!r} still has child schemas; purge them first")
    purge_records(ctx, list(s.scalars(select(Record).where(Record.schema_id == schema.id))))
    audit.write(ctx, "purge", "schema", schema.id, old=_snapshot(s, schema), schema_id=schema.id)
    s.execute(delete(RecordLink).where(RecordLink.field_id.in_(select(Field.id).where(
        Field.schema_id == schema.id))))
    s.execute(delete(CollectionSchema).where(CollectionSchema.schema_id == schema.id))
    s.execute(delete(Field).where(Field.schema_id == schema.id))
    s.delete(schema)


def set_unique_keys(ctx: Ctx, name: str, keys: list[list[str]]) -> Schema:
    """Replace the schema's uniqueness keys (lists of own field names); the same keys again
    change nothing and write no entry. Raises ``NotFound`` for unknown fields, ``Conflict`` when
    existing live records already break a key (a clash with stored data, docs/decisions.md)."""
    s = ctx.session
    schema = find_schema(s, name)
    by_name = {f.name: f for f in fields_of(s, schema.id)}
    empty = [error_entry(["body", "keys", i], "a key needs at least one field", "empty_key", key)
             for i, key in enumerate(keys) if not key]
    if empty:  # the document says it too (minItems)
        raise Invalid("a unique key needs at least one field", empty)
    unknown = [error_entry(["body", "keys", i, j], f"unknown field {n!r}", "unknown_field", n)
               for i, key in enumerate(keys) for j, n in enumerate(key) if n not in by_name]
    if unknown:
        raise missing("unique keys name unknown fields: " + ", ".join(repr(e["input"]) for e in unknown), unknown)
    new_keys = [list(dict.fromkeys(by_name[n].id for n in key)) for key in keys]
    for key in new_keys:
        clash = first_violation(s, schema, key)
        if clash:
            raise Conflict(f"existing records already break key ({', '.join(k for k in keys[new_keys.index(key)])}):"
                           f" {clash}")
    if new_keys == schema.unique_keys:
        return schema  # nothing changes, so history gets no entry
    before = schema_response(s, schema)["unique_keys"]
    schema.unique_keys = new_keys
    schema.updated_at = utcnow()
    audit.write(ctx, "update", "schema", schema.id,
                changes=[{"field": "unique_keys", "label": "unique_keys", "dtype": "json", "before": before,
                          "after": keys, "deleted": None}],
                old={**_identity(schema), "unique_keys": before}, new={**_identity(schema), "unique_keys": keys},
                schema_id=schema.id)
    return schema


def descendants_of(session: Session, schema: Schema) -> list[Schema]:
    """Live schemas nested (at any depth) under ``schema``."""
    out: list[Schema] = []
    frontier = [schema.id]
    while frontier:
        kids = list(session.scalars(select(Schema).where(Schema.parent_id.in_(frontier),
                                                         Schema.deleted_at.is_(None))))
        out += kids
        frontier = [k.id for k in kids]
    return out

