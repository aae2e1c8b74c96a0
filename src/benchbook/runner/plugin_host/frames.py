"""Frames of the plugin wire protocol: the schema (``plugin-protocol/frames.schema.json``), the
limits every implementation shares (``plugin-protocol/README.md``) and the checks the host runs
on every frame it receives and every value a plugin returns.

Every failure of a step is a :class:`StepFailed` whose ``kind`` says what went wrong:

==================== =========================================================================
kind                 meaning
==================== =========================================================================
process_exit         the plugin process ended (or could not start) before answering
timeout              no final answer within the step's timeout; the process group was killed
protocol_error       a line that is not JSON, a frame failing the schema or of the wrong type
frame_too_large      a line over :data:`MAX_FRAME_BYTES`
invalid_output       ``result.outputs`` misses a required output, names an undeclared one or
                     holds a value of the wrong type
no_container_runtime a tier-2 plugin, and no container runtime is installed
capability_denied    (answer to an ``rpc_call``) the method or tool is not declared
(the plugin's own)   an ``error`` frame from the plugin keeps its ``kind`` (``plugin_error``,
                     ``invalid_input``, ``invalid_config``, …)
==================== =========================================================================
"""
from __future__ import annotations

import json
import re
from datetime import date, datetime
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from benchbook.runner.errors import StepFailed

MAX_FRAME_BYTES = 16 * 1024 * 1024
"""Longest line either side may send, newline included (16 MiB)."""
BINARY_INLINE_THRESHOLD = 1_000_000
"""Bytes at or below this go inline as base64, larger ones through a scratch file
(plugin-protocol/README.md, row *bytes*)."""
TABLE_INLINE_ROWS = 5_000
"""Tables of at most this many rows go inline, larger ones as an NDJSON file."""
PLUGIN_TYPES = ("describe_result", "result", "error", "log", "rpc_call")
"""The frame types a plugin sends."""
PLUGIN_FINAL = {"describe": ("describe_result", "error"), "run": ("result", "error")}
"""For each request the host sends, the frame types that end the plugin's turn."""


@cache
def schema() -> dict[str, Any]:
    """``frames.schema.json``, parsed (shipped as package data)."""
    text = (resources.files("benchbook") / "plugin-protocol" / "frames.schema.json").read_text(encoding="utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _validator(definition: str) -> jsonschema.Draft202012Validator:
    root = schema()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": root["$defs"]})


def violation(value: Any, definition: str) -> str | None:
    """How ``value`` breaks ``#/$defs/<definition>`` of the schema, in words (up to three
    problems, each with the JSON path of the offending part), or None when it conforms."""
    errors = sorted(_validator(definition).iter_errors(value), key=lambda e: (len(e.absolute_path), e.message))
    if not errors:
        return None
    shown = []
    for err in errors[:3]:
        where = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in err.absolute_path)
        shown.append(err.message + (f" at {where}" if where else ""))
    return "; ".join(shown) + (f" (and {len(errors) - 3} more)" if len(errors) > 3 else "")


def parse_plugin_line(line: bytes) -> dict[str, Any]:
    """A line from a plugin as a checked frame. Raises :class:`StepFailed` (``frame_too_large``,
    ``protocol_error`` naming the violation)."""
    if len(line) > MAX_FRAME_BYTES:
        raise StepFailed("frame_too_large", f"the plugin sent a line over {MAX_FRAME_BYTES} bytes")
    try:
        frame = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        shown = line[:120].decode("utf-8", "replace")
        raise StepFailed("protocol_error", f"the plugin sent a line that is not JSON ({exc}): {shown!r}") from None
    kind = frame.get("type") if isinstance(frame, dict) else None
    # one frame type's own definition is ~6x cheaper to check than the whole envelope
    problem = violation(frame, kind if kind in PLUGIN_TYPES else "plugin_frame")
    if problem:
        raise StepFailed("protocol_error", f"the plugin sent a frame that breaks the protocol: {problem}")
    return frame  # type: ignore[no-any-return]


def encode(frame: dict[str, Any]) -> bytes:
    """A frame as one line (UTF-8 JSON plus newline)."""
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _type_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` is not a value of the port type ``kind``, or None."""
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind in ("string",):
        ok = isinstance(value, str)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "date":
        ok = isinstance(value, str) and _parses(date.fromisoformat, value)
    elif kind == "datetime":
        ok = isinstance(value, str) and _parses(datetime.fromisoformat, value)
    elif kind == "file":
        ok = isinstance(value, str) and bool(_SHA256.match(value))
    elif kind in ("bytes", "table"):
        return violation(value, "binary" if kind == "bytes" else "table")
    else:  # json
        ok = True
    return None if ok else f"expected {kind}, got {json.dumps(value)[:80]}"


def _parses(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def port_problems(ports: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """Every way ``values`` (a run's inputs or a result's outputs) break the declared ``ports``
    (name → ``{type, required}``): a required one missing, an undeclared name, a wrong type.
    Null stands for "no value" and is accepted where not required."""
    out = [f"{name!r} is required" for name, port in ports.items()
           if port.get("required") and values.get(name) is None]
    for name, value in values.items():
        if name not in ports:
            out.append(f"{name!r} is not declared")
        elif value is not None and (problem := _type_problem(ports[name].get("type", "json"), value)):
            out.append(f"{name!r}: {problem}")
    return out
