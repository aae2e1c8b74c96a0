"""A pushed change to a schema, field, collection or view applied at the authority
(docs/sync.md *Merging*): through the catalog's own rules (the same functions as the API), the
thing keeping the id it was made with, an edit merged attribute by attribute like a record's
fields (the entry's before value as the base).

Each catalog entry is the work of one catalog function, so one is called per entry: a
``create`` from the entry's whole snapshot, an ``update`` with the attributes that merge, a
``delete``, ``restore`` or ``purge`` by the thing's id.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.orm import Session

from benchbook.domain.catalog import collections, fields, schemas, views
from benchbook.domain.catalog.lookup import fields_of
from benchbook.domain.context import Ctx
from benchbook.domain.sync.rows import row
from benchbook.persistence.tables import Collection, Field, Schema, View

FIELD_KEYS = ("id", "name", "label", "type", "required", "restrictions", "default")
IDENTITY = {"schema": ("id",), "field": ("id", "schema_name"), "dataset": ("id",), "view": ("id", "schema")}
"""Keys of an entry's columns that say which thing it is, not what changed."""


def thing_of(session: Session, entity_type: str, entity_id: str) -> Any:
    """The schema, field, collection or view ``entity_id`` (``entity_type`` as history names
    it: ``schema``, ``field``, ``dataset``, ``view``), or None."""
    model = {"schema": Schema, "field": Field, "dataset": Collection, "view": View}[entity_type]
    return session.get(model, entity_id)


def attributes_of(session: Session, entity_type: str, thing: Any) -> Mapping[str, Any]:
    """The thing's attributes as its entries write them (a schema's also ``field_order``)."""
    if entity_type == "schema":
        return {**schemas.schema_response(session, thing),
                "field_order": [f.name for f in fields_of(session, thing.id)]}
    if entity_type == "field":
        return fields.field_response(thing)
    if entity_type == "dataset":
        return collections.collection_response(session, thing)
    return views.view_response(session, thing)


def apply(ctx: Ctx, entry: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(status, rows)`` of one catalog entry (wire entry), applied in ``ctx`` (its origin set).
    Raises the catalog's domain errors, which the caller turns into a ``rejected`` row."""
    s, kind, action = ctx.session, entry["entity_type"], entry["action"]
    thing = thing_of(s, kind, entry["entity_id"])
    if action == "create":
        if thing is not None:
            return "merged", []
        _create(ctx, kind, entry)
        return "applied", []
    if thing is None:
        return ("merged", []) if action in ("delete", "purge") else ("deferred", [row(
            "rejected", attempted=action, message=f"the {_word(kind)} is not at the authority: its creation was "
                                                  "refused or it was purged there")])
    if action == "update":
        return _update(ctx, kind, thing, entry)
    deleted = thing.deleted_at is not None
    if action == "delete" and not deleted:
        change(ctx, kind, thing, {"delete": True})
    elif action == "restore" and deleted:
        change(ctx, kind, thing, {"restore": True})
    elif action == "purge":
        change(ctx, kind, thing, {"purge": True})
    else:
        return "merged", []
    return "applied", []


def _word(kind: str) -> str:
    return {"dataset": "collection"}.get(kind, kind)


def _create(ctx: Ctx, kind: str, entry: dict[str, Any]) -> None:
    s, new = ctx.session, entry.get("new_data") or {}
    schema = s.get(Schema, entry["schema_id"]) if entry.get("schema_id") else None
    if kind == "schema":
        body = {k: new.get(k) for k in ("id", "name", "label", "description", "parent", "display_template")}
        body["fields"] = [{k: f.get(k) for k in FIELD_KEYS} for f in new.get("fields") or []]
        schemas.create_schema(ctx, body)
    elif kind == "field":
        fields.create_field(ctx, schema.name if schema else str(new.get("schema_name")),
                            {k: new.get(k) for k in FIELD_KEYS})
    elif kind == "dataset":
        collections.create_collection(ctx, {k: new.get(k) for k in ("id", "name", "description", "scope", "timezone",
                                                                     "schemas")})
    else:
        views.create_view(ctx, schema.name if schema else str(new.get("schema")), {k: new.get(k) for k in (
            "id", "name", "label", "description", "collection", "columns", "filter", "sort", "search", "page_size")})


def _update(ctx: Ctx, kind: str, thing: Any, entry: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    s = ctx.session
    old, new = entry.get("old_data") or {}, entry.get("new_data") or {}
    if thing.deleted_at is not None:
        return "conflict", [row("edit_vs_delete", attempted="update", message=f"the {_word(kind)} was deleted at "
                                "the authority; the edit is kept here",
                                changes=[{"field": k, "label": k, "before": old.get(k), "after": new.get(k)}
                                         for k in new if old.get(k) != new.get(k)])]
    now = attributes_of(s, kind, thing)
    take: dict[str, Any] = {}
    rows, already = [], False
    for key, mine in new.items():
        base = old.get(key)
        if key in IDENTITY[kind] or base == mine:
            continue
        if now.get(key) == mine:
            already = True
        elif now.get(key) == base:
            take[key] = mine
        else:
            rows.append(row("conflict", attempted="update", field=key, field_label=key, yours=mine,
                            theirs=now.get(key), base=base,
                            message=f"both sides changed the {_word(kind)}'s {key}; the authority's is kept"))
    if take:
        change(ctx, kind, thing, take)
    if rows:
        return "conflict", rows
    return ("merged" if already or not take else "applied"), []


def _cleared(value: Any) -> Any:
    """A value set to nothing, as the catalog's update bodies write it (``""`` clears)."""
    return "" if value is None else value


def change(ctx: Ctx, kind: str, thing: Any, take: dict[str, Any]) -> None:
    """Run the one catalog function that makes ``take`` (attribute → value, or ``delete`` /
    ``restore`` / ``purge``) on ``thing``, a schema, field, collection or view (``kind`` as
    history names it: ``schema``, ``field``, ``dataset``, ``view``). The first of ``delete``,
    ``restore``, ``purge`` set wins; otherwise the attributes go as one update (``name`` as its
    ``rename``). Raises the catalog function's domain errors."""
    _CHANGES.get(kind, _CHANGES["view"])(ctx, thing, take)


def _renamed(body: dict[str, Any], take: dict[str, Any]) -> dict[str, Any]:
    """``body`` with ``rename`` set when ``take`` changes the name."""
    if "name" in take:
        body["rename"] = take["name"]
    return body


def _schema_of(ctx: Ctx, thing: Field | View) -> Schema:
    """The schema a field or view belongs to (there always is one)."""
    schema = ctx.session.get(Schema, thing.schema_id)
    assert schema is not None
    return schema


def _change_schema(ctx: Ctx, thing: Schema, take: dict[str, Any]) -> None:
    """A schema's delete, restore or purge; else its unique keys, its field order, or its
    label, description, display template and name (one update), whichever ``take`` holds."""
    name = thing.name
    if take.get("delete"):
        schemas.delete_schema(ctx, name)
    elif take.get("restore"):
        schemas.restore_schema(ctx, name)
    elif take.get("purge"):
        schemas.purge_schema(ctx, name)
    elif "unique_keys" in take:
        schemas.set_unique_keys(ctx, name, take["unique_keys"])
    elif "field_order" in take:
        fields.reorder_fields(ctx, name, take["field_order"])
    else:
        body = {k: _cleared(v) for k, v in take.items() if k in ("label", "description", "display_template")}
        schemas.update_schema(ctx, name, _renamed(body, take))


def _change_field(ctx: Ctx, thing: Field, take: dict[str, Any]) -> None:
    """A field's delete, restore or purge; else one update of its label, required,
    restrictions, default and name."""
    schema = _schema_of(ctx, thing)
    if take.get("delete"):
        fields.delete_field(ctx, schema.name, thing.id)
    elif take.get("restore"):
        fields.restore_field(ctx, schema.name, thing.id)
    elif take.get("purge"):
        fields.purge_field(ctx, schema.name, thing.id)
    else:
        body = {k: (_cleared(v) if k == "label" else v) for k, v in take.items()
                if k in ("label", "required", "restrictions", "default")}
        fields.update_field(ctx, schema.name, thing.id, _renamed(body, take))


def _change_collection(ctx: Ctx, thing: Collection, take: dict[str, Any]) -> None:
    """A collection's delete, restore or purge; else one update of its description, timezone,
    scope, schemas and name."""
    if take.get("delete"):
        collections.delete_collection(ctx, thing.id)
    elif take.get("restore"):
        collections.restore_collection(ctx, thing.id)
    elif take.get("purge"):
        collections.purge_collection(ctx, thing.id)
    else:
        body = {k: (_cleared(v) if k in ("description", "timezone") else v) for k, v in take.items()
                if k in ("description", "timezone", "scope", "schemas")}
        collections.update_collection(ctx, thing.id, _renamed(body, take))


def _change_view(ctx: Ctx, thing: View, take: dict[str, Any]) -> None:
    """A view's delete or restore (a purge does nothing: views are not purged, a deleted view
    is undone by a revert); else one update of its attributes (``views.ATTRIBUTES``) and name."""
    schema = _schema_of(ctx, thing)
    if take.get("delete"):
        views.delete_view(ctx, schema.name, thing.id)
    elif take.get("restore"):
        views.restore_view(ctx, thing.id)
    elif take.get("purge"):
        return
    else:
        body = {k: v for k, v in take.items() if k in views.ATTRIBUTES}
        views.update_view(ctx, schema.name, thing.id, _renamed(body, take))


_CHANGES: dict[str, Callable[[Ctx, Any, dict[str, Any]], None]] = {
    "schema": _change_schema, "field": _change_field, "dataset": _change_collection, "view": _change_view}
"""The change function of each kind; any other kind goes to the view's, as it always has."""
