"""Connexion's query parser, as the document describes query arrays.

QueryParser reads query arrays as the document describes them: a repeated parameter
(``style: form``, ``explode: true``: ``where``, ``sort``, ``columns``, ``fields``) is a list of
its values, each kept whole. Connexion's own parser joins them with commas and splits them again,
so ``where=note=a,b`` became the two items ``note=a`` and ``b``.
"""
from __future__ import annotations

from typing import Any

from connexion.uri_parsing import OpenAPIURIParser


class QueryParser(OpenAPIURIParser):  # type: ignore[misc]  # connexion is untyped
    """Connexion's OpenAPI 3 parser, except that an exploded form-style query array keeps each
    of its values whole (OpenAPI: ``?where=a=1&where=b=2,3`` is ``["a=1", "b=2,3"]``); other
    styles, path, header and form-body parameters are parsed as Connexion parses them."""

    def resolve_query(self, query_data: dict[str, list[str]]) -> dict[str, Any]:
        exploded = {name: list(values) for name, values in query_data.items() if self._exploded(name)}
        resolved: dict[str, Any] = super().resolve_query(query_data)
        resolved.update(exploded)  # Connexion has coerced nothing in them: their items are strings
        return resolved

    def _exploded(self, name: str) -> bool:
        definition = self.param_defns.get(name)
        if definition is None or definition.get("in") != "query":
            return False
        schema = definition.get("schema") or {}
        items = schema.get("items") or {}
        style = definition.get("style", "form")
        return bool(schema.get("type") == "array" and items.get("type", "string") == "string"
                    and style == "form" and definition.get("explode", True))

