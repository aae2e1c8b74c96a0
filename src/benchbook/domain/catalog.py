"""Looking up schemas and fields (shared by the schema, field, collection and record rules)."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.errors import NotFound
from benchbook.persistence.tables import Field, Schema


def find_schema(session: Session, name_or_id: str, *, deleted: bool | None = False) -> Schema:
    """The schema named (or with id) ``name_or_id``.

    ``deleted``: False → live only, True → deleted only, None → either (live preferred,
    else the most recently deleted). Raises ``NotFound``.
    """
    conds = []
    if deleted is False:
        conds.append(Schema.deleted_at.is_(None))
    elif deleted is True:
        conds.append(Schema.deleted_at.is_not(None))
    for cond in (Schema.name == name_or_id, Schema.id == name_or_id.upper()):
        row = session.scalars(select(Schema).where(cond, *conds)
                              .order_by(Schema.deleted_at.is_not(None), Schema.deleted_at.desc())).first()
        if row is not None:
            return row
    state = {False: "", True: "deleted ", None: ""}[deleted]
    raise NotFound(f"{state}schema {name_or_id!r} not found")


def fields_of(session: Session, schema_id: str, *, deleted: bool = False) -> list[Field]:
    """The schema's own fields in schema order; ``deleted=True`` gives the deleted ones."""
    cond = Field.deleted_at.is_not(None) if deleted else Field.deleted_at.is_(None)
    return list(session.scalars(select(Field).where(Field.schema_id == schema_id, cond)
                                .order_by(Field.position, Field.created_at)))


def find_field(session: Session, schema: Schema, name_or_id: str, *, deleted: bool | None = False) -> Field:
    """The schema's field named (or with id) ``name_or_id``; ``deleted`` as in ``find_schema``."""
    conds = [Field.schema_id == schema.id]
    if deleted is False:
        conds.append(Field.deleted_at.is_(None))
    elif deleted is True:
        conds.append(Field.deleted_at.is_not(None))
    for cond in (Field.name == name_or_id, Field.id == name_or_id.upper()):
        row = session.scalars(select(Field).where(cond, *conds).order_by(Field.deleted_at.desc())).first()
        if row is not None:
            return row
    raise NotFound(f"field {name_or_id!r} not found in schema {schema.name!r}")


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


def children(session: Session, schema: Schema) -> list[Schema]:
    """Live schemas whose parent is ``schema``."""
    return list(session.scalars(select(Schema).where(Schema.parent_id == schema.id,
                                                     Schema.deleted_at.is_(None)).order_by(Schema.name)))


class SchemaMeta:
    """A schema with its fields, loaded once: ``fields`` (live, ordered), ``deleted_fields``,
    ``by_name`` and ``by_id`` (live and deleted), ``parent`` (schema or None)."""

    def __init__(self, session: Session, schema: Schema) -> None:
        self.schema = schema
        self.fields = fields_of(session, schema.id)
        self.deleted_fields = fields_of(session, schema.id, deleted=True)
        self.by_name = {f.name: f for f in self.fields}
        self.by_id = {f.id: f for f in (*self.deleted_fields, *self.fields)}
        self.parent = session.get(Schema, schema.parent_id) if schema.parent_id else None


class SchemaCache:
    """Per-request cache of :class:`SchemaMeta` by schema id (avoids N+1 lookups)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._meta: dict[str, SchemaMeta] = {}

    def meta(self, schema_id: str) -> SchemaMeta:
        """The :class:`SchemaMeta` of ``schema_id`` (which must exist)."""
        if schema_id not in self._meta:
            schema = self.session.get(Schema, schema_id)
            if schema is None:
                raise NotFound(f"schema {schema_id} not found")
            self._meta[schema_id] = SchemaMeta(self.session, schema)
        return self._meta[schema_id]
