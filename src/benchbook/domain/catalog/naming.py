"""Natural names: a schema's ``display_template`` rendered with a record's values.

Template syntax: literal text with ``{field}`` or ``{field:FORMAT}`` placeholders naming
the schema's own fields or inherited ones (a field of an ancestor schema, issue 14 item 8):
an inherited placeholder shows the value of the nearest ancestor record whose schema owns the
field (an own field of the same name shadows it; the record filters' rule, ``docs/filters.md``),
and descendants' names follow when that value changes
(:func:`benchbook.domain.records.derived.follow_names`). For ``date``/``datetime`` values FORMAT uses the tokens ``YYYY``,
``YY``, ``MM``, ``DD``, ``HH``, ``mm``, ``ss`` (e.g. ``{taken_on:YYYY-MM}``); for numbers
it is a Python format spec (``{mass:.1f}``). A reference field's placeholder shows its target's
natural name (a reference_list's, joined with ``, ``), and names follow a renamed target
(:mod:`benchbook.domain.records.names`). Without a template the natural name is the
value of the first string field. A blank result is ``None``.
"""
from __future__ import annotations

import re
import string
from datetime import date, datetime
from typing import Any

from benchbook.domain.errors import Invalid, error_entry, missing

_TOKENS = [("YYYY", "%Y"), ("YY", "%y"), ("MM", "%m"), ("DD", "%d"), ("HH", "%H"), ("mm", "%M"),
           ("ss", "%S")]
_TOKEN_RE = re.compile("|".join(t for t, _ in _TOKENS))


def placeholders(template: str) -> list[str]:
    """Field names used by ``template``; raises ``Invalid`` on malformed braces."""
    try:
        return [name for _, name, _, _ in string.Formatter().parse(template) if name]
    except ValueError as exc:
        raise Invalid(f"display_template: {exc}",
                      [error_entry(["body", "display_template"], str(exc), "template", template)]) from None


def check_template(template: str | None, field_names: set[str]) -> None:
    """Raise ``NotFound`` (404, one error per unknown name) when ``template`` names a field not
    in ``field_names`` (the schema's own and inherited field names:
    :func:`benchbook.domain.catalog.schemas.template_fields`)."""
    if not template:
        return
    unknown = [n for n in placeholders(template) if n not in field_names]
    if unknown:
        raise missing(f"display_template names unknown field(s): {', '.join(unknown)}",
                      [error_entry(["body", "display_template"], f"unknown field {n!r}", "unknown_field", n)
                       for n in unknown])


def rename_in_template(template: str | None, old: str, new: str) -> str | None:
    """``template`` with placeholders of field ``old`` renamed to ``new``."""
    if not template:
        return template
    return re.sub(r"\{" + re.escape(old) + r"(?=[:}])", "{" + new, template)


def _format(value: Any, dtype: str, spec: str) -> str:
    if value is None:
        return ""
    if dtype in ("date", "datetime") and spec:
        moment: date = (datetime.fromisoformat(value) if dtype == "datetime" else date.fromisoformat(value))
        return moment.strftime(_TOKEN_RE.sub(lambda m: dict(_TOKENS)[m.group(0)], spec))
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if spec and isinstance(value, (int, float)):
        try:
            return format(value, spec)
        except ValueError:
            return str(value)
    return str(value)


def natural_name(template: str | None, values: dict[str, Any], dtypes: dict[str, str]) -> str | None:
    """Render the natural name from shown ``values`` and field ``dtypes`` (both keyed by name)."""
    if not template:
        first = next((n for n, t in dtypes.items() if t == "string" and values.get(n) not in (None, "")), None)
        return str(values[first]) if first else None
    out = []
    for literal, name, spec, _ in string.Formatter().parse(template):
        out.append(literal)
        if name:
            out.append(_format(values.get(name), dtypes.get(name, "string"), spec or ""))
    text = "".join(out).strip()
    return text or None
