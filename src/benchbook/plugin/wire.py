"""Frames on the wire: the shipped frame schema, frame validation, and the line codec.

``validate_host_frame`` and ``validate_plugin_frame`` check one decoded frame against
``#/$defs/host_frame`` / ``#/$defs/plugin_frame`` of ``frames.schema.json`` (package data,
``importlib.resources.files("benchbook") / "plugin-protocol" / "frames.schema.json"``).
:class:`Wire` reads newline-delimited frames from a binary stream and writes them to a raw
file descriptor (the private duplicate of the real standard output), one whole line per
``os.write`` loop under a lock, so threads never interleave frames.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from importlib import resources
from typing import IO, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, relevance

from benchbook.plugin.errors import PluginError, ProtocolError

MAX_FRAME_BYTES = 16_777_216
"""Longest line either side may send, newline included (16 MiB)."""
BINARY_INLINE_THRESHOLD = 1_000_000
"""``bytes`` values up to this many bytes travel inline as base64, longer ones as a scratch file."""
TABLE_INLINE_ROWS = 5_000
"""Tables up to this many rows travel inline, longer ones as an NDJSON scratch file."""

_MAX_REPORTED_ERRORS = 5
_MAX_MESSAGE = 240


@functools.cache
def frame_schema() -> dict[str, Any]:
    """The frame schema (``frames.schema.json``) as shipped in the package, parsed once."""
    path = resources.files("benchbook") / "plugin-protocol" / "frames.schema.json"
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


@functools.cache
def schema_validator(definition: str) -> Draft202012Validator:
    """A validator for ``#/$defs/<definition>`` of the frame schema (``host_frame``,
    ``plugin_frame``, ``binary``, ``table``, ``ndjson_header``, …). Raises ``KeyError`` for a
    name the schema does not define."""
    schema = frame_schema()
    if definition not in schema["$defs"]:
        raise KeyError(definition)
    return Draft202012Validator({**schema, "$ref": f"#/$defs/{definition}"})


def schema_problems(definition: str, instance: object) -> list[str]:
    """Why ``instance`` fails ``#/$defs/<definition>``: one line per error, the most relevant
    first, each ``<json path>: <message> [<schema keyword>]`` (a ``oneOf`` error also names what
    failed in the branch its discriminator chose); empty when it is valid."""
    errors = sorted(schema_validator(definition).iter_errors(instance), key=relevance, reverse=True)
    lines: list[str] = []
    for error in errors:
        line = _describe(error)
        if line not in lines:
            lines.append(line)
    return lines[:_MAX_REPORTED_ERRORS]


def _describe(error: ValidationError) -> str:
    message = error.message if len(error.message) <= _MAX_MESSAGE else error.message[:_MAX_MESSAGE] + "…"
    line = f"{error.json_path}: {message} [{error.validator}]"
    if error.context:
        branches: dict[object, list[ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        chosen = [subs for subs in branches.values() if all(sub.validator != "const" for sub in subs)]
        details = [_describe(sub) for subs in (chosen or branches.values()) for sub in subs]
        line += " (" + "; ".join(details[:_MAX_REPORTED_ERRORS]) + ")"
    return line


def validate_host_frame(frame: object) -> dict[str, Any]:
    """Check a frame received from the host against ``#/$defs/host_frame``.

    Returns the frame (a dict) when valid; raises :class:`ProtocolError` whose message lists
    the schema violations otherwise."""
    return _validated("host_frame", "host", frame)


def validate_plugin_frame(frame: object) -> dict[str, Any]:
    """Check a frame a plugin is about to send against ``#/$defs/plugin_frame``.

    Returns the frame (a dict) when valid; raises :class:`ProtocolError` otherwise."""
    return _validated("plugin_frame", "plugin", frame)


_SIDE_TYPES = {"host_frame": ("describe", "run", "rpc_result", "error"),
               "plugin_frame": ("describe_result", "result", "error", "log", "rpc_call")}


def _validated(definition: str, side: str, frame: object) -> dict[str, Any]:
    kind = frame.get("type") if isinstance(frame, dict) else None
    if kind in _SIDE_TYPES[definition] and schema_validator(str(kind)).is_valid(frame):
        return frame  # type: ignore[return-value]  # fast path: the frame type's own definition (bench/plugins.py)
    problems = schema_problems(definition, frame)
    if problems:
        kind = frame.get("type") if isinstance(frame, dict) else None
        label = f"{kind!r} frame" if isinstance(kind, str) else "frame"
        raise ProtocolError(f"invalid {side} {label}: " + "; ".join(problems))
    assert isinstance(frame, dict)
    return frame


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_line(line: bytes) -> object:
    """Parse one line as strict JSON (``NaN`` and ``Infinity`` are refused).

    Raises :class:`ProtocolError` when it is not UTF-8 or not JSON."""
    try:
        return json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"frame is not UTF-8: {exc}") from None
    except ValueError as exc:
        raise ProtocolError(f"frame is not JSON: {exc}") from None


def encode_frame(frame: dict[str, Any]) -> bytes:
    """One frame as a wire line: compact UTF-8 JSON plus ``\\n``.

    Raises :class:`PluginError` kind ``frame_too_large`` when the line would exceed
    ``MAX_FRAME_BYTES``, and ``ValueError``/``TypeError`` when the frame is not JSON."""
    line = (json.dumps(frame, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
    if len(line) > MAX_FRAME_BYTES:
        raise PluginError(
            "frame_too_large",
            f"a {frame.get('type')!r} frame of {len(line):,} bytes exceeds the {MAX_FRAME_BYTES:,}-byte line limit",
        )
    return line


class Wire:
    """Both directions of the protocol over a reader (frames from the host) and a raw output
    descriptor (frames to the host).

    ``read_frame()`` returns the next valid host frame, or None at end of input; it raises
    :class:`ProtocolError` for a frame that is not JSON or fails ``host_frame``, and
    :class:`PluginError` kind ``frame_too_large`` for an over-long line (which is skipped, so
    the next frame can still be read). ``send(frame)`` validates against ``plugin_frame``
    (``ProtocolError``), encodes (``frame_too_large``) and writes the whole line atomically
    with respect to other threads."""

    def __init__(self, reader: IO[bytes], out_fd: int) -> None:
        self._reader = reader
        self._out_fd = out_fd
        self._lock = threading.Lock()

    def read_frame(self) -> dict[str, Any] | None:
        """The next host frame, validated; None at end of input. Blank lines are skipped."""
        while True:
            line = self._reader.readline(MAX_FRAME_BYTES + 1)
            if not line:
                return None
            if len(line) > MAX_FRAME_BYTES:
                self._skip_rest_of_line(line)
                raise PluginError(
                    "frame_too_large", f"received a line longer than the {MAX_FRAME_BYTES:,}-byte limit"
                )
            if line.strip():
                return validate_host_frame(decode_line(line))

    def _skip_rest_of_line(self, line: bytes) -> None:
        while line and not line.endswith(b"\n"):
            line = self._reader.readline(MAX_FRAME_BYTES)

    def send(self, frame: dict[str, Any]) -> None:
        """Validate, encode and write one frame (see the class docstring for the errors)."""
        data = encode_frame(validate_plugin_frame(frame))
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._out_fd, view)
                view = view[written:]
