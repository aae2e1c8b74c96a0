"""Input and output values: wire JSON ⇄ the Python values a run function sees and returns.

==============  ==========================  =========================================
declared type   the run function gets        the run function may return
==============  ==========================  =========================================
``integer``     ``int`` (an integral JSON    ``int`` or a numpy integer (not ``bool``)
                float such as ``3.0`` too)
``float``       ``float``                    any real number (finite)
``string``      ``str``                      ``str``
``boolean``     ``bool``                     ``bool`` / numpy bool
``date``        ``datetime.date``            ``datetime.date`` (not ``datetime``)
``datetime``    aware ``datetime.datetime``  aware ``datetime`` (naive is refused)
``file``        the sha256 ``str``           a sha256 ``str`` (e.g. from ``ctx.store_file``)
``json``        the JSON value               anything JSON can carry (numpy scalars,
                                             dates and datetimes are converted)
``bytes``       ``bytes``                    ``bytes``/``bytearray``/``memoryview``
``table``       ``pandas.DataFrame``         ``pandas.DataFrame``
==============  ==========================  =========================================

A declared input that is absent or null reaches the run function as ``None`` (an error when it
is ``required``); inputs that are not declared are refused. Outputs: undeclared names are
refused, a ``required`` output must be present and not ``None``, an optional one may be absent
(not sent) or ``None`` (sent as null). ``bytes`` travel as base64 up to
``BINARY_INLINE_THRESHOLD`` bytes, longer as a file in the scratch folder; tables as in
:mod:`benchbook.plugin.tables`. A relative envelope ``path`` is read from the scratch folder.
"""
from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import numbers
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchbook.plugin.errors import PluginError
from benchbook.plugin.tables import (
    BadValue,
    dataframe_to_envelope,
    envelope_to_dataframe,
    parse_date,
    parse_datetime,
    resolve_path,
)
from benchbook.plugin.wire import BINARY_INLINE_THRESHOLD, schema_problems

_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def envelope_to_bytes(envelope: object, scratch: Path | None = None) -> bytes:
    """The content of a binary envelope (``#/$defs/binary``): base64 ``data`` decoded, or the
    file at ``path`` read (relative paths under ``scratch``). Raises ``ValueError`` for an
    invalid envelope, bad base64 or an unreadable file."""
    problems = schema_problems("binary", envelope)
    if problems:
        raise BadValue("not a valid binary envelope: " + "; ".join(problems))
    assert isinstance(envelope, dict)
    if envelope["encoding"] == "base64":
        try:
            return base64.b64decode(envelope["data"], validate=True)
        except binascii.Error as exc:
            raise BadValue(f"binary envelope data is not base64: {exc}") from None
    path = resolve_path(envelope["path"], scratch)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise BadValue(f"cannot read binary file {path}: {exc}") from None


def bytes_to_envelope(
    content: bytes | bytearray | memoryview, scratch: Path, *, filename: str | None = None, stem: str = "bytes"
) -> dict[str, Any]:
    """A binary envelope for ``content``: ``{"encoding": "base64", "data"}`` at or below
    ``BINARY_INLINE_THRESHOLD`` bytes, else ``{"encoding": "path", "path"}`` of a new file in
    ``scratch`` (name starting with ``stem``); ``filename`` is added when given. Raises
    ``OSError`` when the file cannot be written."""
    data = bytes(content)
    envelope: dict[str, Any]
    if len(data) <= BINARY_INLINE_THRESHOLD:
        envelope = {"encoding": "base64", "data": base64.b64encode(data).decode("ascii")}
    else:
        scratch.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=scratch, prefix=f"{stem}-", suffix=".bin")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        envelope = {"encoding": "path", "path": str(Path(name).resolve())}
    if filename is not None:
        envelope["filename"] = filename
    return envelope


def _decode_bytes(value: object, scratch: Path | None) -> bytes:
    return envelope_to_bytes(value, scratch)


def _decode_table(value: object, scratch: Path | None) -> Any:
    return envelope_to_dataframe(value, scratch)


def _decode_date(value: object, scratch: Path | None) -> dt.date:
    return parse_date(value)


def _decode_datetime(value: object, scratch: Path | None) -> dt.datetime:
    return parse_datetime(value)


def _decode_file(value: object, scratch: Path | None) -> str:
    if not isinstance(value, str) or not _SHA256.match(value):
        raise BadValue(f"expected a file's sha256 (64 hex digits), got {value!r}")
    return value.lower()


def _decode_json(value: object, scratch: Path | None) -> Any:
    return value


def _decode_integer(value: object, scratch: Path | None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise BadValue(f"expected an integer, got {value!r}")


def _decode_float(value: object, scratch: Path | None) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise BadValue(f"expected a number, got {value!r}")


def _decode_string(value: object, scratch: Path | None) -> str:
    if isinstance(value, str):
        return value
    raise BadValue(f"expected a string, got {value!r}")


def _decode_boolean(value: object, scratch: Path | None) -> bool:
    if isinstance(value, bool):
        return value
    raise BadValue(f"expected true or false, got {value!r}")


_DECODERS: dict[str, Callable[[object, Path | None], Any]] = {
    "bytes": _decode_bytes, "table": _decode_table, "date": _decode_date, "datetime": _decode_datetime,
    "file": _decode_file, "json": _decode_json, "integer": _decode_integer, "float": _decode_float,
    "string": _decode_string, "boolean": _decode_boolean,
}
"""Declared type -> its decoder: ``(wire value, scratch folder) -> Python value``, raising ``ValueError``."""


def decode_value(port_type: str, value: object, scratch: Path | None = None) -> Any:
    """One non-null wire value of a declared type as the run function sees it (table in the
    module docstring). Raises ``ValueError`` when the value does not fit the type."""
    decoder = _DECODERS.get(port_type)
    if decoder is None:
        raise BadValue(f"unknown type {port_type!r}")
    return decoder(value, scratch)


def _is_dataframe(value: object) -> bool:
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(value, pandas.DataFrame)


def _json_default(value: object) -> Any:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    item = getattr(value, "item", None)
    if type(value).__module__ == "numpy" and callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _mismatch(port_type: str, value: object) -> BadValue:
    return BadValue(f"expected {port_type}, got {type(value).__name__} {value!r:.80}")


def _encode_bytes(value: object, scratch: Path, stem: str) -> Any:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise BadValue(f"expected bytes, got {type(value).__name__}")
    return bytes_to_envelope(value, scratch, stem=stem)


def _encode_table(value: object, scratch: Path, stem: str) -> Any:
    if not _is_dataframe(value):
        raise BadValue(f"expected a pandas DataFrame, got {type(value).__name__}")
    return dataframe_to_envelope(value, scratch, stem=stem)


def _encode_integer(value: object, scratch: Path, stem: str) -> int:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise _mismatch("integer", value)


def _encode_float(value: object, scratch: Path, stem: str) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if not math.isfinite(number):
            raise BadValue(f"{number} is not a number JSON can carry")
        return number
    raise _mismatch("float", value)


def _encode_string(value: object, scratch: Path, stem: str) -> str:
    if isinstance(value, str):
        return str(value)
    raise _mismatch("string", value)


def _encode_boolean(value: object, scratch: Path, stem: str) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise _mismatch("boolean", value)


def _encode_date(value: object, scratch: Path, stem: str) -> str:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value.isoformat()
    raise _mismatch("date", value)


def _encode_datetime(value: object, scratch: Path, stem: str) -> str:
    if isinstance(value, dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise BadValue("a datetime output needs a timezone (naive datetimes are ambiguous)")
        return value.isoformat()
    raise _mismatch("datetime", value)


def _encode_file(value: object, scratch: Path, stem: str) -> str:
    if isinstance(value, str) and _SHA256.match(value):
        return value.lower()
    raise BadValue(f"expected a file's sha256 (64 hex digits), got {value!r}")


def _encode_json(value: object, scratch: Path, stem: str) -> Any:
    try:
        return json.loads(json.dumps(value, default=_json_default, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise BadValue(f"not JSON: {exc}") from None


_ENCODERS: dict[str, Callable[[object, Path, str], Any]] = {
    "bytes": _encode_bytes, "table": _encode_table, "integer": _encode_integer, "float": _encode_float,
    "string": _encode_string, "boolean": _encode_boolean, "date": _encode_date, "datetime": _encode_datetime,
    "file": _encode_file, "json": _encode_json,
}
"""Declared type -> its encoder: ``(value, scratch folder, file stem) -> wire JSON``, raising ``ValueError``."""


def encode_value(port_type: str, value: object, scratch: Path, *, stem: str = "value") -> Any:
    """One non-null output value as wire JSON (table in the module docstring). Raises
    ``ValueError`` when the value does not fit the declared type."""
    encoder = _ENCODERS.get(port_type)
    if encoder is None:
        raise BadValue(f"unknown type {port_type!r}")
    return encoder(value, scratch, stem)


def decode_inputs(ports: Mapping[str, Mapping[str, Any]], inputs: Mapping[str, Any], scratch: Path) -> dict[str, Any]:
    """The ``run.inputs`` of the wire as the run function's ``inputs`` dict: every declared
    input present (``None`` when absent or null). Raises :class:`PluginError` kind
    ``invalid_input`` naming the input for an undeclared name, a missing required input or a
    value that does not fit its declared type."""
    unknown = sorted(set(inputs) - set(ports))
    if unknown:
        raise PluginError("invalid_input", f"undeclared inputs {unknown} (declared: {sorted(ports)})")
    decoded: dict[str, Any] = {}
    for name, port in ports.items():
        value = inputs.get(name)
        if value is None:
            if port.get("required", False):
                raise PluginError("invalid_input", f"input {name!r} is required")
            decoded[name] = None
            continue
        try:
            decoded[name] = decode_value(port["type"], value, scratch)
        except ValueError as exc:
            raise PluginError("invalid_input", f"input {name!r} ({port['type']}): {exc}") from None
    return decoded


def encode_outputs(ports: Mapping[str, Mapping[str, Any]], outputs: object, scratch: Path) -> dict[str, Any]:
    """The run function's return value as ``result.outputs``. Raises :class:`PluginError` kind
    ``invalid_output`` when it is not a mapping, names an undeclared output, lacks a required
    one or holds a value that does not fit its declared type."""
    if not isinstance(outputs, Mapping):
        raise PluginError("invalid_output", f"the run function must return a dict of outputs, got {type(outputs).__name__}")
    unknown = sorted(str(name) for name in set(outputs) - set(ports))
    if unknown:
        raise PluginError("invalid_output", f"undeclared outputs {unknown} (declared: {sorted(ports)})")
    encoded: dict[str, Any] = {}
    for name, port in ports.items():
        if name not in outputs or outputs[name] is None:
            if port.get("required", False):
                raise PluginError("invalid_output", f"output {name!r} is required")
            if name in outputs:
                encoded[name] = None
            continue
        try:
            encoded[name] = encode_value(port["type"], outputs[name], scratch, stem=f"output-{name}")
        except ValueError as exc:
            raise PluginError("invalid_output", f"output {name!r} ({port['type']}): {exc}") from None
    return encoded
