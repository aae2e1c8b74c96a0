"""Looking up collections, schemas and fields, and what a schema is made of (:class:`SchemaMeta`),
shared by every room of the domain."""
from __future__ import annotations

import functools
from typing import Any, cast

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog import shared
from benchbook.domain.errors import Invalid, NotFound, error_entry
from benchbook.persistence.tables import Collection, CollectionSchema, Field, Schema


def find_named(session: Session, model: Any, name_or_id: str, *, deleted: bool | None, what: str,
               where: tuple[Any, ...] = ()) -> Any:
    """The ``model`` row named (or with id) ``name_or_id``: the shared lookup of collections,
    schemas and fields. ``deleted``: False → live only, True → deleted only (most recently
    deleted first), None → either (live preferred). Raises ``NotFound`` naming ``what``."""
    conds = list(where)
    if deleted is False:
        conds.append(model.deleted_at.is_(None))
    elif deleted is True:
        conds.append(model.deleted_at.is_not(None))
    for cond in (model.name == name_or_id, model.id == name_or_id.upper()):
        row = session.scalars(select(model).where(cond, *conds)
                              .order_by(model.deleted_at.is_not(None), model.deleted_at.desc())).first()
        if row is not None:
            return row
    raise NotFound(f"{'deleted ' if deleted else ''}{what} {name_or_id!r} not found")


def find_schema(session: Session, name_or_id: str, *, deleted: bool | None = False) -> Schema:
    """The schema named (or with id) ``name_or_id`` (``deleted`` as in :func:`find_named`)."""
    return find_named(session, Schema, name_or_id, deleted=deleted, what="schema")  # type: ignore[no-any-return]


def fields_of(session: Session, schema_id: str, *, deleted: bool = False) -> list[Field]:
    """The schema's own fields in schema order; ``deleted=True`` gives the deleted ones."""
    cond = Field.deleted_at.is_not(None) if deleted else Field.deleted_at.is_(None)
    return list(session.scalars(select(Field).where(Field.schema_id == schema_id, cond)
                                .order_by(Field.position, Field.created_at)))


def find_field(session: Session, schema: Schema, name_or_id: str, *, deleted: bool | None = False) -> Field:
    """The schema's field named (or with id) ``name_or_id``; ``deleted`` as in :func:`find_named`."""
    return find_named(session, Field, name_or_id, deleted=deleted,  # type: ignore[no-any-return]
                      what=f"field of schema {schema.name!r}", where=(Field.schema_id == schema.id,))


def ancestors(session: Session, schema: Schema) -> list[Schema]:
    """The parent chain of ``schema``, nearest first (schemas, deleted or not)."""
    chain: list[Schema] = []
    current = schema
    while current.parent_id:
        parent = session.get(Schema, current.parent_id)
        if parent is None or parent in chain:
            break
        chain.append(parent)
        current = parent
    return chain


class SchemaMeta:
    """A schema with its fields, loaded once: ``fields`` (live, ordered), ``deleted_fields``,
    ``by_name`` and ``by_id`` (live and deleted), ``parent`` (schema or None)."""

    plain = False
    """True when schema, parent and fields are read-only plain copies (:func:`shared.plain`)."""

    def __init__(self, session: Session, schema: Schema) -> None:
        every = list(session.scalars(select(Field).where(Field.schema_id == schema.id)
                                     .order_by(Field.position, Field.created_at)))  # one query for both
        self._fill(schema, every, session.get(Schema, schema.parent_id) if schema.parent_id else None)

    def _fill(self, schema: Schema, every: list[Field], parent: Schema | None) -> None:
        self.schema = schema
        self.fields = [f for f in every if f.deleted_at is None]
        self.deleted_fields = [f for f in every if f.deleted_at is not None]
        self.by_name = {f.name: f for f in self.fields}
        self.by_id = {f.id: f for f in (*self.deleted_fields, *self.fields)}
        self.parent = parent

    @classmethod
    def copied(cls, meta: SchemaMeta) -> SchemaMeta:
        """``meta`` with plain read-only copies of its schema, parent and fields."""
        out = object.__new__(cls)
        out._fill(shared.plain(meta.schema), [shared.plain(f) for f in (*meta.fields, *meta.deleted_fields)],
                  shared.plain(meta.parent) if meta.parent is not None else None)
        out.plain = True
        return out

    @functools.cached_property
    def change_fields(self) -> list[tuple[str, str, str, bool]]:
        """``(field id, label, dtype, deleted)`` of every field, live ones first, in schema
        order: what an audit change names (``records.value_changes``), worked out once."""
        return [(f.id, f.label or f.name, f.type, f.deleted_at is not None)
                for f in (*self.fields, *self.deleted_fields)]

    @functools.cached_property
    def change_ids(self) -> frozenset[str]:
        """The ids of :attr:`change_fields`."""
        return frozenset(spec[0] for spec in self.change_fields)


class SchemaCache:
    """Per-request cache of the catalog a request reads: :class:`SchemaMeta` by schema id,
    collections, child schemas. Each is looked up once per request and shared between requests
    while the catalog stays unchanged (:mod:`benchbook.domain.catalog.shared`): what it returns
    are read-only plain copies, never rows to change."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._meta: dict[str, SchemaMeta] = {}
        self._collections: dict[str, Collection] = {}
        self._children: dict[str, tuple[str, ...]] = {}

    def meta(self, schema_id: str) -> SchemaMeta:
        """The :class:`SchemaMeta` of ``schema_id`` (deleted or not). Raises ``NotFound``."""
        if schema_id not in self._meta:
            self._meta[schema_id] = shared.shared(self.session, ("meta", schema_id), lambda: self._load(schema_id))
        return self._meta[schema_id]

    def _load(self, schema_id: str) -> SchemaMeta:
        schema = self.session.get(Schema, schema_id)
        if schema is None:
            raise NotFound(f"schema {schema_id} not found")
        return SchemaMeta.copied(SchemaMeta(self.session, schema))

    def collection(self, collection_id: str) -> Collection:
        """The collection ``collection_id`` (deleted or not), a read-only copy. Raises ``NotFound``."""
        if collection_id not in self._collections:
            def load() -> Collection:
                row = self.session.get(Collection, collection_id)
                if row is None:
                    raise NotFound(f"collection {collection_id} not found")
                return cast(Collection, shared.plain(row))
            self._collections[collection_id] = shared.shared(self.session, ("collection", collection_id), load)
        return self._collections[collection_id]

    def schema_named(self, name_or_id: str) -> SchemaMeta:
        """The :class:`SchemaMeta` of the live schema named (or with id) ``name_or_id``, as
        :func:`find_schema` finds it; which schema a name means is kept between requests while
        the catalog is unchanged. Raises ``NotFound``."""
        schema_id = shared.shared(self.session, ("schema_named", name_or_id),
                                  lambda: find_schema(self.session, name_or_id).id)
        return self.meta(schema_id)

    def collection_named(self, name_or_id: str) -> Collection:
        """The live collection named (or with id) ``name_or_id``, as :func:`find_collection`
        finds it, a read-only copy (:meth:`collection`). Raises ``NotFound``."""
        collection_id = shared.shared(self.session, ("collection_named", name_or_id),
                                      lambda: find_collection(self.session, name_or_id).id)
        return self.collection(collection_id)

    def child_names(self, schema_id: str) -> tuple[str, ...]:
        """Names of the live schemas whose parent is ``schema_id``, by name."""
        if schema_id not in self._children:
            self._children[schema_id] = shared.shared(self.session, ("children", schema_id), lambda: tuple(
                self.session.scalars(select(Schema.name).where(Schema.parent_id == schema_id,
                                                               Schema.deleted_at.is_(None)).order_by(Schema.name))))
        return self._children[schema_id]


RESERVED = frozenset({"deleted"})
"""Names that ``/collections/{name}`` and ``/schemas/{name}`` cannot reach: ``GET
/collections/deleted`` and ``GET /schemas/deleted`` list the deleted ones. A collection or a
schema is never given one (the OpenAPI document refuses them too)."""


def refuse_reserved(name: str, kind: str) -> None:
    """Raises ``Invalid`` (``loc`` the body's ``name``) when ``name`` is one of :data:`RESERVED`;
    ``kind`` is ``"collection"`` or ``"schema"``, for the message."""
    if name in RESERVED:
        raise Invalid(f"{name!r} names a path of the API (GET /{kind}s/{name} lists the deleted {kind}s): "
                      "pick another name", [error_entry(["body", "name"], "reserved by the API's paths", "reserved", name)])


def find_collection(session: Session, name_or_id: str, *, deleted: bool | None = False) -> Collection:
    """The collection named (or with id) ``name_or_id``; ``deleted`` as in
    :func:`benchbook.domain.catalog.lookup.find_named`. Raises ``NotFound``."""
    return find_named(session, Collection, name_or_id, deleted=deleted,  # type: ignore[no-any-return]
                      what="collection")


def collection_schemas(session: Session, collection_id: str) -> tuple[tuple[str, str], ...]:
    """``(id, name)`` of the live schemas a collection is for, in the order given; kept between
    requests while the catalog is unchanged (:func:`shared.shared`)."""
    return shared.shared(session, ("collection_schemas", collection_id), lambda: tuple(
        (str(i), str(n)) for i, n in session.execute(
            select(Schema.id, Schema.name).join(CollectionSchema, CollectionSchema.schema_id == Schema.id)
            .where(CollectionSchema.collection_id == collection_id, Schema.deleted_at.is_(None))
            .order_by(CollectionSchema.position))))


def schema_names(session: Session, collection_id: str) -> list[str]:
    """Names of the live schemas a collection is for, in the order given (:func:`collection_schemas`)."""
    return [name for _, name in collection_schemas(session, collection_id)]
