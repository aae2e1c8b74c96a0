"""Finding records: the record query parameters shared by list, counts, export and delete (OpenAPI:
``GET /collections/{dataset_name}/records``: ``filter``, ``parent_record_id``, ``schema``,
``search``, ``sort``, ``where``, ``within``), compiled to one SQL statement (no Python-side
filtering)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Select, String, and_, case, cast, or_, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.dtypes import REFERENCE_TYPES
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta, collection_schemas, schema_names
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, NotFound, error_entry, missing
from benchbook.domain.records.filters import (
    ancestor_metas,
    ancestor_scalar,
    compile_filter,
    resolve_field,
    value_of,
)
from benchbook.domain.records.paths import Path, PathError, path_scalar, resolve_path
from benchbook.domain.records.references import ReferenceResolver, Unresolved
from benchbook.domain.records.rows import find_record
from benchbook.domain.records.search import search_parts
from benchbook.persistence.field_indexes import INDEXED_ACCESSORS, field_index_name
from benchbook.persistence.tables import Collection, Field, Record, Schema

BASE_SORTS = {"id": Record.id, "created_at": Record.created_at, "updated_at": Record.updated_at,
              "natural_name": Record.natural_name}
_ACCESSOR = {"integer": "as_float", "float": "as_float", "boolean": "as_boolean"}


def typed_value(f: Field) -> ColumnElement[Any]:
    """SQL expression for field ``f``'s stored value, typed by its dtype (numbers as numbers)."""
    return getattr(Record.data[f.id], _ACCESSOR.get(f.type, "as_string"))()  # type: ignore[no-any-return]


BASE_SORT_INDEXES = {"created_at": "ix_records_created_at", "updated_at": "ix_records_updated_at",
                     "natural_name": "ix_records_natural_name"}
"""The index holding each base column in its order (migration 0016), for a page sorted by it."""

NOT_NULL_SORTS = (Record.id, Record.created_at, Record.updated_at)
"""Base columns that always hold a value: on PostgreSQL they are sorted without ``NULLS LAST``,
which a descending walk of their index (``NULLS FIRST``) would not give."""


@dataclass(frozen=True)
class SortLead:
    """The first key of a page's sort when an index holds it in that order: ``expr``, what it
    sorts by (a field's typed value or a base column), ``index``, that index's name, and
    whether the key is ``descending``."""

    expr: ColumnElement[Any]
    index: str
    descending: bool = False


@dataclass(frozen=True)
class Conditions:
    """A record query's WHERE conditions: ``others`` and the ``search`` condition (None without
    a search), with the search's FTS5 ``MATCH`` text on SQLite (``match``, else None), for a
    count that reads the search table first (``counting.bounded_total``)."""

    others: list[ColumnElement[bool]]
    search: ColumnElement[bool] | None = None
    match: str | None = None

    @property
    def all(self) -> list[ColumnElement[bool]]:
        """Every condition: ``others``, then the search's."""
        return self.others if self.search is None else [*self.others, self.search]


@dataclass
class RecordQuery:
    """The shared record query parameters as given on the request."""

    filter: str | None = None
    parent_record_id: str | None = None
    schema: str | None = None
    search: str | None = None
    sort: list[str] = field(default_factory=list)
    where: list[str] = field(default_factory=list)
    within: str | None = None

    def schema_of(self, session: Session, collection: Collection) -> Schema | None:
        """The schema ``schema`` names, None when not given. Raises ``NotFound`` (unknown) or
        ``Conflict`` (not one of ``collection``'s)."""
        if not self.schema:
            return None
        try:
            schema = SchemaCache(session).schema_named(self.schema).schema
        except NotFound:
            raise NotFound(f"unknown schema {self.schema!r}",
                           [error_entry(["query", "schema"], "unknown schema", "unknown_schema", self.schema)]) from None
        if schema.name not in schema_names(session, collection.id):
            raise Conflict(f"collection {collection.name!r} is not for schema {schema.name!r}",
                           [error_entry(["query", "schema"], "schema not in this collection", "schema", self.schema)])
        return schema

    def listed_metas(self, cache: SchemaCache, collection_id: str) -> list[SchemaMeta]:
        """The metadata of the schemas this query lists: ``schema``'s alone when given (by
        :meth:`SchemaCache.schema_named`; raises ``NotFound``), else every live schema of the
        collection, in its order."""
        if self.schema:
            return [cache.schema_named(self.schema)]
        return [cache.meta(i) for i, _ in collection_schemas(cache.session, collection_id)]

    def conditions(self, session: Session, collection: Collection, *,
                   use_schema: bool = True) -> list[ColumnElement[bool]]:
        """WHERE conditions selecting the live records the parameters match. Raises ``Invalid``."""
        return self.parts(session, collection, use_schema=use_schema).all

    def parts(self, session: Session, collection: Collection, *, use_schema: bool = True) -> Conditions:
        """:meth:`conditions` with the search kept apart (:class:`Conditions`). Raises ``Invalid``."""
        conds: list[ColumnElement[bool]] = [Record.dataset_id == collection.id, Record.deleted_at.is_(None)]
        schema = self.schema_of(session, collection)
        if schema is not None and use_schema:  # before the filter: SQLite tests them in this order
            conds.append(Record.schema_id == schema.id)
        if self.filter:
            conds.append(compile_filter(session, collection, schema if use_schema else None, self.filter,
                                        tz=collection.timezone))
        if self.parent_record_id:
            conds.append(Record.parent_id == find_record(session, self.parent_record_id, live=None).id)
        if self.within:
            if schema is None:
                raise Invalid("`within` needs `schema`: name the schema of the records to find",
                              [error_entry(["query", "within"], "`within` requires `schema`", "missing", self.within)])
            root = find_record(session, self.within, live=None)
            tree = select(Record.id).where(Record.parent_id == root.id).cte("tree", recursive=True)
            tree = tree.union_all(select(Record.id).where(Record.parent_id == tree.c.id))
            conds.append(Record.id.in_(select(tree.c.id)))
        conds += self._where(session, collection, schema)
        matched, match = search_parts(session, self.search) if self.search else (None, None)
        return Conditions(conds, matched, match)

    def _where(self, session: Session, collection: Collection, schema: Schema | None) -> list[ColumnElement[bool]]:
        cache = SchemaCache(session)
        metas = _listed_metas(session, collection, schema, cache)
        resolver = ReferenceResolver(session, collection, cache)
        conds = []
        for i, clause in enumerate(self.where):
            name, sep, raw = clause.partition("=")
            name = name.strip()
            if not sep or not name:
                raise Invalid(f"where {clause!r} is not field=value",
                              [error_entry(["query", "where", i], "expected field=value", "where", clause)])
            options = []
            for meta in metas:
                found = resolve_field(cache, meta, name)  # own field, else the nearest ancestor's
                if found is None:
                    continue
                steps, owner, f = found
                try:
                    value = dtypes.coerce_value(f.type, {}, raw, tz=collection.timezone)
                except dtypes.ValueProblem as exc:
                    raise Invalid(f"where {clause!r}: {exc}",
                                  [error_entry(["query", "where", i], str(exc), exc.type_, clause)]) from None
                if f.type in REFERENCE_TYPES and value is not None:
                    value = _where_reference(resolver, f, value, i, clause)
                options.append(and_(Record.schema_id == meta.schema.id, _equals(steps, owner.schema, f, value)))
            if not options:
                raise NotFound(f"where: unknown field {name!r}",
                              [error_entry(["query", "where", i], f"unknown field {name!r}", "unknown_field", clause)])
            conds.append(or_(*options) if len(options) > 1 else options[0])
        return conds

    def order_by(self, session: Session, collection: Collection) -> list[Any]:
        """ORDER BY: each ``[schema.]field[:asc|desc]`` with nulls last, then id as tie-break.

        Without ``schema`` a key is sorted by in every schema of the collection that has the
        field (own or inherited; records of the others go last); it must be a field of the
        same kind (number, text, boolean) wherever it is, else ``Conflict`` asks for
        ``schema`` (issue 14, item 8). The base columns sort any records. ``NotFound`` for a
        field or schema no listed schema has."""
        if not self.sort:
            return [Record.id.asc()]
        schema = self.schema_of(session, collection)
        cache = SchemaCache(session)
        metas = _listed_metas(session, collection, schema, cache)
        out: list[Any] = []
        postgres = session.get_bind().dialect.name == "postgresql"
        for i, spec in enumerate(self.sort):
            name, _, direction = spec.partition(":")
            direction = direction or "asc"
            if direction not in ("asc", "desc"):
                raise Invalid(f"sort {spec!r}: direction must be asc or desc",
                              [error_entry(["query", "sort", i], "asc or desc", "sort", spec)])
            loc = ["query", "sort", i]
            if len(metas) == 1:
                expr = _sort_expression(cache, metas[0], name, loc, spec)
            elif name in BASE_SORTS:
                expr = BASE_SORTS[name]
            else:
                expr = _any_schema_sort(cache, metas, name, loc, spec)
            ordered = expr.desc() if direction == "desc" else expr.asc()
            if postgres and any(expr is column for column in NOT_NULL_SORTS):
                out.append(ordered)  # no NULLs: a descending walk of its index gives this order
            elif postgres:  # the index's own order (btree ASC is NULLS LAST): its planner can walk it
                out.append(ordered.nulls_last())
            else:  # SQLite: lists._sorted_page drops the constant first key when it walks
                out += [expr.is_(None).asc(), ordered]
        return [*out, Record.id.asc()]

    def leading_sort(self, session: Session, collection: Collection, cache: SchemaCache) -> SortLead | None:
        """What the first ``sort`` key sorts by when an index holds it in that order
        (:class:`SortLead`): an own field of the listed schema that has its own index
        (``field_indexes.field_index_ddl``), or a base column that has one (:data:`BASE_SORT_INDEXES`,
        with or without ``schema``); else None. ``cache`` is the request's (the page's records
        are shaped with the same metadata)."""
        if not self.sort:
            return None
        schema = self.schema_of(session, collection)
        name, _, direction = self.sort[0].partition(":")
        descending = direction == "desc"
        if schema is not None and name.startswith(f"{schema.name}."):
            name = name[len(schema.name) + 1:]
        f = cache.meta(schema.id).by_name.get(name) if schema is not None else None
        if f is not None:  # an own field shadows a base column of the same name
            return SortLead(typed_value(f), field_index_name(f.id), descending) if f.type in INDEXED_ACCESSORS else None
        if name not in BASE_SORT_INDEXES or (schema is None and "." in self.sort[0]):
            return None
        if schema is None and any(name in m.by_name for m in _listed_metas(session, collection, None, cache)):
            return None  # a listed schema's own field shadows the base column (order_by)
        return SortLead(BASE_SORTS[name].expression, BASE_SORT_INDEXES[name], descending)

    def select(self, session: Session, collection: Collection) -> Select[Any]:
        """SELECT of the matching records in order."""
        return (select(Record).where(*self.conditions(session, collection))
                .order_by(*self.order_by(session, collection)))


def _listed_metas(session: Session, collection: Collection, schema: Schema | None,
                  cache: SchemaCache) -> list[SchemaMeta]:
    """The metadata of the schemas a query lists: ``schema``'s alone, else every schema of
    ``collection``."""
    if schema is not None:
        return [cache.meta(schema.id)]
    return [cache.meta(i) for i, _ in collection_schemas(session, collection.id)]


def _where_reference(resolver: ReferenceResolver, f: Field, value: Any, i: int, clause: str) -> Any:
    """``where``'s value of a reference field typed as a key, natural name, id prefix or
    suffix: the id (or ids, for a reference_list) it names (:mod:`.references`). Raises
    ``Invalid`` (422) for a value naming no record within reach, or several."""
    items = value if isinstance(value, list) else [value]
    answers = resolver.resolve(f, items)
    for item in items:
        answer = answers[item]
        if isinstance(answer, Unresolved):
            raise Invalid(f"where {clause!r}: {f.name}: {answer.message}",
                          [error_entry(["query", "where", i], f"{f.name}: {answer.message}", answer.kind, clause)])
    ids = [str(answers[item]) for item in items]
    return ids if isinstance(value, list) else ids[0]


def _equals(steps: int, owner: Schema, f: Field, value: Any) -> ColumnElement[bool]:
    """``where``'s test of field ``f`` against a coerced ``value`` on the record itself
    (``steps`` 0) or on its ancestor ``steps`` up, of schema ``owner`` (an inherited field)."""
    def test(alias: Any) -> ColumnElement[bool]:
        if value is None:
            return alias.data[f.id].as_string().is_(None)  # type: ignore[no-any-return]
        if isinstance(value, list):
            return and_(*[cast(alias.data[f.id], String).like(f'%"{v}"%') for v in value])
        equal: ColumnElement[bool] = value_of(alias, f) == value
        return equal
    if steps == 0:
        return test(Record)
    if value is None:  # empty: the ancestor holds no value (or there is no such ancestor)
        return ancestor_scalar(steps, owner, lambda alias: alias.data[f.id].as_string()).is_(None)  # type: ignore[no-any-return]
    hit = ancestor_scalar(steps, owner, lambda alias: case((test(alias), 1), else_=0))
    return hit == 1  # type: ignore[no-any-return]


def not_an_ancestor(cache: SchemaCache, prefix: str, schema: str, loc: list[Any], spec: str) -> BenchbookError:
    """The error of a sort prefix naming no ancestor of ``schema``: :func:`missing` when it names
    no schema at all, ``Conflict`` when it names one elsewhere in the tree (as a filter leaf's)."""
    msg = f"{prefix!r} is not {schema!r} nor one of its ancestor schemas"
    try:
        cache.schema_named(prefix)
    except NotFound:
        return missing(f"sort {spec!r}: {msg}", [error_entry(loc, msg, "unknown_schema", spec)])
    return Conflict(f"sort {spec!r}: {msg}", [error_entry(loc, msg, "schema", spec)])


def _any_schema_sort(cache: SchemaCache, metas: list[SchemaMeta], name: str, loc: list[Any], spec: str) -> Any:
    """The sort expression of ``name`` across several schemas: per schema that has the field
    (own or inherited, or with an ancestor schema's name as prefix), its value; NULL for the
    others. Raises ``NotFound`` when no schema has it, ``Conflict`` when it is of different kinds."""
    branches: list[tuple[ColumnElement[bool], Any]] = []
    kinds: dict[str, list[str]] = {}
    refused: Invalid | None = None
    for meta in metas:
        try:
            expr = _sort_expression(cache, meta, name, loc, spec)
        except (NotFound, Conflict):  # not this schema's: another one may have it
            continue
        except Invalid as exc:  # a path this schema cannot follow: refused unless another one can
            refused = refused or exc
            continue
        branches.append((Record.schema_id == meta.schema.id, expr))
        kinds.setdefault(type(expr.type).__name__, []).append(meta.schema.name)
    if not branches and refused is not None:
        raise refused
    if not branches:
        names = ", ".join(m.schema.name for m in metas)
        msg = f"no schema of the collection ({names}) has a field {name!r}"
        raise NotFound(f"sort: {msg}", [error_entry(loc, msg, "unknown_field", spec)])
    if len(kinds) > 1:
        which = "; ".join(f"{kind}: {', '.join(schemas)}" for kind, schemas in kinds.items())
        msg = f"{name!r} is a different kind of field in different schemas ({which}): name the schema"
        raise Conflict(f"sort: {msg}", [error_entry(loc, msg, "ambiguous_field", spec)])
    return case(*branches, else_=None) if len(branches) > 1 else case(branches[0], else_=None)


def _sort_expression(cache: SchemaCache, meta: SchemaMeta, name: str, loc: list[Any], spec: str) -> Any:
    """What ``[schema.]field`` sorts by for records of ``meta``: an own field or base column, an
    inherited field (nearest ancestor owning it), or with an ancestor schema's name as prefix
    that ancestor record's field (own or inherited) or base column; ``field`` may be a path
    through single references (``carrier.name``, :func:`_path_sort`). A first part naming
    ``meta`` or an ancestor schema is that schema (``site.label``), else a field
    (``carrier.name``; ``flight.carrier.name`` when a field has an ancestor schema's name).
    Raises ``NotFound`` (no such field or schema), ``Conflict`` (a prefix naming a schema that
    is no ancestor) or ``Invalid`` (a path that cannot be followed or leads to many records)."""
    prefix, dot, rest = name.partition(".")
    target, steps = meta, 0
    if dot:
        ups = ancestor_metas(cache, meta)
        named = [m for m in ups if m.schema.name == prefix]
        if named:
            target, steps = named[0], ups.index(named[0]) + 1
            name = rest
        elif prefix == meta.schema.name:
            name = rest
        elif resolve_field(cache, meta, prefix) is None:
            raise not_an_ancestor(cache, prefix, meta.schema.name, loc, spec)
    if "." in name:  # a path through references from the record (or the ancestor the prefix names)
        return _path_sort(cache, target, steps, name, loc, spec)
    if steps == 0 and name in meta.by_name:
        return typed_value(meta.by_name[name])
    if steps == 0 and name in BASE_SORTS:
        return BASE_SORTS[name]
    found = resolve_field(cache, target, name)
    if found is not None:
        up, owner, f = found
        return ancestor_scalar(steps + up, owner.schema, lambda alias: value_of(alias, f))
    if steps and name in BASE_SORTS:
        return ancestor_scalar(steps, target.schema, lambda alias: getattr(alias, name))
    msg = f"unknown field {name!r} of schema {target.schema.name!r}"
    raise NotFound(f"sort: {msg}", [error_entry(loc, msg, "unknown_field", spec)])


def _path_sort(cache: SchemaCache, target: SchemaMeta, steps: int, name: str, loc: list[Any], spec: str) -> Any:
    """The sort expression of the path ``name`` (:mod:`.paths`) read on the listed record's
    ancestor of schema ``target`` ``steps`` up (0: the record itself): the value its single
    references lead to, NULL without a live target (sorted last, as a missing value). Raises
    ``NotFound`` (an unknown part), ``Invalid`` (a part after a field that is no reference, or a
    ``reference_list``: many records give no one value to sort by)."""
    try:
        path = resolve_path(cache, target, name)
    except PathError as exc:
        raise exc.error_class(f"sort {spec!r}: {exc.msg}", [error_entry(loc, exc.msg, exc.type_, spec)]) from None
    if path is None:
        msg = f"unknown field {name.partition('.')[0]!r} of schema {target.schema.name!r} (in {name!r})"
        raise NotFound(f"sort: {msg}", [error_entry(loc, msg, "unknown_field", spec)])
    if path.many:
        listed = next(h.field.name for h in path.hops if h.field.type == "reference_list")
        msg = f"{listed!r} is a reference_list: its many records give no one value of {name!r} to sort by"
        raise Invalid(f"sort {spec!r}: {msg}", [error_entry(loc, msg, "sort", spec)])

    def value(alias: Any, p: Path) -> Any:
        return getattr(alias, str(p.column)) if p.field is None else value_of(alias, p.field)
    return path_scalar(path, steps + path.hops[0].steps, value)
