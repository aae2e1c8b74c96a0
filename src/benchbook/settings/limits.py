"""The service's input limits (issue #13; written down in ``docs/limits.md``), read from the
``[limits]`` table of ``benchbook.toml``.

A few limits are fixed (docs/limits.md *Runs and the plugin wire*: ``GET /jobs`` ``limit`` at most
500, run ``ids`` and filter matches); the rest (the largest upload, the largest ``limit`` of lists
other than ``GET /jobs``) are chosen here so that no input can make one request use unbounded
memory, time or disk. Each can be changed per project::

    [limits]
    body_bytes = 16777216        # a request body other than an upload
    upload_bytes = 2147483648    # one POST /files request
    url_bytes = 16384            # path + query string
    header_bytes = 32768         # all request headers together
    value_length = 100000        # characters of one record string value (or list item)
    list_items = 1000            # items of one record list value (tags, file_list, reference_list)
    record_length = 1000000      # characters of one record's stored values (JSON text)
    text_length = 1000000        # characters of any other string in a JSON body
    json_depth = 100             # nesting of arrays and objects in a JSON body or filter
    filter_leaves = 100          # leaves of one filter tree
    filter_depth = 32            # nesting of and/or groups in one filter tree
    filter_values = 1000         # values of one ``in`` leaf
    page_size = 1000             # largest list ``limit`` but ``GET /jobs``'s (fixed: 500)
    count_ms = 25                # time a record page may spend counting its matches for ``total``
    page_requests = 2            # record pages and summaries worked on at once (``benchbook.http.pacing``)
    import_bytes = 536870912     # one imported file, read whole (CLI, API)
    import_rows = 1000000        # rows of one imported file (its checked rows wait in memory)
    import_columns = 1000        # columns of one imported file (a JSON file's distinct keys)
    import_cells_per_byte = 16   # rows × columns an imported file may span per byte of it (at least 1,000,000)
    plugin_warm_runs = 1000      # runs one warm tier-1 plugin process serves before it is started afresh
    plugin_idle_seconds = 60     # seconds a warm tier-1 plugin process may wait unused before it is ended
    plugin_batch_size = 100      # runs of one workflow a batch plugin (``batch: true``) gets in one ``run`` frame,
                                 # and most quick runs of a reading plugin that go together (1: none)

The limits of the request in progress are a context variable (:func:`current`, set by
:func:`use` in the HTTP middleware for each request): the domain reads them there, so it needs no
extra arguments, and code outside a request (command line, workflow runs) gets the defaults.
This module imports nothing of benchbook (the domain and ``config`` both read it).
"""
from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

MIB = 1024 * 1024
#: Settings with a ceiling: deeper nesting would exhaust Python's recursion limit in the JSON
#: parser or the filter compiler (a 500 instead of a 422).
CEILINGS = {"json_depth": 500, "filter_depth": 100}


@dataclass(frozen=True)
class Limits:
    """Every input limit; sizes in bytes (UTF-8 on the wire), lengths in characters (code points),
    counts in items. All are positive integers. See the module docstring for each one's meaning."""

    body_bytes: int = 16 * MIB
    upload_bytes: int = 2048 * MIB
    url_bytes: int = 16 * 1024
    header_bytes: int = 32 * 1024
    value_length: int = 100_000
    list_items: int = 1000
    record_length: int = 1_000_000
    text_length: int = 1_000_000
    json_depth: int = 100
    filter_leaves: int = 100
    filter_depth: int = 32
    filter_values: int = 1000
    page_size: int = 1000
    count_ms: int = 25
    page_requests: int = 2
    import_bytes: int = 512 * MIB
    import_rows: int = 1_000_000
    import_columns: int = 1000
    import_cells_per_byte: int = 16
    plugin_warm_runs: int = 1000
    plugin_idle_seconds: int = 60
    plugin_batch_size: int = 100

    @classmethod
    def from_table(cls, table: Mapping[str, Any] | None) -> Limits:
        """The limits of a ``[limits]`` table (missing keys keep their defaults).

        Raises ``ValueError`` naming the key for an unknown key or a value that is not a
        positive integer, or one over its ceiling (:data:`CEILINGS`): a misconfigured limit is
        refused at start, not ignored."""
        table = dict(table or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ValueError(f"[limits] in benchbook.toml: unknown key(s) {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        for key, value in table.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"[limits] {key} in benchbook.toml must be a positive integer, not {value!r}")
            if value > CEILINGS.get(key, value):
                raise ValueError(f"[limits] {key} in benchbook.toml may be at most {CEILINGS[key]}, not {value}")
        return cls(**table)


DEFAULT = Limits()
_current: contextvars.ContextVar[Limits] = contextvars.ContextVar("benchbook_limits", default=DEFAULT)


def current() -> Limits:
    """The limits of the request in progress (the defaults outside a request)."""
    return _current.get()


@contextmanager
def use(limits: Limits) -> Iterator[Limits]:
    """Make ``limits`` the :func:`current` ones within the block (and in the threads a request's
    handler runs in: anyio copies the context into them)."""
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None: it holds a NUL character (PostgreSQL refuses it
    in text, and filters refuse it) or a lone UTF-16 surrogate (not encodable as UTF-8)."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which cannot be stored"
    if text.isascii():  # no surrogates: skip the encoding copy
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"contains a lone surrogate ({text[exc.start]!r} at character {exc.start}), "
                "which is not valid Unicode text")
    return None


def json_problems(value: Any, limits: Limits, loc: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str, str]]:
    """The problems of a parsed JSON ``value``: ``(loc, message, type)`` for each string (keys
    included) holding NUL or a lone surrogate (type ``string_unicode``) or longer than
    ``text_length`` (``string_too_long``), and nesting deeper than ``json_depth`` (``too_deep``,
    reported once, at the first place it happens). Walks iteratively: no recursion limit."""
    problems: list[tuple[tuple[Any, ...], str, str]] = []
    deep_reported = False
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, loc, 0)]
    while stack and len(problems) < 50:
        node, where, depth = stack.pop()
        if isinstance(node, str):
            problems += _string_problems(node, where, limits)
            continue
        if not isinstance(node, (dict, list)):
            continue
        if depth >= limits.json_depth:
            if not deep_reported:
                problems.append((where, f"nested deeper than {limits.json_depth} levels of arrays and objects",
                                 "too_deep"))
                deep_reported = True
            continue
        if isinstance(node, dict):
            for key, item in node.items():
                problems += _string_problems(key, (*where, key), limits, what="key")
                stack.append((item, (*where, key), depth + 1))
        else:
            stack.extend((item, (*where, i), depth + 1) for i, item in enumerate(node))
    return problems


def _string_problems(text: str, where: tuple[Any, ...], limits: Limits,
                     what: str = "text") -> list[tuple[tuple[Any, ...], str, str]]:
    problem = text_problem(text)
    if problem:
        return [(where, f"{what} {problem}", "string_unicode")]
    if len(text) > limits.text_length:
        msg = f"{what} is {len(text)} characters long; at most {limits.text_length} are accepted ([limits] text_length)"
        return [(where, msg, "string_too_long")]
    return []


#: The list ``limit`` parameters of the OpenAPI document whose maximum is ``page_size``
#: (``components/parameters`` names, and ``GET /audit/events``'s own); ``GET /jobs`` keeps its
#: fixed 500 (docs/limits.md *Runs and the plugin wire*).
OPEN_PAGE_PARAMETERS = ("RecordLimit", "SearchLimit", "AuditLimit")


#: Refusals any operation may answer (``components/responses`` names): a request target or
#: headers past their limits; and a body past its limit, where the operation takes one.
EVERY_OPERATION = {"414": "URITooLong", "431": "HeadersTooLarge"}
WITH_BODY = {"413": "PayloadTooLarge"}


def apply_to_document(document: dict[str, Any], limits: Limits) -> None:
    """Write the configured limits into the OpenAPI ``document`` (in place), so that Connexion's
    validation applies them and the served document says what this server accepts: ``page_size``
    as the ``maximum`` of every list ``limit`` but ``GET /jobs``', and the refusals of
    :data:`EVERY_OPERATION` (and :data:`WITH_BODY`) among each operation's responses, where the
    document defines them in ``components/responses``."""
    defined = document.get("components", {}).get("responses", {})
    for item in document.get("paths", {}).values():
        for method, operation in item.items():
            if method not in ("get", "put", "post", "patch", "delete") or not isinstance(operation, dict):
                continue
            refusals = {**EVERY_OPERATION, **(WITH_BODY if "requestBody" in operation else {})}
            responses = operation.setdefault("responses", {})
            for status, name in refusals.items():
                if name in defined:
                    responses.setdefault(status, {"$ref": f"#/components/responses/{name}"})
    params = document.get("components", {}).get("parameters", {})
    targets = [params[name] for name in OPEN_PAGE_PARAMETERS if name in params]
    events = document.get("paths", {}).get("/audit/events", {}).get("get", {})
    targets += [p for p in events.get("parameters", []) if isinstance(p, dict) and p.get("name") == "limit"]
    for param in targets:
        schema = param.setdefault("schema", {})
        schema["maximum"] = limits.page_size
        if isinstance(schema.get("default"), int):  # a page size below the default lowers it
            schema["default"] = min(schema["default"], limits.page_size)
