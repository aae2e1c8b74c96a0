"""Field rules: add, update, soft delete, restore, reorder (OpenAPI tag ``fields``).

A deleted field keeps its values on records (``records.data`` is keyed by field id); they
show as ``deleted_fields`` and come back into ``data`` when the field is restored.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.lookup import fields_of, find_field, find_schema
from benchbook.domain.catalog.naming import rename_in_template
from benchbook.domain.catalog.shapes import FieldResponse, RestorePlanResponse
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, NotFound, error_entry, missing
from benchbook.domain.history import entries as audit
from benchbook.persistence.tables import Field, Record, RecordLink, Schema, utcnow


def field_response(f: Field) -> FieldResponse:
    """FieldResponse: every key, the optional ones too."""
    return {"id": f.id, "name": f.name, "label": f.label, "type": f.type, "required": f.required,
            "restrictions": f.restrictions or {}, "default": f.default, "position": f.position,
            "deleted_at": f.deleted_at.isoformat() if f.deleted_at else None}


def _snapshot(f: Field, schema: Schema) -> dict[str, Any]:
    return {**field_response(f), "schema_name": schema.name}


def _checked_restrictions(ctx: Ctx, type_: str, restrictions: dict[str, Any] | None,
                          loc: list[str | int]) -> dict[str, Any]:
    try:
        out = dtypes.validate_restrictions(type_, restrictions or {})
    except Invalid as exc:
        for e in exc.errors:
            e["loc"] = [*loc, *e["loc"][1:]]
        raise
    target = out.get("schema")
    if target and type_ in dtypes.REFERENCE_TYPES:
        try:
            out["schema"] = find_schema(ctx.session, target).name
        except NotFound:
            raise missing(f"reference target schema {target!r} not found",
                          [error_entry([*loc, "restrictions", "schema"], "unknown schema", "unknown_schema",
                                       target)]) from None
    return out


def _checked_default(type_: str, restrictions: dict[str, Any], default: Any, loc: list[str | int]) -> Any:
    if default is None:
        return None
    try:
        return dtypes.coerce_value(type_, restrictions, default)
    except dtypes.ValueProblem as exc:
        raise Invalid(f"default: {exc}", [error_entry([*loc, "default"], str(exc), exc.type_, default)]) from None


def add_field(ctx: Ctx, schema: Schema, body: dict[str, Any], *, position: int,
              loc_prefix: list[str | int], write_audit: bool = True) -> Field:
    """Add a field from a FieldCreate ``body``; raises ``Conflict`` (name taken) or ``Invalid``."""
    s = ctx.session
    if body["type"] not in dtypes.FIELD_TYPES:
        raise Invalid(f"unknown field type {body['type']!r}",
                      [error_entry([*loc_prefix, "type"], "unknown field type", "enum", body["type"])])
    if s.scalar(select(Field.id).where(Field.schema_id == schema.id, Field.name == body["name"],
                                       Field.deleted_at.is_(None))):
        raise Conflict(f"schema {schema.name!r} already has a field named {body['name']!r}")
    restrictions = _checked_restrictions(ctx, body["type"], body.get("restrictions"), loc_prefix)
    field = Field(id=ctx.given_id(body), schema_id=schema.id, name=body["name"], label=body.get("label"),
                  type=body["type"], required=bool(body.get("required")), restrictions=restrictions,
                  default=_checked_default(body["type"], restrictions, body.get("default"), loc_prefix),
                  position=position)
    s.add(field)
    s.flush()
    if write_audit:
        audit.write(ctx, "create", "field", field.id, new=_snapshot(field, schema), schema_id=schema.id)
    return field


def create_field(ctx: Ctx, schema_name: str, body: dict[str, Any]) -> Field:
    """Append a field to the live schema ``schema_name``."""
    schema = find_schema(ctx.session, schema_name)
    last = ctx.session.scalar(select(func.max(Field.position)).where(Field.schema_id == schema.id))
    field = add_field(ctx, schema, body, position=(last or 0) + 1, loc_prefix=["body"])
    schema.updated_at = utcnow()
    return field


def update_field(ctx: Ctx, schema_name: str, field_name: str, body: dict[str, Any]) -> Field:
    """Apply ``rename``/``label``/``required``/``restrictions``/``default`` (omitted or null:
    unchanged). A rename also renames the field in the schema's display template."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    field = find_field(s, schema, field_name)
    before: Mapping[str, Any] = field_response(field)
    if body.get("rename") and body["rename"] != field.name:
        if s.scalar(select(Field.id).where(Field.schema_id == schema.id, Field.name == body["rename"],
                                           Field.deleted_at.is_(None))):
            raise Conflict(f"schema {schema.name!r} already has a field named {body['rename']!r}")
        schema.display_template = rename_in_template(schema.display_template, field.name, body["rename"])
        field.name = body["rename"]
    if body.get("label") is not None:
        field.label = body["label"] or None
    if body.get("required") is not None:
        field.required = bool(body["required"])
    if body.get("restrictions") is not None:
        field.restrictions = _checked_restrictions(ctx, field.type, body["restrictions"], ["body"])
    if "default" in body and body["default"] is not None:
        field.default = _checked_default(field.type, field.restrictions, body["default"], ["body"])
    after: Mapping[str, Any] = field_response(field)
    changed = [k for k in after if after[k] != before[k]]
    if changed:
        schema.updated_at = utcnow()
        ident = {"id": field.id, "name": field.name, "schema_name": schema.name}
        audit.write(ctx, "update", "field", field.id,
                    changes=[{"field": k, "label": k, "dtype": "json", "before": before[k], "after": after[k],
                              "deleted": None} for k in changed],
                    old={**ident, **{k: before[k] for k in changed}},
                    new={**ident, **{k: after[k] for k in changed}}, schema_id=schema.id)
    return field


def delete_field(ctx: Ctx, schema_name: str, field_name: str) -> None:
    """Soft-delete a field; its values stay on records as ``deleted_fields``. Removes it
    from uniqueness keys (a key left empty goes)."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    field = find_field(s, schema, field_name)
    audit.write(ctx, "delete", "field", field.id, old=_snapshot(field, schema), schema_id=schema.id)
    field.deleted_at = utcnow()
    schema.unique_keys = [k for k in ([i for i in key if i != field.id] for key in schema.unique_keys) if k]
    schema.updated_at = field.deleted_at


def restore_plan(s: Session, schema_name: str, field_name: str) -> RestorePlanResponse:
    """RestorePlanResponse for a deleted field; ``records`` counts records holding a value."""
    schema = find_schema(s, schema_name)
    field = find_field(s, schema, field_name, deleted=None)
    holding = s.scalar(select(func.count()).select_from(Record).where(
        Record.schema_id == schema.id, Record.data[field.id].is_not(None))) or 0
    blocked = _blocker(s, schema, field)
    return {"kind": "field", "id": field.id, "name": field.name, "records": holding,
            "can_restore": blocked is None, "blocked": blocked, "blocked_by": None,
            "deleted_at": field.deleted_at.isoformat() if field.deleted_at else None, "schema_name": schema.name,
            "collection": None, "collection_id": None, "conflict": None, "parents_needed": None}


def _blocker(session: Session, schema: Schema, field: Field) -> str | None:
    if field.deleted_at is None:
        return "the field is not deleted"
    if session.scalar(select(Field.id).where(Field.schema_id == schema.id, Field.name == field.name,
                                                 Field.deleted_at.is_(None))):
        return f"another field is now named {field.name!r}"
    return None


def restore_field(ctx: Ctx, schema_name: str, field_name: str) -> Field:
    """Bring a deleted field back with every value records still hold for it.
    Raises ``NotFound``, ``Conflict`` (the field is not deleted, or its name was taken meanwhile)."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    try:
        field = find_field(s, schema, field_name, deleted=True)
    except NotFound:
        find_field(s, schema, field_name)
        raise Conflict(f"field {field_name!r} of schema {schema.name!r} is not deleted: there is nothing to "
                       "restore") from None
    blocked = _blocker(s, schema, field)
    if blocked:
        raise Conflict(f"cannot restore field {field.name!r}: {blocked}")
    field.deleted_at = None
    schema.updated_at = utcnow()
    ident = {"id": field.id, "name": field.name, "schema_name": schema.name}
    audit.write(ctx, "restore", "field", field.id, old=ident, new=ident, schema_id=schema.id)
    return field


def reorder_fields(ctx: Ctx, schema_name: str, order: list[str]) -> Schema:
    """Set the field order: ``order`` lists every live field (ids or names) exactly once.
    Raises ``NotFound`` for a name or id that is no live field of the schema, ``Conflict`` when
    the live fields are not each listed once (the document refuses a field listed twice)."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    fields = fields_of(s, schema.id)
    lookup = {f.id: f for f in fields} | {f.name: f for f in fields}
    picked = [lookup.get(key) or lookup.get(key.upper()) for key in order]
    unknown = [error_entry(["body", "order", i], "unknown field", "unknown_field", key)
               for i, (key, f) in enumerate(zip(order, picked)) if f is None]
    if unknown:
        raise missing(f"schema {schema.name!r} has no live field " + ", ".join(repr(e["input"]) for e in unknown),
                       unknown)
    if len({f.id for f in picked if f}) != len(order) or len(order) != len(fields):
        raise Conflict(f"order must list every field of the schema exactly once ({len(fields)} live fields)",
                       [error_entry(["body", "order"], "list every field of the schema exactly once",
                                    "not_a_permutation", order)])
    before = [f.name for f in fields]
    for i, f in enumerate(picked):
        assert f is not None
        f.position = i
    after = [f.name for f in picked if f]
    if after != before:
        schema.updated_at = utcnow()
        audit.write(ctx, "update", "schema", schema.id,
                    changes=[{"field": "field_order", "label": "field order", "dtype": "json", "before": before,
                              "after": after, "deleted": None}],
                    old={"id": schema.id, "name": schema.name, "field_order": before},
                    new={"id": schema.id, "name": schema.name, "field_order": after}, schema_id=schema.id)
    return schema


def purge_field(ctx: Ctx, schema_name: str, field_name: str) -> None:
    """Remove a deleted field and the values records keep for it, for good; the ``purge`` entry
    lists the values lost. Raises ``NotFound``, ``Conflict`` (the field is live)."""
    s = ctx.session
    schema = find_schema(s, schema_name, deleted=None)
    try:
        field = find_field(s, schema, field_name, deleted=True)
    except NotFound:
        find_field(s, schema, field_name)
        raise Conflict(f"field {field_name!r} is live: delete it before purging it") from None
    holders = list(s.scalars(select(Record).where(Record.schema_id == schema.id, Record.data[field.id].is_not(None))))
    lost = {r.id: r.data[field.id] for r in holders if field.id in r.data}
    audit.write(ctx, "purge", "field", field.id, old={**_snapshot(field, schema), "values": lost},
                schema_id=schema.id)
    for rec in holders:
        rec.data = {k: v for k, v in rec.data.items() if k != field.id}
    s.execute(delete(RecordLink).where(RecordLink.field_id == field.id))
    s.delete(field)
