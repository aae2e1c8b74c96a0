"""``benchbook.set-fields``: fill fields of the run's record from templates.

Config ``{"fields": {field_name: template_or_literal}}``. A template is a string with
``{placeholder}`` parts, written as for Python's ``str.format``:

- ``{name}`` is the value of the record's field ``name`` (as the record shows it: numbers as
  numbers, dates as ``YYYY-MM-DD``, datetimes as ISO 8601 with offset, lists joined with ``", "``);
  ``{inputs.a}`` is the step's input ``a`` (inputs ``a`` … ``e``, any JSON value);
- ``{name:spec}`` formats the value with a format spec: ``{mass:.2f}``, ``{count:04d}``,
  ``{ratio:.1%}``; a spec containing ``%`` formats a date or datetime value with ``strftime``
  codes (``{taken_on:%d %b %Y}``, ``{taken_at:%Y-%m-%d %H:%M}``); ``!r``/``!s``/``!a``
  conversions and nested specs (``{x:>{inputs.a}}``) work as in Python;
- ``{{`` and ``}}`` are literal braces;
- a template that is one placeholder alone, without spec or conversion (``"{depth_m}"``), keeps
  the value's type (a number stays a number, a list a list), so fields can be copied;
- a config value that is not a string (number, boolean, list, null) is written as it is (null
  clears the field).

Every template is rendered before anything is written; a placeholder with no value (a field
not set on the record, an input not given) fails the step with kind ``invalid_input`` naming
it, a malformed template or a spec that does not fit the value with ``invalid_config``. The
record is then updated with one ``update_record`` call (the domain checks the values against
the field types, as for any edit). Output ``changed``: each target field with the value the
record holds after the update.
"""
from __future__ import annotations

import json
import string
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from benchbook.plugin import Context, Plugin, PluginError

INPUT_SLOTS = ("a", "b", "c", "d", "e")
_CONVERSIONS: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}

plugin = Plugin(
    id="benchbook.set-fields", name="Set fields", category="records",
    description="Sets fields of the run's record from templates such as \"{site}-{taken_on:%Y%m%d}\" over the "
                "record's own values and the step's inputs ({inputs.a} … {inputs.e}); format specs as in Python "
                "(\"{mass:.2f}\"), a lone \"{field}\" copies the value with its type, non-string values are "
                "written as given. One update of the record; a placeholder without a value fails the step.",
    inputs={slot: {"type": "json", "required": False,
                   "description": f"a value for templates, written {{inputs.{slot}}}"} for slot in INPUT_SLOTS},
    outputs={"changed": {"type": "json", "required": True,
                         "description": "field name → the value the record holds after the update"}},
    config_schema={
        "type": "object",
        "properties": {
            "fields": {
                "type": "object", "minProperties": 1,
                "description": "field name → template (a string with {placeholders}) or a literal value",
                "propertyNames": {"minLength": 1},
                "additionalProperties": {"type": ["string", "number", "boolean", "array", "null"]},
            },
        },
        "required": ["fields"],
        "additionalProperties": False,
    },
    capabilities=["get_context_record", "update_record"],
)


def _moment(text: str) -> object:
    """``text`` as a date or datetime when it is one in ISO 8601, else ``text`` unchanged."""
    try:
        return date.fromisoformat(text) if len(text) == 10 else datetime.fromisoformat(text)
    except ValueError:
        return text


def _shown(value: object, spec: str) -> object:
    """What is formatted for ``value`` under ``spec``: ISO dates parsed for ``%`` codes, lists
    joined, objects as JSON."""
    if isinstance(value, str) and "%" in spec:
        return _moment(value)
    if isinstance(value, list) and not spec:
        return ", ".join(str(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return value


class _Template:
    """One field's template, rendered against the record's values and the inputs."""

    def __init__(self, target: str, template: str, record: dict[str, Any], inputs: dict[str, Any]) -> None:
        self.target = target
        self.template = template
        self.record = record
        self.inputs = inputs

    def _parts(self, text: str) -> list[tuple[str, str | None, str | None, str | None]]:
        try:
            return list(string.Formatter().parse(text))
        except ValueError as exc:
            raise PluginError("invalid_config", f"fields.{self.target}: template {self.template!r}: {exc}") from None

    def lookup(self, name: str) -> Any:
        if not name or name.isdigit():
            raise PluginError("invalid_config", f"fields.{self.target}: template {self.template!r} has a "
                                                f"placeholder without a name ({{{name}}}); write {{field}} or "
                                                "{inputs.a}")
        if name.startswith("inputs."):
            slot = name.removeprefix("inputs.")
            if slot not in INPUT_SLOTS:
                raise PluginError("invalid_config", f"fields.{self.target}: there is no input {slot!r} for "
                                                    f"{{{name}}} (inputs: {', '.join(INPUT_SLOTS)})")
            value = self.inputs.get(slot)
            if value is None:
                known = ", ".join(f"inputs.{s}" for s in INPUT_SLOTS if self.inputs.get(s) is not None) or "none"
                raise PluginError("invalid_input", f"fields.{self.target}: placeholder {{{name}}} has no value: "
                                                   f"that input was not given (inputs given: {known})")
            return value
        value = self.record.get(name)
        if value is None:
            raise PluginError("invalid_input", f"fields.{self.target}: placeholder {{{name}}} has no value: the "
                                               f"record has no field {name!r} set (set: "
                                               f"{', '.join(sorted(self.record)) or 'none'})")
        return value

    def value(self) -> Any:
        """The value to write: the raw value for a lone placeholder, else the rendered text."""
        parts = self._parts(self.template)
        if len(parts) == 1 and parts[0][0] == "" and parts[0][1] and not parts[0][2] and parts[0][3] is None:
            return self.lookup(parts[0][1])
        return self.render(self.template, depth=0)

    def render(self, text: str, depth: int) -> str:
        out: list[str] = []
        for literal, name, spec, conversion in self._parts(text):
            out.append(literal)
            if name is None:
                continue
            value: object = self.lookup(name)
            if conversion:
                if conversion not in _CONVERSIONS:
                    raise PluginError("invalid_config", f"fields.{self.target}: unknown conversion !{conversion} "
                                                        f"in {self.template!r} (use !r, !s or !a)")
                value = _CONVERSIONS[conversion](value)
            spec = spec or ""
            if "{" in spec:
                if depth >= 1:
                    raise PluginError("invalid_config", f"fields.{self.target}: format specs nest one level "
                                                        f"at most in {self.template!r}")
                spec = self.render(spec, depth + 1)
            try:
                out.append(format(_shown(value, spec), spec))
            except (ValueError, TypeError) as exc:
                raise PluginError("invalid_config", f"fields.{self.target}: cannot format {{{name}}} "
                                                    f"(value {value!r}) with spec {spec!r}: {exc}") from None
        return "".join(out)


@plugin.run
def run(ctx: Context, inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    record = ctx.get_context_record()
    data: dict[str, Any] = record.get("data") or {}
    values = {target: _Template(target, spec, data, inputs).value() if isinstance(spec, str) else spec
              for target, spec in config["fields"].items()}
    updated = ctx.update_record(record["id"], values)
    shown: dict[str, Any] = updated.get("data") or {}
    ctx.log(f"set {', '.join(values)} on record {record['id']}")
    return {"changed": {target: shown.get(target) for target in values}}
