"""Saved views (issue 16 item 2; docs/decisions.md *Storage*: each change to a view is an
audit entry).

A view is what a schema's records table shows, saved under a name: ``columns`` (own fields,
base columns, inherited fields and ``ref.target`` columns, as ``GET
/collections/{name}/records?columns=`` takes them), a ``filter`` tree, ``sort`` keys, ``search``
text and a ``page_size``. It belongs to one schema and optionally one collection (``collection``
null: the view is offered wherever the schema's records are listed). Names are unique among the
schema's live views. Deletes are soft; a delete is undone by reverting its audit entry (the
generic ``POST /audit/{audit_id}/revert``), as is every create and update.

Every part is checked with the code the record list uses, so a saved view always lists:
the filter with :func:`benchbook.domain.records.filters.compile_filter`, the sort with
:meth:`RecordQuery.order_by`, derived columns with :func:`check_columns`. A view for the schema
everywhere is checked against each live collection that holds the schema (its leaves may name
that collection's other schemas); when none does yet, against the schema alone.
"""
from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import (
    SchemaCache,
    find_collection,
    find_named,
    find_schema,
    schema_names,
)
from benchbook.domain.catalog.shapes import ViewResponse
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, NotFound, error_entry, missing
from benchbook.domain.history import entries as audit
from benchbook.domain.ids import new_id
from benchbook.domain.records.derived import check_columns
from benchbook.domain.records.filters import ancestor_metas, compile_filter, resolve_field
from benchbook.domain.records.queries import BASE_SORTS, RecordQuery, not_an_ancestor
from benchbook.persistence.tables import Collection, CollectionSchema, Schema, View, utcnow

#: Columns every record has (``RecordResponse`` keys), allowed in ``columns`` besides fields.
BASE_COLUMNS = ("id", "natural_name", "schema_name", "parent_record_id", "created_at", "updated_at")
#: The view's attributes an update can change (the audit ``changes`` keys, in this order).
ATTRIBUTES = ("name", "label", "description", "collection", "columns", "filter", "sort", "search", "page_size")


def view_response(session: Session, v: View) -> ViewResponse:
    """ViewResponse: ``{id, name, label, description, schema, collection, columns, filter, sort,
    search, page_size, created_at, updated_at, deleted_at}`` (``schema``/``collection`` are names)."""
    schema = session.get(Schema, v.schema_id)
    collection = session.get(Collection, v.dataset_id) if v.dataset_id else None
    return {"id": v.id, "name": v.name, "label": v.label, "description": v.description,
            "schema": schema.name if schema else None, "collection": collection.name if collection else None,
            "columns": list(v.columns or []), "filter": v.filter, "sort": list(v.sort or []), "search": v.search,
            "page_size": v.page_size, "created_at": v.created_at.isoformat(), "updated_at": v.updated_at.isoformat(),
            "deleted_at": v.deleted_at.isoformat() if v.deleted_at else None}


def _snapshot(session: Session, v: View) -> dict[str, Any]:
    body: dict[str, Any] = dict(view_response(session, v))
    for key in ("created_at", "updated_at", "deleted_at"):
        body.pop(key)
    return body


def list_views(session: Session, schema_name: str | None = None) -> list[ViewResponse]:
    """Live views, by schema name then view name; only ``schema_name``'s when given (404 unknown)."""
    q = (select(View).join(Schema, Schema.id == View.schema_id)
         .where(View.deleted_at.is_(None), Schema.deleted_at.is_(None)).order_by(Schema.name, View.name))
    if schema_name is not None:
        q = q.where(View.schema_id == find_schema(session, schema_name).id)
    return [view_response(session, v) for v in session.scalars(q)]


def find_view(session: Session, schema: Schema, name_or_id: str, *, deleted: bool | None = False) -> View:
    """The schema's view named (or with id) ``name_or_id``; raises ``NotFound``."""
    return find_named(session, View, name_or_id, deleted=deleted,  # type: ignore[no-any-return]
                      what=f"view of schema {schema.name!r}", where=(View.schema_id == schema.id,))


def _name_free(session: Session, schema: Schema, name: str, *, but: str | None = None) -> None:
    conds: list[ColumnElement[bool]] = [View.schema_id == schema.id, View.name == name, View.deleted_at.is_(None)]
    if but is not None:
        conds.append(View.id != but)
    if session.scalar(select(View.id).where(*conds)):
        raise Conflict(f"schema {schema.name!r} already has a view named {name!r}")


def _collection(session: Session, schema: Schema, name: str | None) -> Collection | None:
    if name is None:
        return None
    try:
        c = find_collection(session, name)
    except NotFound:
        raise missing(f"unknown collection {name!r}", [error_entry(["body", "collection"], "unknown collection",
                                                                   "unknown_collection", name)]) from None
    if schema.name not in schema_names(session, c.id):
        raise Conflict(f"collection {c.name!r} is not for schema {schema.name!r}",
                       [error_entry(["body", "collection"], "schema not in this collection", "schema", name)])
    return c


def _in_body(exc: BenchbookError, key: str, where: str | None) -> BenchbookError:
    """``exc`` with its ``["query", key, ...]`` locations moved under ``["body", key, ...]`` and,
    for a schema-wide view, the collection the check was made in named; of the same class, but a
    name that does not exist is now in the body: 409 (:func:`missing`)."""
    errors = [{**e, "loc": ["body", *e["loc"][1:]] if list(e.get("loc", []))[:2] == ["query", key] else e["loc"]}
              for e in exc.errors]
    detail = f"{exc.detail} (in collection {where!r})" if where else exc.detail
    return missing(detail, errors) if isinstance(exc, NotFound) else type(exc)(detail, errors)


def _check_columns(session: Session, schema: Schema, columns: list[str]) -> None:
    errors, seen = [], set()
    for i, c in enumerate(columns):
        if c in seen:
            errors.append(error_entry(["body", "columns", i], f"column {c!r} is listed twice", "duplicate", c))
        seen.add(c)
    if errors:
        raise Invalid("; ".join(e["msg"] for e in errors), errors)
    derived = [(i, c) for i, c in enumerate(columns) if c not in BASE_COLUMNS]
    cache = SchemaCache(session)
    check_columns(cache, [cache.meta(schema.id)], [c for _, c in derived], loc=["body", "columns"],
                  positions=[i for i, _ in derived])


def _check_sort_alone(session: Session, schema: Schema, sort: list[str]) -> None:
    """The sort of a view no collection can list yet: direction, and each key an own, base,
    inherited or ``ancestor.field`` name (what :meth:`RecordQuery.order_by` accepts)."""
    cache = SchemaCache(session)
    meta = cache.meta(schema.id)
    for i, spec in enumerate(sort):
        name, _, direction = spec.partition(":")
        loc: list[str | int] = ["body", "sort", i]
        if direction not in ("", "asc", "desc"):
            raise Invalid(f"sort {spec!r}: direction must be asc or desc", [error_entry(loc, "asc or desc", "sort", spec)])
        prefix, dot, rest = name.partition(".")
        target = meta
        if dot and prefix != schema.name:
            named = [m for m in ancestor_metas(cache, meta) if m.schema.name == prefix]
            if not named:
                raise not_an_ancestor(cache, prefix, schema.name, loc, spec)
            target = named[0]
        field = rest if dot else name
        if field not in BASE_SORTS and resolve_field(cache, target, field) is None:
            msg = f"unknown field {field!r} of schema {target.schema.name!r}"
            raise missing(f"sort: {msg}", [error_entry(loc, msg, "unknown_field", spec)])


def _check_query(session: Session, schema: Schema, collection: Collection | None,
                 tree: dict[str, Any] | None, sort: list[str]) -> None:
    """Compile ``tree`` and ``sort`` as the record list would, in ``collection`` or, for a
    schema-wide view, in each live collection holding the schema. Raises ``Invalid``,
    ``NotFound`` (a field or schema named is unknown) or ``Conflict`` as the record list does."""
    if collection is not None:
        places: list[Collection] = [collection]
    else:
        places = list(session.scalars(
            select(Collection).join(CollectionSchema, CollectionSchema.collection_id == Collection.id)
            .where(CollectionSchema.schema_id == schema.id, Collection.deleted_at.is_(None)).order_by(Collection.name)))
    where = None
    if not places:  # nothing lists the schema yet: its own, inherited and ancestor names only
        places = [Collection(id=new_id(), name=f"(any collection of {schema.name})", timezone=None)]
        _check_sort_alone(session, schema, sort)
        sort = []
    for place in places:
        where = place.name if collection is None else None
        if tree is not None:
            try:
                compile_filter(session, place, schema, json.dumps(tree), tz=place.timezone)
            except BenchbookError as exc:
                raise _in_body(exc, "filter", where) from None
        if sort:
            try:
                RecordQuery(schema=schema.name, sort=sort).order_by(session, place)
            except BenchbookError as exc:
                raise _in_body(exc, "sort", where) from None


def _apply(session: Session, v: View, schema: Schema, body: dict[str, Any], *, creating: bool) -> None:
    """Set the body's keys on ``v`` after checking them all (keys absent: unchanged)."""
    if "label" in body:
        v.label = body["label"] or None
    if "description" in body:
        v.description = body["description"] or None
    if "search" in body:
        v.search = body["search"] or None
    if "page_size" in body:
        v.page_size = body["page_size"]
    if "columns" in body and body["columns"] is not None:
        _check_columns(session, schema, list(body["columns"]))
        v.columns = list(body["columns"])
    if "sort" in body and body["sort"] is not None:
        v.sort = list(body["sort"])
    if "filter" in body:
        v.filter = body["filter"]
    if "collection" in body:
        c = _collection(session, schema, body["collection"])
        v.dataset_id = c.id if c else None
    if creating or {"filter", "sort", "collection"} & set(body):
        c = session.get(Collection, v.dataset_id) if v.dataset_id else None
        _check_query(session, schema, c, v.filter, list(v.sort or []))


def create_view(ctx: Ctx, schema_name: str, body: dict[str, Any]) -> View:
    """Save a view of ``schema_name``'s records (``ViewCreate``). Raises ``NotFound`` (schema),
    ``Conflict`` (name taken among its live views), ``Invalid`` (collection, columns, filter, sort)."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    _name_free(s, schema, body["name"])
    v = View(id=ctx.given_id(body), schema_id=schema.id, name=body["name"], columns=[], sort=[])
    _apply(s, v, schema, body, creating=True)
    s.add(v)
    s.flush()
    audit.write(ctx, "create", "view", v.id, new=_snapshot(s, v), schema_id=schema.id, dataset_id=v.dataset_id)
    return v


def get_view(session: Session, schema_name: str, view: str) -> View:
    """The live view ``view`` (name or id) of ``schema_name``; raises ``NotFound``."""
    return find_view(session, find_schema(session, schema_name), view)


def update_view(ctx: Ctx, schema_name: str, view: str, body: dict[str, Any]) -> View:
    """Apply a ``ViewUpdate``: ``rename`` and every other key present change that attribute
    (null clears a nullable one; absent: unchanged). One ``update`` entry lists what changed.
    Raises ``NotFound``, ``Conflict`` (new name taken), ``Invalid``."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    v = find_view(s, schema, view)
    before = _snapshot(s, v)
    body = dict(body)
    if body.get("rename") and body["rename"] != v.name:
        _name_free(s, schema, body["rename"], but=v.id)
        v.name = body["rename"]
    body.pop("rename", None)
    _apply(s, v, schema, body, creating=False)
    s.flush()
    after = _snapshot(s, v)
    changed = [k for k in ATTRIBUTES if after[k] != before[k]]
    if changed:
        v.updated_at = utcnow()
        ident = {"id": v.id, "name": v.name, "schema": after["schema"]}
        audit.write(ctx, "update", "view", v.id,
                    changes=[{"field": k, "label": k, "dtype": "json", "before": before[k], "after": after[k],
                              "deleted": None} for k in changed],
                    old={**ident, **{k: before[k] for k in changed}}, new={**ident, **{k: after[k] for k in changed}},
                    schema_id=schema.id, dataset_id=v.dataset_id)
    return v


def delete_view(ctx: Ctx, schema_name: str, view: str) -> None:
    """Soft-delete a view (a ``delete`` entry holding the whole view). Raises ``NotFound``."""
    s = ctx.session
    schema = find_schema(s, schema_name)
    v = find_view(s, schema, view)
    audit.write(ctx, "delete", "view", v.id, old=_snapshot(s, v), schema_id=schema.id, dataset_id=v.dataset_id)
    v.deleted_at = utcnow()


def delete_view_by_id(ctx: Ctx, view_id: str) -> None:
    """:func:`delete_view` for the view with id ``view_id`` (reverting its create or restore)."""
    v = ctx.session.get(View, view_id)
    schema = ctx.session.get(Schema, v.schema_id) if v is not None else None
    if v is None or schema is None:
        raise NotFound(f"view {view_id} not found")
    delete_view(ctx, schema.id, v.id)


def restore_view(ctx: Ctx, view_id: str) -> View:
    """Bring back the deleted view ``view_id`` (reverting its delete entry). Raises ``NotFound``,
    ``Conflict`` (it is live; its schema is deleted; another live view of the schema took its name)."""
    s = ctx.session
    v = s.get(View, view_id)
    if v is None:
        raise NotFound(f"view {view_id} not found")
    schema = s.get(Schema, v.schema_id)
    assert schema is not None  # the foreign key cascades
    if v.deleted_at is None:
        raise Conflict(f"view {v.name!r} is not deleted: there is nothing to restore")
    if schema.deleted_at is not None:
        raise Conflict(f"cannot restore view {v.name!r}: its schema {schema.name!r} is deleted; restore it first")
    _name_free(s, schema, v.name)
    v.deleted_at = None
    v.updated_at = utcnow()
    ident = {"id": v.id, "name": v.name, "schema": schema.name}
    audit.write(ctx, "restore", "view", v.id, old=ident, new=ident, schema_id=schema.id, dataset_id=v.dataset_id)
    return v


def revert_attributes(ctx: Ctx, view_id: str, targets: dict[str, Any]) -> View:
    """Put the view's attributes in ``targets`` (``ATTRIBUTES`` keys, audit ``before`` values)
    back through :func:`update_view` (the revert of an ``update`` entry)."""
    v = ctx.session.get(View, view_id)
    if v is None:
        raise NotFound(f"view {view_id} not found")
    body = {("rename" if k == "name" else k): val for k, val in targets.items()}
    return update_view(ctx, v.schema_id, v.id, body)


def with_view(session: Session, collection_name: str, view: str, query: RecordQuery,
              columns: list[str] | None) -> tuple[RecordQuery, list[str] | None]:
    """The record list's query and ``columns`` with the saved view ``view`` (id, or name among
    the views of ``query.schema``) supplying each part the request left out: ``schema``,
    ``filter``, ``sort``, ``search`` and the derived ``columns`` (base columns and own fields
    are not derived, so not passed). The request's own parts win; ``where``, ``within`` and
    ``parent_record_id`` only come from the request, and ``page_size`` is the client's to send
    as ``limit``. Raises ``NotFound`` (``loc`` ``["query", "view"]``) for an unknown or deleted
    view, ``Conflict`` for a view of another schema than ``schema`` or one saved for another
    collection."""
    found = _listed_view(session, view, query.schema)
    schema = _view_schema_for(session, found, view, query.schema, collection_name)
    own = {f.name for f in SchemaCache(session).meta(schema.id).fields}
    merged = replace(query, schema=query.schema or schema.name,
                     filter=query.filter or (json.dumps(found.filter) if found.filter is not None else None),
                     sort=query.sort or list(found.sort or []), search=query.search or found.search)
    derived = [c for c in found.columns or [] if c not in BASE_COLUMNS and c not in own]
    return merged, columns or derived or None


def _view_param_error(view: str, msg: str, type_: str, kind: type[BenchbookError] = NotFound) -> BenchbookError:
    """``kind`` (default ``NotFound``) saying ``view {view!r}: {msg}``, its one error at ``["query", "view"]``."""
    return kind(f"view {view!r}: {msg}", [error_entry(["query", "view"], msg, type_, view)])


def _listed_view(session: Session, view: str, schema_name: str | None) -> View:
    """The live view with id ``view`` or, when ``schema_name`` is given, the one so named among that
    schema's views. Raises ``NotFound`` (``unknown_view``) when there is none."""
    found = session.scalars(select(View).where(View.id == view.strip().upper(), View.deleted_at.is_(None))).first()
    if found is None and schema_name:
        try:
            found = find_view(session, find_schema(session, schema_name), view)
        except NotFound:
            found = None
    if found is None:
        raise _view_param_error(view, f"no live view has this id or name among schema {schema_name!r}'s views"
                                if schema_name else "no live view has this id (a view's name needs `schema`)",
                                "unknown_view")
    return found


def _view_schema_for(session: Session, found: View, view: str, schema_name: str | None,
                     collection_name: str) -> Schema:
    """``found``'s schema, after checking the view can list ``collection_name``'s records of ``schema_name``
    (any schema when None). Raises ``NotFound`` (its schema is deleted, ``unknown_view``; unknown collection)
    or ``Conflict`` (a view of another schema, ``view_schema``; saved for another collection,
    ``view_collection``)."""
    schema = session.get(Schema, found.schema_id)
    assert schema is not None
    if schema.deleted_at is not None:
        raise _view_param_error(view, f"its schema {schema.name!r} is deleted", "unknown_view")
    if schema_name and find_schema(session, schema_name).id != schema.id:
        raise _view_param_error(view, f"it is a view of schema {schema.name!r}, not {schema_name!r}", "view_schema",
                                Conflict)
    collection = find_collection(session, collection_name)
    if found.dataset_id is not None and found.dataset_id != collection.id:
        other = session.get(Collection, found.dataset_id)
        raise _view_param_error(view, f"it is saved for collection {other.name if other else found.dataset_id!r}, "
                                f"not {collection.name!r}", "view_collection", Conflict)
    return schema
