"""Secrets kept out of error bodies and log lines (issue 33 item 5; docs/decisions.md *AI*: the
key is in no answer, log line or error message).

Which request properties hold secrets is read from the OpenAPI document, not from a list kept
here: every property whose schema says ``writeOnly: true`` or ``format: password``
(``AiConfigUpdate.api_key``). A request's :class:`Secrets` are those names and the values its
JSON body gave them, at any depth (a key sent as a string, a list, an object); the request's
validation leaves them in ``scope["state"][STATE_KEY]`` and every error body and the 500
handler's log line pass through :meth:`Secrets.scrub` / :meth:`Secrets.scrub_text` before they
leave the server. What is removed is replaced by :data:`MARK`.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

MARK = "[redacted]"
STATE_KEY = "secrets"
"""Where a request's :class:`Secrets` live in ``scope["state"]``."""


def secret_names(schema: Any) -> frozenset[str]:
    """The property names that hold secrets anywhere in ``schema`` (an OpenAPI document, or one
    operation's resolved body schema): those whose schema has ``writeOnly: true`` or ``format:
    password``, at any depth. ``$ref``s are not followed: every component is walked anyway when
    ``schema`` is the whole document."""
    names: set[str] = set()
    for node in _nodes(schema):
        properties = node.get("properties")
        if isinstance(properties, dict):
            names.update(name for name, prop in properties.items()
                         if isinstance(prop, dict) and (prop.get("writeOnly") is True or prop.get("format") == "password"))
    return frozenset(names)


def _nodes(value: Any) -> Iterator[dict[str, Any]]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


@dataclass(frozen=True)
class Secrets:
    """The secret property ``names`` of a request's operation and the ``values`` its body gave
    them (strings and numbers, each at least one character long as text)."""

    names: frozenset[str] = frozenset()
    values: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def of(cls, body: Any, names: frozenset[str]) -> Secrets:
        """The secrets of ``body`` (parsed JSON): every scalar under a property named in ``names``,
        at any depth."""
        found: set[str] = set()
        stack: list[tuple[Any, bool]] = [(body, False)]
        while stack:
            value, secret = stack.pop()
            if isinstance(value, dict):
                stack.extend((v, secret or k in names) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((v, secret) for v in value)
            elif secret and not isinstance(value, bool) and value is not None and str(value):
                found.add(str(value))
        return cls(names, frozenset(found))

    def __bool__(self) -> bool:
        return bool(self.values)

    def _forms(self) -> Iterable[str]:
        """Each value as a message may quote it: as it is, inside ``repr``, inside JSON."""
        for value in self.values:
            yield value
            yield repr(value)[1:-1]
            yield json.dumps(value)[1:-1]

    def holds(self, text: str) -> bool:
        """Whether ``text`` quotes any of the values."""
        return any(form and form in text for form in self._forms())

    def scrub_text(self, text: str) -> str:
        """``text`` with every quoted value replaced by :data:`MARK` (longest first)."""
        for form in sorted(set(self._forms()), key=len, reverse=True):
            if form:
                text = text.replace(form, MARK)
        return text

    def scrub(self, value: Any, *, by_name: bool = True) -> Any:
        """``value`` (JSON data) with every string quoting a secret replaced by :data:`MARK`, and,
        with ``by_name``, the value of every property named a secret too, at any depth."""
        if isinstance(value, dict):
            return {k: MARK if by_name and k in self.names and v is not None else self.scrub(v, by_name=by_name)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.scrub(v, by_name=by_name) for v in value]
        if isinstance(value, str) and self.holds(value):
            return MARK
        return value

    def scrub_error(self, entry: dict[str, Any]) -> dict[str, Any]:
        """One ``{loc, msg, type, input, ctx}`` entry with nothing secret left: ``input`` under a
        secret property is :data:`MARK` and secrets inside it are removed; ``ctx`` (schemas,
        limits) loses any string quoting a secret; a ``msg`` quoting one is replaced by one
        naming only where and which rule (jsonschema's messages quote the value)."""
        loc = list(entry.get("loc") or [])
        under_secret = any(isinstance(part, str) and part in self.names for part in loc)
        out = dict(entry)
        if "input" in out and out["input"] is not None:
            out["input"] = MARK if under_secret else self.scrub(out["input"])
        if isinstance(out.get("ctx"), dict):
            out["ctx"] = self.scrub(out["ctx"], by_name=False)
        msg = out.get("msg")
        if isinstance(msg, str) and self.holds(msg):
            where = ".".join(str(part) for part in loc) or "body"
            out["msg"] = f"{where}: not valid ({out.get('type', 'invalid')}); the value is not shown as it holds a secret"
        return out

    def scrub_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """An error response body (``{detail}``, ``{detail, errors}``) with nothing secret left."""
        out = dict(body)
        if isinstance(out.get("detail"), str):
            out["detail"] = self.scrub_text(out["detail"])
        if isinstance(out.get("errors"), list):
            out["errors"] = [self.scrub_error(e) if isinstance(e, dict) else e for e in out["errors"]]
        return out


def of_scope(scope: Any) -> Secrets:
    """The request's :class:`Secrets` (none when its body held none or was not JSON)."""
    found = scope.get("state", {}).get(STATE_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Secrets) else Secrets()


def scrub_query(target: str, names: frozenset[str]) -> str:
    """A request target (``/path?query``) with the value of every query parameter named in
    ``names`` replaced by :data:`MARK` (for the access log: a key a client put in a URL)."""
    path, sep, query = target.partition("?")
    if not sep or not names:
        return target
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(k in names for k, _ in pairs):
        return target
    return path + "?" + urlencode([(k, MARK if k in names else v) for k, v in pairs], safe="[]/:,")


class QuerySecretsFilter(logging.Filter):
    """A filter for uvicorn's access log (``uvicorn.access``; its record's ``args`` are client,
    method, target, HTTP version, status): a query parameter named like a secret property of the
    OpenAPI document has its value replaced by :data:`MARK` (a client that put the key in a URL
    does not get it into the log)."""

    def __init__(self, names: frozenset[str]) -> None:
        super().__init__()
        self.names = names

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], scrub_query(args[2], self.names), *args[3:])
        return True

    @classmethod
    def install(cls, logger: logging.Logger) -> None:
        """Add one to ``logger`` (once), its names read from the packaged OpenAPI document."""
        if not any(isinstance(f, cls) for f in logger.filters):
            from benchbook.http.document import load_document

            logger.addFilter(cls(secret_names(load_document())))
