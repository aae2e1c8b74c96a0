"""What reverting a history entry does to each kind of thing (``entity_type``), in one table
(:data:`KINDS`; NetBox's registry of object types as the model): its table, its attributes as
the API shows them (for a plan of an attribute edit), and how its attributes are put back, how
it is deleted and how it is restored, each through the same domain rules as the API's own
operations. :mod:`benchbook.domain.history.revert` decides what to do; this says how.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from benchbook.domain.catalog import collections as collection_rules
from benchbook.domain.catalog import fields as field_rules
from benchbook.domain.catalog import schemas as schema_rules
from benchbook.domain.catalog import views as view_rules
from benchbook.domain.context import Ctx
from benchbook.domain.errors import NotFound
from benchbook.domain.history.restore import restore_record
from benchbook.domain.records.writes import delete_records, update_record
from benchbook.persistence.tables import Collection, Field, Record, Schema, View

_RENAMED = {"name": "rename"}


@dataclass(frozen=True)
class EntityKind:
    """One ``entity_type``: ``model`` (its table), ``attributes(session, thing)`` (its response
    body; None for a record, whose plan reads its values), ``put_back(ctx, id, targets)`` (set
    ``{attribute or field: value}``), ``delete(ctx, id, force)`` and ``restore(ctx, id)``."""

    model: type[Any]
    attributes: Callable[[Session, Any], dict[str, Any]] | None
    put_back: Callable[[Ctx, str, dict[str, Any]], object]
    delete: Callable[[Ctx, str, bool], object]
    restore: Callable[[Ctx, str], object]


def update_body(targets: dict[str, Any], clear_timezone: bool = False) -> dict[str, Any]:
    """The update body putting ``targets`` back: ``name`` as a rename, a cleared text (``None``:
    the update reads it as "unchanged") as ``""``, and a cleared timezone likewise."""
    body = {_RENAMED.get(k, k): v for k, v in targets.items()}
    for key in ("label", "description", "display_template"):
        if key in body and body[key] is None:
            body[key] = ""
    if clear_timezone and "timezone" in body and body["timezone"] is None:
        body["timezone"] = ""
    return body


def schema_of_field(session: Session, field_id: str) -> str:
    """The name of the schema field ``field_id`` belongs to. Raises ``NotFound``."""
    field = session.get(Field, field_id)
    schema = session.get(Schema, field.schema_id) if field else None
    if field is None or schema is None:
        raise NotFound(f"field {field_id} no longer exists")
    return schema.name


# ------------------------------------------------------------------ records
def _record_put_back(ctx: Ctx, record_id: str, targets: dict[str, Any]) -> None:
    body: dict[str, Any] = {"data": {k: v for k, v in targets.items() if k != "parent_record_id"}}
    if "parent_record_id" in targets:
        body["parent_record_id"] = targets["parent_record_id"]
    update_record(ctx, record_id, body)


def _record_delete(ctx: Ctx, record_id: str, force: bool) -> None:
    rec = ctx.session.get(Record, record_id)
    assert rec is not None
    delete_records(ctx, [rec], force=force, loc=None)  # a revert offers only force


# ------------------------------------------------------------------ schemas
def _schema_attributes(session: Session, schema: Schema) -> dict[str, Any]:
    body: dict[str, Any] = dict(schema_rules.schema_response(session, schema))
    body["field_order"] = [f["name"] for f in body["fields"]]
    return body


def _schema_put_back(ctx: Ctx, schema_id: str, targets: dict[str, Any]) -> None:
    schema = ctx.session.get(Schema, schema_id)
    assert schema is not None
    if "unique_keys" in targets:
        schema_rules.set_unique_keys(ctx, schema.name, targets.pop("unique_keys") or [])
    if "field_order" in targets:
        field_rules.reorder_fields(ctx, schema.name, targets.pop("field_order") or [])
    if targets:
        schema_rules.update_schema(ctx, schema.name, update_body(targets))


# ------------------------------------------------------------------ fields
def _field_put_back(ctx: Ctx, field_id: str, targets: dict[str, Any]) -> None:
    field_rules.update_field(ctx, schema_of_field(ctx.session, field_id), field_id, update_body(targets))


KINDS: dict[str, EntityKind] = {
    "record": EntityKind(Record, None, _record_put_back, _record_delete, restore_record),
    "dataset": EntityKind(
        Collection, lambda session, c: dict(collection_rules.collection_response(session, c)),
        lambda ctx, id_, targets: collection_rules.update_collection(ctx, id_, update_body(targets, clear_timezone=True)),
        lambda ctx, id_, _force: collection_rules.delete_collection(ctx, id_), collection_rules.restore_collection),
    "schema": EntityKind(Schema, _schema_attributes, _schema_put_back,
                         lambda ctx, id_, _force: schema_rules.delete_schema(ctx, id_), schema_rules.restore_schema),
    "view": EntityKind(View, lambda session, v: dict(view_rules.view_response(session, v)),
                       view_rules.revert_attributes,
                       lambda ctx, id_, _force: view_rules.delete_view_by_id(ctx, id_), view_rules.restore_view),
    "field": EntityKind(
        Field, lambda _session, field: dict(field_rules.field_response(field)), _field_put_back,
        lambda ctx, id_, _force: field_rules.delete_field(ctx, schema_of_field(ctx.session, id_), id_),
        lambda ctx, id_: field_rules.restore_field(ctx, schema_of_field(ctx.session, id_), id_)),
}
"""Every ``entity_type`` a history entry names (``dataset`` is a collection: the wire's word)."""
