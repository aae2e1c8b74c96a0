"""The history filter tree (docs/filters.md *The tree*, docs/decisions.md *History*: run and history
filters use the same tree form; their fields come from the respective filter-fields endpoints),
compiled to SQL over audit entries. Fields are those of :data:`FIELDS`
(``GET /audit/filter-fields``)."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from benchbook.domain.errors import Invalid, error_entry
from benchbook.domain.history.entries import ACTIONS, BATCH_KINDS, ENTITY_TYPES, parse_since
from benchbook.domain.records.search import like_pattern
from benchbook.persistence.tables import AuditBatch, AuditEntry, Collection, Schema
from benchbook.settings import limits

TEXT_OPS = ["eq", "ne", "in", "contains", "is_null"]
TIME_OPS = ["gt", "gte", "lt", "lte", "is_null"]
FIELDS: list[dict[str, Any]] = [
    {"name": "action", "label": "Action", "description": "What the change did.", "type": "string",
     "operators": ["eq", "ne", "in"], "choices": list(ACTIONS)},
    {"name": "entity_type", "label": "Kind of thing", "description": "What was changed.", "type": "string",
     "operators": ["eq", "ne", "in"], "choices": list(ENTITY_TYPES)},
    {"name": "entity_id", "label": "Thing id", "description": "Id of what was changed.", "type": "string",
     "operators": ["eq", "ne", "in"], "choices": None},
    {"name": "actor", "label": "Actor", "description": "Who made the change (unverified).", "type": "string",
     "operators": TEXT_OPS, "choices": None},
    {"name": "timestamp", "label": "When", "description": "When the change was made (zone-less = UTC).",
     "type": "datetime", "operators": TIME_OPS[:-1], "choices": None},
    {"name": "batch_kind", "label": "Batch kind", "description": "Kind of the batch the change belongs to.",
     "type": "string", "operators": ["eq", "ne", "in", "is_null"], "choices": list(BATCH_KINDS)},
    {"name": "collection", "label": "Collection", "description": "Name of the collection concerned.",
     "type": "string", "operators": ["eq", "ne", "in"], "choices": None},
    {"name": "schema", "label": "Schema", "description": "Name of the schema concerned.", "type": "string",
     "operators": ["eq", "ne", "in"], "choices": None},
]
_BY_NAME = {f["name"]: f for f in FIELDS}


def _column(name: str) -> Any:
    if name == "batch_kind":
        return select(AuditBatch.kind).where(AuditBatch.id == AuditEntry.batch_id).scalar_subquery()
    if name == "collection":
        return select(Collection.name).where(Collection.id == AuditEntry.dataset_id).scalar_subquery()
    if name == "schema":
        return select(Schema.name).where(Schema.id == AuditEntry.schema_id).scalar_subquery()
    return getattr(AuditEntry, name)


@dataclass
class Leaf:
    """One leaf of a run or history filter tree, checked against its fields (:func:`read_leaf`):
    the field's descriptor ``spec`` (``name``, ``type``, ``operators``…), ``op``, ``value`` and the
    SQL ``column`` the field reads."""

    node: dict[str, Any]
    loc: list[Any]
    spec: dict[str, Any]
    op: str
    value: Any
    column: Any

    def bad(self, msg: str) -> Invalid:
        """A 422 for this leaf: ``filter <path>: msg``, its entry at ``loc``."""
        return bad_leaf(self.node, self.loc, msg)

    def null_test(self) -> ColumnElement[bool]:
        """``is_null``: true or no value (column is null), false (it is not). Raises ``Invalid``."""
        if self.value is not None and not isinstance(self.value, bool):
            raise self.bad("is_null takes true, false or no value")
        return self.column.is_(None) if self.value in (None, True) else self.column.is_not(None)  # type: ignore[no-any-return]

    def strings(self) -> list[str]:
        """``in``'s value: a list of strings. Raises ``Invalid``."""
        if not isinstance(self.value, list) or not all(isinstance(v, str) for v in self.value):
            raise self.bad("in needs a list of strings")
        return self.value


def bad_leaf(node: Any, loc: list[Any], msg: str) -> Invalid:
    """A 422 for the filter leaf ``node`` at ``loc`` (``["query", "filter", …path]``)."""
    return Invalid(f"filter {'/'.join(map(str, loc[2:])) or 'root'}: {msg}", [error_entry(loc, msg, "filter", node)])


def read_leaf(node: dict[str, Any], loc: list[Any], fields: dict[str, dict[str, Any]],
              column: Callable[[str], Any], listed_at: str) -> Leaf:
    """Check a leaf's keys (``field``, ``op``, ``value``, ``schema``), its field (one of ``fields``,
    by name; ``listed_at`` names the endpoint that lists them) and its operator (one of the
    field's). Shared by the history filter and the run filter (docs/filters.md *The tree*: the
    same tree form). Raises ``Invalid`` naming what is wrong."""
    if set(node) - {"field", "op", "value", "schema"}:
        raise bad_leaf(node, loc, f"unknown keys {sorted(set(node) - {'field', 'op', 'value', 'schema'})}")
    name = node.get("field")
    spec = fields.get(name) if isinstance(name, str) else None
    if spec is None:
        raise bad_leaf(node, loc, f"unknown field {node.get('field')!r} (see {listed_at})")
    op = node.get("op")
    if op not in spec["operators"]:
        raise bad_leaf(node, loc, f"operator {op!r} does not apply to {spec['name']} "
                                  f"(use {', '.join(spec['operators'])})")
    return Leaf(node, loc, spec, str(op), node.get("value"), column(spec["name"]))


def _leaf(node: dict[str, Any], loc: list[Any]) -> ColumnElement[bool]:
    leaf = read_leaf(node, loc, _BY_NAME, _column, "GET /audit/filter-fields")
    spec, op, value, col, bad = leaf.spec, leaf.op, leaf.value, leaf.column, leaf.bad
    if op == "is_null":
        return leaf.null_test()
    if op == "in":
        values = leaf.strings()
        return col.in_([v.upper() for v in values] if spec["name"] == "entity_id" else values)  # type: ignore[no-any-return]
    if not isinstance(value, str):
        raise bad("value must be a string")
    if spec["type"] == "datetime":
        try:
            moment = parse_since(value)
        except Invalid:
            raise bad(f"{value!r} is not an ISO 8601 date or date-time") from None
        if moment is None:
            raise bad("a date or date-time is needed")
        compare: dict[Any, ColumnElement[bool]] = {"gt": col > moment, "gte": col >= moment, "lt": col < moment,
                                                   "lte": col <= moment}
        return compare[op]
    if op == "contains":
        return col.ilike(like_pattern(value), escape="\\")  # type: ignore[no-any-return]
    if spec["name"] == "entity_id":
        value = value.upper()
    return (col == value) if op == "eq" else or_(col != value, col.is_(None))


def check_bounds(tree: Any, loc: list[Any]) -> None:
    """Refuse a filter tree larger than the current limits (:func:`benchbook.settings.limits.current`,
    ``docs/limits.md``) before anything compiles it: ``and``/``or`` groups nested deeper than
    ``filter_depth``, more than ``filter_leaves`` leaves (every leaf is one more test of each
    candidate row, and SQLite refuses a condition of ~1,000 terms) or an ``in`` list of more
    than ``filter_values`` values. Walks iteratively (no recursion limit); malformed nodes are
    left for the compiler to name. Raises ``Invalid`` (422) whose entry's ``loc`` is ``loc`` plus
    the path to the node."""
    bound = limits.current()
    leaves = 0
    stack: list[tuple[Any, list[Any], int]] = [(tree, loc, 0)]
    while stack:
        node, where, depth = stack.pop()
        if not isinstance(node, dict):
            continue
        key = next(iter(node)) if len(node) == 1 else None
        if key in ("and", "or"):
            if depth + 1 > bound.filter_depth:  # named at its first child: what is one level too deep
                raise Invalid(f"filter: groups nest deeper than {bound.filter_depth} levels",
                              [error_entry([*where, key, 0], f"groups nest deeper than {bound.filter_depth} levels "
                                                  "([limits] filter_depth)", "filter_too_deep", None)])
            children = node[key]
            if isinstance(children, list):
                stack.extend((child, [*where, key, i], depth + 1) for i, child in enumerate(children))
            continue
        leaves += 1
        if leaves > bound.filter_leaves:
            raise Invalid(f"filter: more than {bound.filter_leaves} leaves",
                          [error_entry(loc, f"the filter has more than {bound.filter_leaves} leaves ([limits] "
                                            "filter_leaves); use in with a list of values instead of many eq "
                                            "leaves", "filter_too_large", None)])
        value = node.get("value")
        if isinstance(value, list) and len(value) > bound.filter_values:
            raise Invalid(f"filter: an in list of more than {bound.filter_values} values",
                          [error_entry(where, f"in takes at most {bound.filter_values} values ([limits] "
                                              f"filter_values); this one has {len(value)}", "filter_too_large",
                                       None)])


def compile_tree(node: Any, loc: list[Any], leaf: Callable[[Any, list[Any]], ColumnElement[bool]]
                 ) -> ColumnElement[bool]:
    """The SQL condition of a filter tree (docs/filters.md *The tree*) whose leaves ``leaf(node, loc)``
    compiles: ``and``/``or`` groups of non-empty lists, within the bounds :func:`check_bounds`
    enforces (checked here once, at the root). Shared by the history filter and the run filter.
    Raises ``Invalid`` naming the node's ``loc``."""
    check_bounds(node, loc)
    return _compile(node, loc, leaf)


def _compile(node: Any, loc: list[Any], leaf: Callable[[Any, list[Any]], ColumnElement[bool]]
             ) -> ColumnElement[bool]:
    if not isinstance(node, dict) or not node:
        raise Invalid("filter: each node must be a group or a leaf object",
                      [error_entry(loc, "expected an object", "filter", node)])
    if set(node) <= {"and", "or"} and len(node) == 1:
        key = next(iter(node))
        children = node[key]
        if not isinstance(children, list) or not children:
            raise Invalid(f"filter: {key} needs a non-empty list",
                          [error_entry([*loc, key], "expected a non-empty list", "filter", children)])
        parts = [_compile(child, [*loc, key, i], leaf) for i, child in enumerate(children)]
        return and_(*parts) if key == "and" else or_(*parts)
    return leaf(node, loc)


def compile_history_filter(session: Session, tree: Any, loc: list[Any] | None = None) -> ColumnElement[bool]:
    """SQL condition over ``audit_entries`` for a filter tree: JSON text (the ``filter`` query
    parameter) or an already parsed tree (the ``filter`` of a request body). Errors name where
    the tree came from: ``loc`` if given, else ``["query", "filter", …]`` for text and ``["body",
    "filter", …]`` for a parsed tree. Raises ``Invalid``."""
    del session
    where = list(loc) if loc is not None else ["query" if isinstance(tree, str) else "body", "filter"]
    if isinstance(tree, str):
        try:
            tree = json.loads(tree)
        except ValueError as exc:  # bad JSON, or an integer of over 4,300 digits
            msg = f"invalid JSON: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise Invalid(f"filter is not JSON: {msg}",
                          [error_entry(where, msg, "json_invalid", tree[:200])]) from None
        except RecursionError:
            raise Invalid("filter nests too deep", [error_entry(where, "nested too deep",
                                                                "json_invalid", tree[:200])]) from None
    return compile_tree(tree, where, _leaf)

