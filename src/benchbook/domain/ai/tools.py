"""The service's read tools a model may call during a chat.

Each runs through the domain in a read session of its own with the API's rules (the same
functions and checks as the matching ``GET`` operation), so a model sees exactly what the user
could read. A refusal (``{"error", "kind", "errors"}``: kind ``not_found`` for an unknown
thing, ``invalid`` for a bad filter, … as ``domain/errors.py`` names them), an unknown tool or
arguments that do not fit the tool's parameters are not errors of the chat: they are the tool's
result, ``{"error": …}``, fed back to the model. A result longer than :data:`RESULT_LIMIT` bytes of
JSON is cut, and says so.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from sqlalchemy.orm import Session

from benchbook.domain.ai.usage import Sessions
from benchbook.domain.catalog import collections, schemas
from benchbook.domain.catalog.lookup import find_schema
from benchbook.domain.errors import BenchbookError
from benchbook.domain.history import entries
from benchbook.domain.records import lists
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.rows import find_record
from benchbook.domain.records.shaping import single_record

RESULT_LIMIT = 20_000
"""Bytes of JSON a tool result may take in the conversation; longer results are cut."""
MAX_LIMIT = 50

_STRING = {"type": "string", "minLength": 1, "maxLength": 200}
_FILTER = {
    "type": "object",
    "description": (
        "Filter tree. A group is {\"and\": [nodes]} or {\"or\": [nodes]}, nestable. A leaf is "
        "{\"field\": name, \"op\": one of eq, ne, gt, gte, lt, lte, contains, in, is_null, "
        "\"value\": v (a list for in), \"schema\": optional, an ancestor's or descendant's schema}."),
}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 20}


def _params(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[Session, dict[str, Any]], Any]

    def spec(self) -> dict[str, Any]:
        """The tool as the chat completions API declares it."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


def _query(args: dict[str, Any]) -> RecordQuery:
    tree = args.get("filter")
    return RecordQuery(schema=args.get("schema"), search=args.get("search"), sort=list(args.get("sort") or []),
                       filter=json.dumps(tree) if isinstance(tree, dict) else tree)


def _list_collections(s: Session, args: dict[str, Any]) -> Any:
    return collections.list_collections(s)


def _get_schema(s: Session, args: dict[str, Any]) -> Any:
    return schemas.schema_response(s, find_schema(s, args["name"]))


def _find_records(s: Session, args: dict[str, Any]) -> Any:
    return lists.list_page(s, args["collection"], _query(args), limit=args.get("limit", 20),
                           offset=args.get("offset", 0))


def _count_records(s: Session, args: dict[str, Any]) -> Any:
    return lists.record_counts(s, args["collection"], _query(args))


def _get_record(s: Session, args: dict[str, Any]) -> Any:
    return single_record(s, args["record_id"])


def _record_history(s: Session, args: dict[str, Any]) -> Any:
    rid = find_record(s, args["record_id"], live=None).id
    return entries.list_entries(s, entries.scope(entity_types=("record",), entity_id=rid), action=None,
                                since=None, sort=None, limit=args.get("limit", 20), offset=0)


TOOLS = {t.name: t for t in (
    Tool("list_collections", "List the collections (groups of records), with their schemas and record counts.",
         _params({}), _list_collections),
    Tool("get_schema", "Show a schema (a kind of record): its fields with their types, its parent schema.",
         _params({"name": _STRING}, ("name",)), _get_schema),
    Tool("find_records",
         "Find live records of a collection: optional schema, filter tree, full-text search and sort "
         "([schema.]field[:asc|desc], needs schema). Answers {items, total, offset, limit}.",
         _params({"collection": _STRING, "schema": _STRING, "filter": _FILTER, "search": _STRING,
                  "sort": {"type": "array", "items": _STRING, "maxItems": 5}, "limit": _LIMIT,
                  "offset": {"type": "integer", "minimum": 0, "default": 0}}, ("collection",)),
         _find_records),
    Tool("count_records", "Count live records of a collection by schema, with the same filters as find_records.",
         _params({"collection": _STRING, "schema": _STRING, "filter": _FILTER, "search": _STRING},
                 ("collection",)), _count_records),
    Tool("get_record", "Show one record (live or deleted) by id or unique id prefix, with its ancestors.",
         _params({"record_id": _STRING}, ("record_id",)), _get_record),
    Tool("record_history", "The history of one record (its audit entries), newest first.",
         _params({"record_id": _STRING, "limit": _LIMIT}, ("record_id",)), _record_history),
)}


def specs() -> list[dict[str, Any]]:
    """Every tool, as the chat completions API declares them."""
    return [t.spec() for t in TOOLS.values()]


@dataclass
class ToolResult:
    """What a tool call gave: ``value`` (JSON) for the API's answer, ``text`` for the model."""

    value: Any
    text: str
    is_error: bool = False
    truncated: bool = False


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def result_of(value: Any, *, is_error: bool = False) -> ToolResult:
    """``value`` as a result, cut to :data:`RESULT_LIMIT` bytes of JSON (the cut result is the
    cut text, with a note saying how much there was)."""
    text = _encode(value)
    size = len(text.encode("utf-8"))
    if size <= RESULT_LIMIT:
        return ToolResult(json.loads(text), text, is_error)
    cut = text.encode("utf-8")[:RESULT_LIMIT].decode("utf-8", errors="ignore")
    cut += (f"\n[truncated: the result is {size} bytes of JSON, only the first {RESULT_LIMIT} are shown; "
            "ask for fewer records (limit), a narrower filter, or the next page (offset)]")
    return ToolResult(cut, cut, is_error, truncated=True)


def _error(message: str, **more: Any) -> ToolResult:
    return result_of({"error": message, **more}, is_error=True)


def run(sessions: Sessions, name: str, arguments: str | dict[str, Any] | None) -> ToolResult:
    """Call tool ``name`` with ``arguments`` (the model's JSON text) in a read session."""
    tool = TOOLS.get(name)
    if tool is None:
        return _error(f"unknown tool {name!r}", tools=sorted(TOOLS))
    if isinstance(arguments, dict):
        args: Any = arguments
    else:
        try:
            args = json.loads(arguments) if arguments and arguments.strip() else {}
        except ValueError as exc:
            return _error(f"the arguments are not valid JSON: {exc}")
    problems = sorted(Draft202012Validator(tool.parameters).iter_errors(args), key=lambda e: list(e.path))
    if problems:
        return _error("the arguments do not fit the tool's parameters", errors=[
            {"loc": list(p.absolute_path), "msg": p.message} for p in problems])
    try:
        with sessions() as session:
            return result_of(tool.run(session, args))
    except BenchbookError as exc:
        return _error(exc.detail, kind=exc.kind, **({"errors": exc.errors} if exc.errors else {}))
