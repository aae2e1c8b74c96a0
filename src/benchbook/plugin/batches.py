"""Batch runs in the Python SDK (``plugin-protocol/README.md``, row *batch*).

A plugin whose run function is registered with ``@plugin.run(batch=True)`` says ``batch: true``
in its describe result, and the host then sends ``run`` frames whose ``inputs`` is a list, one
object per run of the step. :func:`answer_run` answers such a frame:

- each item's inputs are decoded as a single run's are; an item that cannot be decoded fails on
  its own (kind ``invalid_input``) and is not passed to the run function;
- the run function is called once, as ``run(ctx, frame, config)``, ``frame`` a
  ``pandas.DataFrame`` with one row per item passed, in order (index ``0 … n-1``) and one column
  per declared input, in declaration order. Scalar ports get pandas' nullable dtypes, so a
  missing value stays missing without turning integers into floats: integer ``Int64``, float
  ``Float64``, string ``string``, boolean ``boolean`` (missing: ``pd.NA``); datetime
  ``datetime64[us, UTC]`` as in a decoded table (:mod:`~benchbook.plugin.tables`; missing:
  ``NaT``, offsets converted to UTC); date, file, json, bytes and table columns are ``object``
  columns of the decoded values (``datetime.date``, the sha256, the JSON value, ``bytes``, a
  DataFrame; missing: None), so nothing is coerced (see :data:`NULLABLE_DTYPES`);
- it returns, in the frame's order, a DataFrame with one row per frame row (its index is
  ignored) whose columns are output names (a declared output without a column: null), plus
  optionally a column ``error`` (None or NaN: the item succeeded; a string: it failed with kind
  ``plugin_error`` and that message; a :class:`~benchbook.plugin.errors.PluginError`: it failed
  with that kind, message and retryable); or a sequence with one element per row, each a mapping of outputs or a
  ``PluginError``. pandas' values become plain values of the port's type (:func:`plain`):
  numpy numbers → ``int``/``float``/``bool`` (an integral float for an integer port → ``int``),
  ``pd.NA``/``NaN``/``NaT`` → null, ``Timestamp`` → ``datetime`` (at midnight without a
  timezone, for a date port → ``date``), a numpy array → a list;
- each item's outputs are checked and encoded as a single run's are; an item whose outputs break
  the contract fails on its own (``invalid_output``). A return of the wrong length or shape, an
  undeclared column, or an exception from the run function fails the whole frame.

The answer is one ``result`` frame: ``outputs`` a list (null for a failed item) and ``errors``
``[{index, kind, message, retryable}]`` when any item failed. A batch plugin given one run's
inputs as an object (a host that does not batch) runs a frame of one row and answers a plain
``result``; a plugin without ``batch`` given a list answers ``protocol_error``. ``ctx`` works
as in a single run (logs, stdout isolation, RPC), but the host refuses ``get_context_record``,
``update_record``, ``create_record`` and ``commit`` in a batch (``capability_denied``).
"""
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from benchbook.plugin.errors import PluginError, ProtocolError
from benchbook.plugin.values import decode_inputs, encode_outputs

if TYPE_CHECKING:
    from benchbook.plugin.context import Context

NULLABLE_DTYPES = {"integer": "Int64", "float": "Float64", "string": "string", "boolean": "boolean",
                   "datetime": "datetime64[us, UTC]"}
"""The pandas dtype of a batch frame's column per port type; the other types (date, file, json,
bytes, table) get ``object`` columns holding the decoded values as they are."""
ERROR_COLUMN = "error"
"""The column of a returned DataFrame that marks a failed item (see the module docstring)."""


class BatchPlugin(Protocol):
    """What answering a run needs of a :class:`benchbook.plugin.Plugin`."""

    id: str
    inputs: dict[str, dict[str, Any]]
    outputs: dict[str, dict[str, Any]]
    batch: bool
    run_function: Any

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]: ...


def answer_run(plugin: BatchPlugin, ctx: Context, inputs: Any, config: Mapping[str, Any], scratch: Path
               ) -> dict[str, Any]:
    """The ``result`` frame for a ``run`` frame's ``inputs`` and ``config``: one run's, or a
    batch's (the module docstring). Raises :class:`PluginError` for what fails the whole run
    (no run function, bad config, a list for a plugin without ``batch``, what the run function
    raises, a return of the wrong shape)."""
    if plugin.run_function is None:
        raise PluginError("plugin_error", f"plugin {plugin.id!r} has no run function (decorate one with @plugin.run)")
    if isinstance(inputs, list) and not plugin.batch:
        raise ProtocolError(f"plugin {plugin.id!r} does not take batches (its run function is not "
                            "registered with batch=True), but the run frame's inputs is a list")
    if not plugin.batch:
        outputs = plugin.run_function(ctx, decode_inputs(plugin.inputs, inputs, scratch),
                                      plugin.validate_config(config))
        return {"type": "result", "outputs": encode_outputs(plugin.outputs, outputs, scratch)}
    single = not isinstance(inputs, list)
    answer = _batch(plugin, ctx, [inputs] if single else inputs, plugin.validate_config(config), scratch)
    if single:
        if answer.get("errors"):
            error = answer["errors"][0]
            raise PluginError(error["kind"], error["message"], error["retryable"])
        return {"type": "result", "outputs": answer["outputs"][0]}
    return answer


def _batch(plugin: BatchPlugin, ctx: Context, items: list[Any], config: dict[str, Any], scratch: Path
           ) -> dict[str, Any]:
    errors: dict[int, PluginError] = {}
    decoded: list[dict[str, Any]] = []
    passed: list[int] = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, Mapping):
                raise PluginError("invalid_input", f"a batch item is an object of inputs, not {type(item).__name__}")
            decoded.append(decode_inputs(plugin.inputs, item, scratch))
            passed.append(index)
        except PluginError as exc:
            errors[index] = exc
    outputs: list[dict[str, Any] | None] = [None] * len(items)
    if passed:
        returned = plugin.run_function(ctx, inputs_frame(plugin.inputs, decoded), config)
        for index, got in zip(passed, per_item(plugin.outputs, returned, len(passed)), strict=True):
            if isinstance(got, PluginError):
                errors[index] = got
                continue
            try:
                outputs[index] = encode_outputs(plugin.outputs, got, scratch)
            except PluginError as exc:
                errors[index] = exc
    answer: dict[str, Any] = {"type": "result", "outputs": outputs}
    if errors:
        answer["errors"] = [{"index": index, **errors[index].envelope()} for index in sorted(errors)]
    return answer


def inputs_frame(ports: Mapping[str, Mapping[str, Any]], rows: list[dict[str, Any]]) -> Any:
    """The DataFrame a batch run function gets: one row per decoded item of ``rows``, one column
    per port of ``ports`` (dtypes: :data:`NULLABLE_DTYPES`, else object)."""
    import pandas as pd

    columns = {}
    for name, port in ports.items():
        values = [row.get(name) for row in rows]
        dtype = NULLABLE_DTYPES.get(port["type"], "object")
        if port["type"] == "datetime":
            column = pd.to_datetime(pd.Series(values, dtype="object"), utc=True).dt.as_unit("us")
        elif dtype == "object":
            column = pd.Series([None] * len(values), dtype="object")
            for i, value in enumerate(values):  # a DataFrame or a list value stays one cell
                column.iat[i] = value
        else:
            column = pd.Series(values, dtype=dtype)
        columns[name] = column
    return pd.DataFrame(columns, index=pd.RangeIndex(len(rows)))


def per_item(ports: Mapping[str, Mapping[str, Any]], returned: Any, n: int) -> list[Any]:
    """What a batch run function returned, as one element per item: a dict of plain output
    values or a :class:`PluginError`. Raises :class:`PluginError` kind ``invalid_output`` when
    ``returned`` is neither a DataFrame nor a sequence of ``n`` elements, or names an undeclared
    output column."""
    if hasattr(returned, "columns") and hasattr(returned, "itertuples"):
        return _from_frame(ports, returned, n)
    if isinstance(returned, Sequence) and not isinstance(returned, (str, bytes, bytearray)):
        if len(returned) != n:
            raise PluginError("invalid_output", f"the batch run function returned {len(returned)} element(s) for "
                                                f"{n} input row(s)")
        return [item if isinstance(item, PluginError) else
                _plain_outputs(ports, item) if isinstance(item, Mapping) else
                PluginError("invalid_output", f"an element of the returned list is {type(item).__name__}, not a "
                                              "dict of outputs or a PluginError") for item in returned]
    raise PluginError("invalid_output", "a batch run function returns a DataFrame or a list with one element per "
                                        f"input row, not {type(returned).__name__}")


def _from_frame(ports: Mapping[str, Mapping[str, Any]], frame: Any, n: int) -> list[Any]:
    if len(frame) != n:
        raise PluginError("invalid_output", f"the batch run function returned {len(frame)} row(s) for {n} input row(s)")
    names = [str(c) for c in frame.columns]
    unknown = sorted(c for c in names if c not in ports and c != ERROR_COLUMN)
    if unknown:
        raise PluginError("invalid_output", f"undeclared output columns {unknown} (declared: {sorted(ports)})")
    missing = {name: None for name in ports if name not in names}  # an absent column: null outputs
    items: list[Any] = []
    for values in frame.itertuples(index=False, name=None):
        row = dict(zip(names, values, strict=True))
        failed = _failure(row.pop(ERROR_COLUMN, None))
        items.append(failed if failed is not None else {**missing, **_plain_outputs(ports, row)})
    return items


def _plain_outputs(ports: Mapping[str, Mapping[str, Any]], outputs: Mapping[Any, Any]) -> dict[Any, Any]:
    return {name: plain(value, ports[name]["type"] if name in ports else None) for name, value in outputs.items()}


def _failure(marked: Any) -> PluginError | None:
    if isinstance(marked, PluginError):
        return marked
    marked = plain(marked)
    if marked is None:
        return None
    return PluginError("plugin_error", str(marked) or "the run function marked this item failed")


def plain(value: Any, port_type: str | None = None) -> Any:
    """A pandas or numpy value as a plain Python one, for a port of ``port_type`` when given:
    missing (``pd.NA``, ``NaN``, ``NaT``, None) → None; numpy numbers → ``int``/``float``/
    ``bool``, and an integral float → ``int`` for an integer port; ``Timestamp`` →
    ``datetime``, or ``date`` for a date port when it is at midnight without a timezone; a numpy
    array → a list (for a json port). Anything else is returned as it is (the port's checks
    then take or refuse it)."""
    if value is None:
        return None
    kind = type(value).__name__
    if kind in ("NAType", "NaTType"):
        return None
    if kind == "Timestamp":
        value = value.to_pydatetime()
        if port_type == "date" and value.tzinfo is None and value.time() == dt.time():
            return value.date()
        return value
    if kind == "ndarray":
        return value.tolist()
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        value = value.item()  # a numpy scalar: bool, integer or float
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if port_type == "integer" and value.is_integer():
            return int(value)
    return value
