"""Field paths through references (issue 35 item 3): ``carrier.name``, ``tailnum.model.maker``.

A *path* is a dotted field name whose every part but the last names a ``reference`` or
``reference_list`` field; each part resolves on the schema the previous reference points at (its
``schema`` restriction), own field first, else the nearest ancestor schema's (an inherited field,
as for plain names: :func:`resolve_field`). The last part may
also be ``natural_name`` or ``id`` when the target schema has no field of that name (the target
record's own columns).

Filters (:mod:`benchbook.domain.records.filters`) test paths through ``record_links`` (the
``(source_id, field_id, target_id)`` rows every write keeps for reference values, indexed both
ways), never by reading the stored references out of the records' JSON: the targets that pass
the test are found once, then the records pointing at them, hop by hop back to the listed
records. Sorts (:mod:`benchbook.domain.records.queries`) read one value per record through a
correlated scalar subquery joining the targets by primary key. The user-facing rules are in
``docs/filters.md``: a deleted target reads as no target, and a path through a
``reference_list`` matches when ANY of its live targets does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ARRAY, ColumnElement, Select, String, any_, bindparam, exists, func, not_, select
from sqlalchemy.orm import Session, aliased

from benchbook.domain.catalog.dtypes import REFERENCE_TYPES
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.errors import BenchbookError, Invalid, NotFound
from benchbook.persistence.tables import Field, Record, RecordLink

TARGET_COLUMNS = ("natural_name", "id")
"""Columns of a target record a path may end on (when its schema has no field so named)."""

NESTED_WALK = 8
"""Levels up to which :func:`walk_down` nests ``IN`` subqueries; further down it joins the
levels in one statement (SQLite's parser stack overflowed from 11 nested subqueries on)."""


class PathError(Invalid):
    """A path that cannot be followed: ``msg``, its error ``type_`` and ``error_class``, the
    error the caller raises with the path's place in the request (``Invalid``: the path is wrong
    in itself; ``NotFound``: it names a field that does not exist)."""

    def __init__(self, msg: str, type_: str, error_class: type[BenchbookError]) -> None:
        super().__init__(msg)
        self.msg, self.type_, self.error_class = msg, type_, error_class


@dataclass(frozen=True)
class Hop:
    """One reference followed: ``field`` (a reference or reference_list field) is owned by
    ``owner``, ``steps`` schemas above the record that reaches it (0: its own field), and points
    at records of ``target``."""

    steps: int
    owner: SchemaMeta
    field: Field
    target: SchemaMeta


@dataclass(frozen=True)
class Path:
    """A resolved path: ``hops`` (at least one), then the last part on the last hop's target:
    ``field`` owned by ``owner`` ``steps`` above it, or, with ``field`` None, the target's
    ``column`` (``natural_name`` or ``id``)."""

    name: str
    hops: tuple[Hop, ...]
    steps: int
    owner: SchemaMeta
    field: Field | None
    column: str | None = None

    @property
    def many(self) -> bool:
        """Whether a hop is a ``reference_list`` (a record then reaches many values)."""
        return any(h.field.type == "reference_list" for h in self.hops)

    @property
    def last(self) -> SchemaMeta:
        """The schema of the records the path's last part is read on."""
        return self.hops[-1].target


MAX_DEPTH = 32  # schema chains are walked at most this far up


def ancestor_metas(cache: SchemaCache, meta: SchemaMeta) -> list[SchemaMeta]:
    """The schema chain above ``meta``, nearest first (at most :data:`MAX_DEPTH`)."""
    out: list[SchemaMeta] = []
    current = meta
    while current.parent is not None and len(out) < MAX_DEPTH:
        current = cache.meta(current.parent.id)
        out.append(current)
    return out


def resolve_field(cache: SchemaCache, meta: SchemaMeta, name: str) -> tuple[int, SchemaMeta, Field] | None:
    """Where field ``name`` of schema ``meta`` lives: ``(steps up, owner schema, field)`` — ``(0,
    meta, own field)``, else the nearest ancestor owning it — or None."""
    for steps, owner in enumerate([meta, *ancestor_metas(cache, meta)]):
        if name in owner.by_name:
            return steps, owner, owner.by_name[name]
    return None


def resolve_path(cache: SchemaCache, meta: SchemaMeta, name: str) -> Path | None:
    """The path ``name`` (dotted) on records of ``meta``, or None when its first part is no field
    of ``meta`` (own or inherited), so that a caller may read it otherwise or refuse it as an
    unknown field. Raises :class:`PathError`: 422 for an empty part, a part after a field that is
    no reference, a reference without a target schema; 404 for a later part its target schema
    does not have."""
    parts = name.split(".")
    if len(parts) < 2 or not all(parts):
        raise PathError(f"{name!r} is not a path: parts are field names joined by single dots", "path", Invalid)
    hops: list[Hop] = []
    on = meta
    for i, part in enumerate(parts[:-1]):
        found = resolve_field(cache, on, part)
        if found is None:
            if i == 0:
                return None
            raise _unknown(parts, i, on)
        steps, owner, f = found
        if f.type not in REFERENCE_TYPES:
            raise PathError(f"{'.'.join(parts[:i + 1])!r} is a {f.type} field, not a reference: nothing "
                            f"to follow in {name!r}", "path", Invalid)
        target_name = (f.restrictions or {}).get("schema")
        if not target_name:
            raise PathError(f"reference field {'.'.join(parts[:i + 1])!r} may point at records of any schema, "
                            f"so {name!r} names no known field (give the field a target schema)", "path", Invalid)
        try:
            target = cache.schema_named(target_name)
        except NotFound:
            raise PathError(f"reference field {part!r} points at schema {target_name!r}, which no longer exists",
                            "unknown_schema", NotFound) from None
        hops.append(Hop(steps, owner, f, target))
        on = target
    last = resolve_field(cache, on, parts[-1])
    if last is not None:
        return Path(name, tuple(hops), last[0], last[1], last[2])
    if parts[-1] in TARGET_COLUMNS:
        return Path(name, tuple(hops), 0, on, None, parts[-1])
    raise _unknown(parts, len(parts) - 1, on)


def _unknown(parts: list[str], i: int, on: SchemaMeta) -> PathError:
    return PathError(f"unknown field {parts[i]!r} of schema {on.schema.name!r} (own or inherited) in "
                     f"{'.'.join(parts)!r}", "unknown_field", NotFound)


# ------------------------------------------------------------------------------ filter sets

SOURCE_IDS = 5000
"""Records pointing at the matching targets of a path's first reference up to which the listed
records are tested against their list (``id IN (…)``, which lets the planner start from them);
more: each record's own links are looked up (:func:`path_test`)."""

TARGET_IDS = 10_000
"""Records a hop of a path leads to (the matching targets, the records pointing at them) up to
which their ids are given to the query as values; more: a subquery finds them. PostgreSQL,
given 1,500 matching planes by a subquery, took them to be 42 (a JSON value's share of all
records times the plane schema's) and joined the flights pointing at them one by one (320 ms
for a page at 100,000 flights; 30 ms given the ids)."""


def walk_down(ids: Select[Any], steps: int) -> Select[Any]:
    """The ids of the records ``steps`` levels below the records whose ids ``ids`` selects (any
    schema, deleted or not: callers narrow the last level)."""
    if steps == 0:
        return ids
    if steps <= NESTED_WALK:
        for _ in range(steps):
            level = aliased(Record)
            ids = select(level.id).where(level.parent_id.in_(ids))
        return ids
    levels = [aliased(Record) for _ in range(steps)]
    return select(levels[-1].id).where(levels[0].parent_id.in_(ids), *(
        levels[i].parent_id == levels[i - 1].id for i in range(1, steps)))


def among(column: Any, ids: Any, dialect: str) -> ColumnElement[bool]:
    """``column IN ids``: ``ids`` a SELECT, or a list of ids bound as ONE value (a PostgreSQL
    array; on SQLite a JSON array ``json_each`` reads), whatever its length: an ``IN`` of 1,500
    bound values cost more to bind than its statement took to run (70 ms against 2)."""
    if not isinstance(ids, list):
        return column.in_(ids)  # type: ignore[no-any-return]
    if dialect == "postgresql":
        return column == any_(bindparam(None, ids, type_=ARRAY(String)))  # type: ignore[no-any-return]
    each = func.json_each(bindparam(None, json.dumps(ids), type_=String)).table_valued("value")
    return column.in_(select(each.c.value))  # type: ignore[no-any-return]


def referrers_of(hop: Hop, targets: Any, holder: SchemaMeta, dialect: str) -> Select[Any]:
    """The ids of the live records of ``holder`` that reach one of ``targets`` (ids: a list or a
    SELECT) through ``hop``: the records whose ``hop.field`` holds one (``record_links``, read by
    its target index), walked down ``hop.steps`` levels when the field is inherited."""
    sources = select(RecordLink.source_id).where(among(RecordLink.target_id, targets, dialect),
                                                 RecordLink.field_id == hop.field.id)
    found = aliased(Record)
    return select(found.id).where(found.id.in_(walk_down(sources, hop.steps)), found.schema_id == holder.schema.id,
                                  found.deleted_at.is_(None))


def path_test(session: Session, dialect: str, alias: Any, path: Path, t: Any, test: ColumnElement[bool],
              negate: bool) -> tuple[ColumnElement[bool], bool]:
    """``(test, negate)`` of a filter leaf on ``path`` for ``alias``, the record holding its first
    reference field, given the leaf's ``test`` of the last part on ``t`` (an alias of records),
    NOT-ed when ``negate`` (as :meth:`.filters._Compiler.positive` gives them).

    The live records of the last target schema that pass the test are found first, then those
    that reach them, hop by hop (``record_links`` read by target), ending on ``alias.id IN
    (…)``, which reads no stored values. Through single references a record has one value (or
    none: no target, a deleted one, or one without a value), so ``ne`` and ``is_null`` are NOT
    the positive test, as for an ancestor (``negate`` is passed on). Through a
    ``reference_list`` the leaf matches when ANY live target passes it (``ne`` applied to each
    target), as for descendants."""
    inside = negate and path.many  # ANY target whose value passes NOT the test
    if path.steps == 0:
        ids: Any = select(t.id).where(t.schema_id == path.last.schema.id, t.deleted_at.is_(None),
                                      not_(test) if inside else test)
    else:  # the last part is inherited: the owners that pass, walked down to the targets
        hit = walk_down(select(t.id).where(t.schema_id == path.owner.schema.id, test), path.steps)
        found = aliased(Record)
        ids = select(found.id).where(found.schema_id == path.last.schema.id, found.deleted_at.is_(None),
                                     found.id.not_in(hit) if inside else found.id.in_(hit))
    ids = _few(session, ids)
    for i in range(len(path.hops) - 1, 0, -1):
        ids = _few(session, referrers_of(path.hops[i], ids, path.hops[i - 1].target, dialect))
    first = path.hops[0].field.id
    outside = negate and not path.many
    sources = select(RecordLink.source_id).where(among(RecordLink.target_id, ids, dialect),
                                                 RecordLink.field_id == first)
    if (outside and dialect == "postgresql") or _more_than(session, sources, SOURCE_IDS):
        # each record's own links looked up by the primary key (source, field, target): many
        # sources made SQLite build their whole list for every page (170,000 for one airline
        # at 1,000,000 flights); a negated IN is a per-row scan on PostgreSQL, NOT EXISTS an anti-join.
        # ``target_id || ''``: SQLite sought (source, field, target) once per target (1,500
        # planes: 1,500 seeks a record) instead of (source, field) once, the target then tested
        target = RecordLink.target_id.concat("") if dialect == "sqlite" else RecordLink.target_id
        return exists(select(1).where(RecordLink.source_id == alias.id, RecordLink.field_id == first,
                                      among(target, ids, dialect))), outside
    return alias.id.in_(sources), outside


def _more_than(session: Session, ids: Any, n: int) -> bool:
    """Whether the SELECT ``ids`` finds more than ``n`` rows (reads at most ``n + 1``)."""
    return (session.scalar(select(func.count()).select_from(ids.limit(n + 1).subquery())) or 0) > n


def _few(session: Session, ids: Any) -> Any:
    """``ids`` (a SELECT of record ids) as a list of values when it finds at most
    :data:`TARGET_IDS` (the planners then know how many they look for), else as it is."""
    if isinstance(ids, list):
        return ids
    found = list(session.scalars(ids.limit(TARGET_IDS + 1)))
    return found if len(found) <= TARGET_IDS else ids


# ------------------------------------------------------------------------------------ sorts

def up_alias(start: Any, steps: int, owner: SchemaMeta) -> tuple[Any, list[ColumnElement[bool]]]:
    """``(alias, conditions)``: the record ``steps`` above ``start`` (an alias of records), of
    schema ``owner``, and the join conditions up ``parent_id`` that find it (``start`` itself
    and no conditions for 0 steps)."""
    if steps == 0:
        return start, []
    chain = [aliased(Record) for _ in range(steps)]
    links = [chain[i].id == (chain[i - 1].parent_id if i else start.parent_id) for i in range(steps)]
    return chain[-1], [*links, chain[-1].schema_id == owner.schema.id]


def path_scalar(path: Path, holder_steps: int, value: Any) -> Any:
    """Correlated scalar subquery: ``value(alias, path)`` read on the record a single-reference
    ``path`` ends on, for each listed record (``Record``), the first hop's field being owned by
    its ancestor ``holder_steps`` up (0: its own); NULL without a live target at every hop.
    ``value`` takes the alias of the record holding the last part (the last target, or its
    ancestor owning that field)."""
    at, conds = up_alias(Record, holder_steps, path.hops[0].owner)
    for i, hop in enumerate(path.hops):
        if i:
            at, up = up_alias(at, hop.steps, hop.owner)
            conds += up
        target = aliased(Record)
        conds += [target.id == at.data[hop.field.id].as_string(), target.deleted_at.is_(None)]
        at = target
    at, up = up_alias(at, path.steps, path.owner)
    return select(value(at, path)).where(*conds, *up).scalar_subquery()
