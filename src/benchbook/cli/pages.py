"""How a page of a list reads under its table (``--table``): ``3 of 50``, ``51–53 of 120``, or,
when the API could not count every match in time (``total_exact: false``, a lower bound), ``3
of more than 50 (`--count` for the exact total)``; ``--count`` (:func:`counts_exactly`) then
prints the exact number."""
from __future__ import annotations

from typing import Any

PAGE_KEYS = ("total", "total_exact", "offset", "limit")


def caption(page: dict[str, Any], shown: int) -> str | None:
    """The line under a page's table: where its ``shown`` rows sit among the matches, then the
    page's other scalar keys as ``key: value``; None when there is nothing to say. ``page`` is a
    paginated answer (``{items, total?, total_exact?, offset?, limit?, …}``)."""
    parts = []
    total = page.get("total")
    if isinstance(total, int) and not isinstance(total, bool):
        offset = page.get("offset") if isinstance(page.get("offset"), int) else 0
        where = f"{offset + 1}–{offset + shown}" if offset and shown else str(shown)
        if page.get("total_exact") is False:
            parts.append(f"{where} of more than {total:,} (`--count` for the exact total)")
        else:
            parts.append(f"{where} of {total:,}")
    rest = {k: v for k, v in page.items() if k != "items" and (k not in PAGE_KEYS or not parts)}
    parts += [f"{k}: {_text(v)}" for k, v in rest.items() if v is None or isinstance(v, (str, int, float, bool))]
    return ", ".join(parts) or None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def counts_exactly(response_schema: dict[str, Any]) -> bool:
    """True when a (dereferenced) success response schema is a page whose ``total`` may be a
    lower bound (it has ``total_exact``): its command gets ``--count``."""
    return "total_exact" in (response_schema.get("properties") or {})
