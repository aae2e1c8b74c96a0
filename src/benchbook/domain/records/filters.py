"""The record filter tree (docs/filters.md), compiled to one SQL condition over ``records``.

A group is ``{"and": [...]}`` or ``{"or": [...]}`` (a non-empty list, nestable up to the
``filter_depth`` limit, with at most ``filter_leaves`` leaves: ``docs/limits.md``); a leaf is ``{field, op, value, schema?}``. A leaf is resolved once for
each *base* schema the list can show (the query's ``schema``, else every schema of the collection):

- the target schema X is the leaf's ``schema``, else the base schema S;
- the field name resolves on X: X's own field, else the nearest ancestor schema's (inherited; an
  own field shadows an ancestor's of the same name);
- X is S or an ancestor of S: the base record, or the ancestor record owning the field reached up
  ``records.parent_id`` in a correlated EXISTS, is tested;
- X is a descendant of S: a record matches when ANY live descendant of schema X (found down the
  schema chain, whose depth is fixed) satisfies the test;
- otherwise records of S do not match; so do they when the name does not resolve on X.

Every leaf decides true or false for each record: ``ne`` is exactly NOT ``eq`` and ``is_null``
true exactly NOT ``is_null`` false, so both match records without a value (and records without
such an ancestor).
The user-facing rules are written down in ``docs/filters.md``. Text comparisons are made in code
point order and ``contains`` folds ASCII letters only, so SQLite and PostgreSQL answer alike.
"""
from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, func, not_, or_, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import BooleanClauseList
from sqlalchemy.sql.operators import and_ as and_op

from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta, collection_schemas
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, NotFound, error_entry
from benchbook.domain.history.filters import check_bounds
from benchbook.domain.records.paths import (
    MAX_DEPTH,
    Path,
    PathError,
    ancestor_metas,
    path_test,
    resolve_field,
    resolve_path,
)
from benchbook.domain.records.search import like_pattern
from benchbook.persistence.tables import Collection, Field, Record, Schema
from benchbook.settings import limits

__all__ = ["ANCESTOR_IDS", "LEAF_KEYS", "LIST_TYPES", "MAX_DEPTH", "NESTED_WALK", "TargetColumn", "ancestor_metas",
           "ancestor_scalar", "compile_filter", "resolve_field", "value_of"]  # MAX_DEPTH, ancestor_metas, resolve_field: paths.py's

LEAF_KEYS = ("field", "op", "value", "schema")
LIST_TYPES = frozenset({"tags", "file_list", "reference_list"})
_ACCESSOR = {"integer": "as_float", "float": "as_float", "boolean": "as_boolean"}
_ORDER_OPS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
_COERCE_AS = {"integer": "float", "tags": "string", "url": "string", "reference_list": "reference",
              "file_list": "file"}  # integer as float: "count gt 2.5" is a fair question
_UPPER, _LOWER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
_FOLD = str.maketrans(_UPPER, _LOWER)


def value_of(alias: Any, f: Field) -> ColumnElement[Any]:
    """SQL expression for ``f``'s stored value on ``alias`` (``Record`` or an alias of it), typed
    by its dtype: numbers as floats, booleans as booleans, anything else as text."""
    return getattr(alias.data[f.id], _ACCESSOR.get(f.type, "as_string"))()  # type: ignore[no-any-return]


@dataclass(frozen=True)
class TargetColumn:
    """A target record's own column a reference path may end on (``natural_name``, ``id``),
    tested as a string field of that name."""

    name: str
    type: str = "string"
    restrictions: Any = None


def _up_chain(steps: int, owner: Schema) -> tuple[Any, list[ColumnElement[bool]]]:
    """``(alias, conditions)``: an alias of the base record's ancestor ``steps`` (≥ 1) up, which
    must be of schema ``owner``, and the join conditions up ``records.parent_id`` that find it."""
    chain = [aliased(Record) for _ in range(steps)]
    links = [chain[i].id == (chain[i - 1].parent_id if i else Record.parent_id) for i in range(steps)]
    return chain[-1], [*links, chain[-1].schema_id == owner.id]


NESTED_WALK = 8
"""Levels up to which an ancestor leaf walks down from the matching ancestors by nested ``IN``
subqueries (:meth:`_Compiler.up_test`); further up, one statement joins the levels, since
SQLite's parser stack overflowed from 11 nested subqueries on (a 500 for a field 12 schemas up)."""

ANCESTOR_IDS = 1000
"""Ancestors matching an ancestor leaf up to which their ids are given to the query as values
(more: a subquery finds them), :meth:`_Compiler.up_test`."""


def ancestor_scalar(steps: int, owner: Schema, column: Any) -> Any:
    """Correlated scalar subquery: ``column(alias)`` of the base record's ancestor ``steps`` up
    (which must be of schema ``owner``), NULL without one. Used for sorting by ancestor fields."""
    alias, conds = _up_chain(steps, owner)
    return select(column(alias)).where(*conds).scalar_subquery()


@dataclass
class _Leaf:
    """A checked leaf: field name, op, raw value, target schema (None: the base) and location."""

    node: dict[str, Any]
    loc: list[Any]
    field: str
    op: str
    value: Any
    schema: SchemaMeta | None

    def bad(self, msg: str, type_: str = "filter", kind: type[BenchbookError] = Invalid) -> BenchbookError:
        """The error of this leaf: ``Invalid`` (the tree is wrong), ``NotFound`` (it names a
        schema or field that does not exist) or ``Conflict`` (one that exists but not here)."""
        where = "/".join(map(str, self.loc[2:])) or "root"
        return kind(f"filter {where} (field {self.field!r}): {msg}",
                    [error_entry(self.loc, f"{self.field}: {msg}", type_, self.node)])


def _unstorable(value: Any) -> bool:
    """Whether any string of ``value`` holds a NUL character or a lone surrogate: text no
    database stores (PostgreSQL and the drivers refuse it), so it cannot match anything."""
    if isinstance(value, str):
        if "\x00" in value:
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_unstorable(k) or _unstorable(v) for k, v in value.items())
    return isinstance(value, list) and any(_unstorable(v) for v in value)


def _bad_node(loc: list[Any], node: Any, msg: str, type_: str = "filter") -> Invalid:
    where = "/".join(map(str, loc[2:])) or "root"
    return Invalid(f"filter {where}: {msg}", [error_entry(loc, msg, type_, node)])


class _Compiler:
    """Compiles one tree for one record query (one collection, optional base schema)."""

    def __init__(self, session: Session, collection: Collection, base: Schema | None, tz: str | None) -> None:
        self.session, self.collection, self.tz = session, collection, tz
        self.cache = SchemaCache(session)
        self.dialect = session.get_bind().dialect.name
        ids = [i for i, _ in collection_schemas(session, collection.id)]
        self.in_collection = set(ids)
        self.bases = [self.cache.meta(base.id)] if base is not None else [self.cache.meta(i) for i in ids]
        # conditions that read no stored values of the record itself (an ancestor leaf: its
        # parent_id among ids found once), by id(): an AND tests them first, since SQLite tests
        # a row's conditions in the order written and the first one that reads the values
        # parses the row's JSON (a walked page with an ancestor leaf: 69 -> 32 ms at 1,000,000)
        self.column_only: set[int] = set()

    def _column_only(self, condition: ColumnElement[bool]) -> ColumnElement[bool]:
        self.column_only.add(id(condition))
        return condition

    def split(self, parts: list[ColumnElement[bool]]) -> tuple[list[ColumnElement[bool]], list[ColumnElement[bool]]]:
        """``parts`` of an AND as ``(those that read no stored values, the others)``, each in the
        order given."""
        return ([p for p in parts if id(p) in self.column_only],
                [p for p in parts if id(p) not in self.column_only])

    # ------------------------------------------------------------------------------- the tree

    def node(self, node: Any, loc: list[Any]) -> ColumnElement[bool]:
        if not isinstance(node, dict) or not node:
            raise _bad_node(loc, node, 'each node must be a group ({"and": [...]} or {"or": [...]}) '
                                       "or a leaf object ({field, op, value, schema})")
        if "and" in node or "or" in node:
            if len(node) != 1:
                raise _bad_node(loc, node, f"a group has exactly one key, and or or (got {sorted(node)})")
            key, children = next(iter(node.items()))
            if not isinstance(children, list) or not children:
                raise _bad_node([*loc, key], children, f"{key} needs a non-empty list of nodes")
            parts = [self.node(child, [*loc, key, i]) for i, child in enumerate(children)]
            if key == "or":
                return or_(*parts)
            first, rest = self.split(parts)
            group = and_(*first, *rest)
            return group if rest else self._column_only(group)
        return self.leaf(self.check_leaf(node, loc))

    def check_leaf(self, node: dict[str, Any], loc: list[Any]) -> _Leaf:
        extra = sorted(set(node) - set(LEAF_KEYS))
        name = node.get("field")
        if not isinstance(name, str) or not name:
            raise _bad_node(loc, node, "a leaf needs field (a field name)" +
                            (f"; unknown keys {extra}" if extra else ""))
        leaf = _Leaf(node, loc, name, node.get("op"), node.get("value"), None)  # type: ignore[arg-type]
        if extra:
            raise leaf.bad(f"unknown keys {extra} (a leaf has {', '.join(LEAF_KEYS)})")
        if _unstorable(node):
            raise leaf.bad("text with a NUL character or a lone surrogate cannot be stored, so cannot match",
                           "string_unicode")
        if leaf.op not in dtypes.OPERATORS:
            raise leaf.bad(f"unknown op {leaf.op!r} (use {', '.join(dtypes.OPERATORS)})", "unknown_op")
        schema = node.get("schema")
        if schema is not None:
            if not isinstance(schema, str) or not schema:
                raise leaf.bad("schema must be a schema name")
            try:
                found = self.cache.schema_named(schema)
            except NotFound:
                raise leaf.bad(f"unknown schema {schema!r}", "unknown_schema", NotFound) from None
            if found.schema.id not in self.in_collection:
                raise leaf.bad(f"schema {found.schema.name!r} is not one of collection {self.collection.name!r}'s",
                               "schema", Conflict)
            leaf.schema = found
        return leaf

    # ------------------------------------------------------------------------------- a leaf

    def leaf(self, leaf: _Leaf) -> ColumnElement[bool]:
        options: list[ColumnElement[bool]] = []
        related = resolved = False
        problem: PathError | None = None
        for base in self.bases:
            target = leaf.schema or base
            if target.schema.id == base.schema.id:
                distance = 0
            elif target in (ups := ancestor_metas(self.cache, base)):
                distance = ups.index(target) + 1
            elif base in (downs := ancestor_metas(self.cache, target)):
                distance = -(downs.index(base) + 1)
            else:
                continue
            related = True
            try:
                found = self.resolve(target, leaf.field)
            except PathError as exc:
                problem = problem or exc
                continue
            if found is None:
                continue
            resolved = True
            steps, owner, f = found
            test = self.test_on(base, target, distance, steps, owner, f, leaf)
            options.append(test if len(self.bases) == 1 else and_(Record.schema_id == base.schema.id, test))
        if not related and leaf.schema is not None:
            raise leaf.bad(f"schema {leaf.schema.schema.name!r} is neither {self.bases[0].schema.name!r} "
                           "nor one of its ancestor or descendant schemas", "schema", Conflict)
        if not resolved and problem is not None:
            raise leaf.bad(problem.msg, problem.type_, problem.error_class)
        if not resolved:
            where = (f"schema {leaf.schema.schema.name!r}" if leaf.schema else
                     f"schema {self.bases[0].schema.name!r}" if len(self.bases) == 1 else
                     f"any schema of collection {self.collection.name!r}")
            raise leaf.bad(f"unknown field {leaf.field!r} of {where} (own or inherited)", "unknown_field", NotFound)
        if leaf.op == "in" and not leaf.value:
            return false()  # checked above; an empty list matches nothing
        return or_(*options) if len(options) != 1 else options[0]

    def resolve(self, target: SchemaMeta, name: str) -> tuple[int, SchemaMeta, Field | Path] | None:
        """Where ``name`` lives on records of ``target``: :func:`resolve_field` for a field name;
        for a path through references (``carrier.name``, :mod:`.paths`) the place of its first
        reference field and the path itself. None when the (first) name is no field of
        ``target``; raises :class:`PathError` for a path that cannot be followed."""
        if "." not in name:
            return resolve_field(self.cache, target, name)
        path = resolve_path(self.cache, target, name)
        return None if path is None else (path.hops[0].steps, path.hops[0].owner, path)

    def test_on(self, base: SchemaMeta, target: SchemaMeta, distance: int, steps: int, owner: SchemaMeta,
                f: Field | Path, leaf: _Leaf) -> ColumnElement[bool]:
        """The leaf's test for records of ``base``; ``distance`` > 0: target that many levels up,
        < 0: that many down; the field's ``owner`` is ``steps`` above the target."""
        if distance >= 0:
            return self.up_test(distance + steps, owner, f, leaf)
        depth = -distance
        chain = [aliased(Record) for _ in range(depth)]
        metas = list(reversed([target, *ancestor_metas(self.cache, target)][:depth]))
        conds: list[ColumnElement[bool]] = []
        for i, (alias, meta) in enumerate(zip(chain, metas, strict=True)):
            conds += [alias.parent_id == (chain[i - 1].id if i else Record.id),
                      alias.schema_id == meta.schema.id, alias.deleted_at.is_(None)]
        level = depth - steps  # the owner's level below the base record
        if level > 0:
            positive, negate = self.positive(chain[level - 1], f, leaf)
            return exists(select(1).where(*conds, not_(positive) if negate else positive))
        return and_(exists(select(1).where(*conds)), self.up_test(-level, owner, f, leaf))

    def up_test(self, steps: int, owner: SchemaMeta, f: Field | Path, leaf: _Leaf) -> ColumnElement[bool]:
        """The leaf's test on the base record (``steps`` 0) or its ancestor ``steps`` up, of
        schema ``owner``; a record without that ancestor counts as having no value."""
        if steps == 0:
            positive, negate = self.positive(Record, f, leaf)
            test = not_(positive) if negate else positive
            return self._column_only(test) if isinstance(f, Path) else test  # record_links, no values
        # not correlated: the ids of the matching ancestors are found once, then walked down
        # ``steps - 1`` levels (a correlated EXISTS would look the ancestor up for every row)
        top = aliased(Record)
        test, negate = self.positive(top, f, leaf)
        ids = select(top.id).where(top.schema_id == owner.schema.id, test)
        if steps - 1 <= NESTED_WALK:
            for _ in range(steps - 1):
                level = aliased(Record)
                ids = select(level.id).where(level.parent_id.in_(ids))
        else:  # one statement joining the levels: SQLite's parser overflows on deeper nesting
            levels = [aliased(Record) for _ in range(steps - 1)]
            ids = select(levels[-1].id).where(top.schema_id == owner.schema.id, test, *(
                level.parent_id == (levels[i - 1].id if i else top.id) for i, level in enumerate(levels)))
        # up to ANCESTOR_IDS of them are written into the query as values: the planner then knows
        # how many parents it looks for (with a subquery it guessed few and took the parent index:
        # 100 plots x 1,000 children read to count 958 matches, 1.1 s, instead of 80 ms)
        found = list(self.session.scalars(ids.limit(ANCESTOR_IDS + 1)))
        if len(found) <= ANCESTOR_IDS:
            ids = found  # type: ignore[assignment]
        if negate:  # two-valued: a record without a parent has no such ancestor
            return self._column_only(not_(and_(Record.parent_id.is_not(None), Record.parent_id.in_(ids))))
        return self._column_only(Record.parent_id.in_(ids))

    # --------------------------------------------------------------------------- values, ops

    def path_positive(self, alias: Any, path: Path, leaf: _Leaf) -> tuple[ColumnElement[bool], bool]:
        """:meth:`positive` for a path through references, ``alias`` being the record holding its
        first reference field: the last part's test on the targets, followed back hop by hop
        (:func:`.paths.path_test`, which gives the rules)."""
        t = aliased(Record)
        test, negate = self.positive(t, path.field or TargetColumn(str(path.column)), leaf)
        return path_test(self.session, self.dialect, alias, path, t, test, negate)

    def positive(self, alias: Any, f: Field | Path | TargetColumn, leaf: _Leaf) -> tuple[ColumnElement[bool], bool]:
        """``(test, negate)``: a test of ``alias``'s value of ``f``; the leaf is the test, or NOT
        the test when ``negate`` (``ne``, ``is_null`` true). A test that is negated is two-valued
        (never NULL); one that is not may be NULL where there is no value, which a WHERE clause
        of ANDs, ORs and EXISTS treats as false, and it then carries no extra ``IS NOT NULL``
        (each is one more JSON parse per candidate row)."""
        if isinstance(f, Path):
            return self.path_positive(alias, f, leaf)
        ops = dtypes.FIELD_TYPES[f.type].operators
        if leaf.op not in ops:
            raise leaf.bad(f"op {leaf.op!r} does not apply to {f.type} fields (use {', '.join(ops)})", "op")
        listed = f if not isinstance(f, TargetColumn) and f.type in LIST_TYPES else None
        expr = getattr(alias, f.name) if isinstance(f, TargetColumn) else value_of(alias, f)
        has = expr.is_not(None) if isinstance(f, TargetColumn) else alias.data[f.id].as_string().is_not(None)
        if leaf.op == "is_null":
            return self._is_null(leaf, has)
        if leaf.op == "in":
            return self._any_of(alias, f, leaf, expr, listed)
        return self._one_value(alias, f, leaf, expr, has, listed)

    @staticmethod
    def _is_null(leaf: _Leaf, has: ColumnElement[bool]) -> tuple[ColumnElement[bool], bool]:
        """``is_null``: ``(has a value, negate)``, negated unless the leaf's value is false. Raises ``Invalid``
        for a value other than true, false or none."""
        if leaf.value is not None and not isinstance(leaf.value, bool):
            raise leaf.bad("is_null takes true, false or no value", "bool_type")
        return has, leaf.value is not False

    def _any_of(self, alias: Any, f: Field | TargetColumn, leaf: _Leaf, expr: Any,
                listed: Field | None) -> tuple[ColumnElement[bool], bool]:
        """``in``: ``expr`` (or, for a list field ``listed``, one of its items) is one of the leaf's values;
        false for an empty list. Raises ``Invalid`` for a value that is not a list or an item that does not
        suit ``f``."""
        if not isinstance(leaf.value, list):
            raise leaf.bad("in needs a list of values", "list_type")
        items = [self.coerce(f, v, leaf, i) for i, v in enumerate(leaf.value)]
        if not items:
            return false(), False
        if listed is not None:
            return self.has_item(alias, listed, items), False
        return expr.in_(items), False

    def _one_value(self, alias: Any, f: Field | TargetColumn, leaf: _Leaf, expr: Any, has: ColumnElement[bool],
                   listed: Field | None) -> tuple[ColumnElement[bool], bool]:
        """The ops taking one value (``eq``, ``ne``, ``contains``, the order ops): ``(test, negate)``. On a list
        field ``listed`` eq, ne and contains test whether the list holds the item. Raises ``Invalid`` for a
        list or object value or one that does not suit ``f``."""
        if isinstance(leaf.value, (list, dict)):
            hint = " (in takes a list: any of its items)" if isinstance(leaf.value, list) else ""
            raise leaf.bad(f"{leaf.op} takes one value{hint}", "value_type")
        value = self.coerce(f, leaf.value, leaf)
        if listed is not None:  # eq, ne, contains: the list holds that item
            test = self.has_item(alias, listed, [value])
            return (and_(has, test), True) if leaf.op == "ne" else (test, False)
        if leaf.op == "contains":
            text = str(value).translate(_FOLD)
            pattern = like_pattern(text)
            # ASCII letters only on both: SQLite's lower() knows no others
            folded = func.lower(expr) if self.dialect == "sqlite" else func.translate(expr, _UPPER, _LOWER)
            return folded.like(pattern, escape="\\"), False
        if leaf.op == "ne":
            return and_(has, expr == value), True
        if leaf.op == "eq":
            return expr == value, False
        if self.dialect == "postgresql" and f.type not in _ACCESSOR:
            expr = expr.collate("C")  # code point order, as SQLite's BINARY
        return _ORDER_OPS[leaf.op](expr, value), False

    def coerce(self, f: Field | TargetColumn, value: Any, leaf: _Leaf, index: int | None = None) -> Any:
        """``value`` in the stored form of ``f``'s type (restrictions other than a datetime's
        timezone are not applied: a filter may name any value). Raises ``Invalid``."""
        what = "value" if index is None else f"value[{index}]"
        type_ = _COERCE_AS.get(f.type, f.type)
        if type_ == "string" and f.type != "string" and isinstance(value, str):
            value = value.strip()  # stored tags and URLs are trimmed
        zone = (f.restrictions or {}).get("timezone")
        try:
            out = dtypes.coerce_value(type_, {"timezone": zone} if zone else {}, value, tz=self.tz)
        except dtypes.ValueProblem as exc:
            msg = f"{what} {value!r} does not suit {f.type} field {f.name!r}: {exc.msg}"
            raise leaf.bad(msg, exc.type_) from None
        if out is None:
            raise leaf.bad(f"{what} is missing or blank (use is_null to find records without a value)",
                           "missing")
        return out

    def has_item(self, alias: Any, f: Field, items: list[Any]) -> ColumnElement[bool]:
        """The list value of ``f`` on ``alias`` holds one of ``items`` (dialect-aware)."""
        if self.dialect == "postgresql":
            element = type_coerce(alias.data, JSONB)[f.id]
            return or_(*(element.has_key(item) for item in items))
        each = func.json_each(alias.data, f'$."{f.id}"').table_valued("value")
        return exists(select(1).select_from(each).where(each.c.value.in_(items)))


def compile_filter(session: Session, collection: Collection, base_schema: Schema | None, tree_json: str, *,
                   tz: str | None) -> ColumnElement[bool]:
    """Compile the record filter tree ``tree_json`` (the ``filter`` query parameter) to one SQL
    condition over ``records`` (correlated EXISTS subqueries for ancestor, inherited and
    descendant leaves; no Python-side filtering).

    ``base_schema`` is the query's ``schema`` (None: leaves resolve against each of the
    collection's schemas, and records of a schema where a leaf's field does not resolve do not
    match that leaf); ``tz`` is the collection's timezone, in which datetime values without an
    offset are read (a datetime field's own ``timezone`` restriction comes first).

    On SQLite a record whose stored values are longer than the ``record_length`` limit (stored
    before the limit existed; ``docs/limits.md``) matches no filter: SQLite would hold a copy of
    the value per leaf while deciding the row, so the memory of a query is bounded whatever the
    stored data.

    Raises ``Invalid`` (422) for text that is not JSON, a malformed tree (not an object, an
    empty or many-keyed group, unknown leaf keys), a tree past the limits (``filter_depth``,
    ``filter_leaves``, ``filter_values``: :func:`benchbook.domain.history.filters.check_bounds`), an unknown
    op, an op that does not apply to the field's type, a non-list ``in`` or a value of the wrong
    type; ``NotFound`` (404) for an unknown field or schema, ``Conflict`` (409) for a schema not
    of the collection or unrelated to ``base_schema``. Its single ``errors`` entry has
    ``loc`` ``["query", "filter", <path to the node>]``, e.g. ``["query", "filter", "and", 1,
    "or", 0]``, and a message naming the leaf's field.
    """
    try:
        tree = json.loads(tree_json)
    except (ValueError, RecursionError) as exc:  # ValueError: bad JSON, or an integer over 4300 digits
        msg = (f"invalid JSON: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else
               "nested too deep" if isinstance(exc, RecursionError) else str(exc))
        entry = error_entry(["query", "filter"], msg, "json_invalid", tree_json[:200])
        raise Invalid(f"filter: {msg}", [entry]) from None
    check_bounds(tree, ["query", "filter"])
    compiler = _Compiler(session, collection, base_schema, tz)
    condition = compiler.node(tree, ["query", "filter"])
    if compiler.dialect != "sqlite":
        return condition
    # SQLite holds each leaf's copy of a value until the row is decided: a record past the write
    # limit (stored before it existed) would cost its size per leaf, so it is skipped before the
    # first leaf that reads the values (after those that read none)
    parts = list(condition.clauses) if isinstance(condition, BooleanClauseList) and condition.operator is and_op \
        else [condition]
    first, rest = compiler.split(parts)
    return and_(*first, func.length(Record.data) <= limits.current().record_length, *rest)
