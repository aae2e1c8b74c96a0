"""benchbook's Python plugin SDK: write a workflow step as a plugin process.

It runs inside plugin processes, so it imports only the standard library, ``jsonschema`` and
(on first use of a table) ``pandas`` — never benchbook's server. The wire protocol is in
``plugin-protocol/README.md`` and ``frames.schema.json``; this SDK follows both.

Writing a plugin::

    from benchbook.plugin import Plugin, PluginRpcError

    plugin = Plugin(
        id="row-count", name="Row count", description="Counts rows", category="analysis",
        inputs={"table": {"type": "table", "description": "any table", "required": True}},
        outputs={"rows": {"type": "integer", "description": "how many", "required": True}},
        config_schema={"type": "object", "properties": {"save": {"type": "boolean", "default": False}}},
        capabilities=["update_record", "get_context_record"],
    )

    @plugin.run
    def run(ctx, inputs, config):
        ctx.log(f"{len(inputs['table'])} rows")
        if config["save"]:
            try:
                record = ctx.get_context_record()
                ctx.update_record(record["id"], {"rows": len(inputs["table"])})
            except PluginRpcError as exc:      # e.g. kind "capability_denied": go on without it
                ctx.log(f"not saved: {exc}")
        return {"rows": len(inputs["table"])}

Serving it: ``python -m benchbook.plugin row_count.py`` (tier 1: loop over frames until end of
input), ``python -m benchbook.plugin row_count.py describe|run`` (tier 2: one frame, answer,
exit 0), or end the file with ``if __name__ == "__main__": plugin.main()`` and run the file.

Public API
----------
- :class:`Plugin` (``describe()``, ``@plugin.run``, ``@plugin.run(batch=True)``,
  ``validate_config()``, ``main()``);
- :class:`Context` — the ``ctx`` of a run: ``log``, ``get_file``, ``update_record``,
  ``create_record``, ``commit``, ``call_tool``, ``get_context_record``, ``find_records``,
  ``get_schema``, ``store_file``, ``rpc``; ``scratch``, ``capabilities``, ``tier``;
- errors (tree in :mod:`benchbook.plugin.errors`): :class:`PluginError`,
  :class:`PluginRpcError`, :class:`ProtocolError`, :class:`PluginDefinitionError`;
- :func:`validate_host_frame`, :func:`validate_plugin_frame`, :func:`frame_schema`;
  value codecs :func:`envelope_to_bytes`, :func:`bytes_to_envelope`,
  :func:`envelope_to_dataframe`, :func:`dataframe_to_envelope`;
  :func:`load_plugin`, :func:`serve`; the limits ``MAX_FRAME_BYTES``,
  ``BINARY_INLINE_THRESHOLD``, ``TABLE_INLINE_ROWS``.

Decisions (where the protocol leaves a choice; details in the module named)
--------------------------------------------------------------------------
- **Isolation order** (:mod:`~benchbook.plugin.isolation`): ``python -m benchbook.plugin``
  isolates before it imports the plugin file; only the SDK's own imports (stdlib, jsonschema)
  come earlier. ``plugin.main()`` isolates when it is called, so whatever the script did at
  import time, before ``main()``, was *not* isolated — prefer ``python -m benchbook.plugin``.
  Standard input is isolated as well (fd 0 → null device, frames read from a private
  duplicate), so plugin code or its child processes can never read a frame.
- **Stray output**: C-level writes to fd 1 go to the null device. Python-level ``sys.stdout``
  writes are relayed line by line as ``log`` frames with ``stream`` ``stdout`` during a run
  (an unfinished last line is sent when the run ends); outside a run (import, ``describe``,
  between runs) they go to standard error. Standard error is not relayed: the host reads it.
  Log messages are cut at ``LOG_MESSAGE_LIMIT`` (1,000,000) characters so a line always fits.
- **Inputs** (:mod:`~benchbook.plugin.values`): every declared input is a key of ``inputs``,
  ``None`` when absent or null; undeclared inputs and type mismatches are ``invalid_input``.
  ``date`` → ``datetime.date``, ``datetime`` → aware ``datetime`` (an offset is required),
  ``file`` → the sha256 string, ``bytes`` → ``bytes``, ``table`` → DataFrame.
- **Tables** (:mod:`~benchbook.plugin.tables`): integer → ``Int64``, float → ``float64``,
  string → ``string``, boolean → ``boolean``, **date → ``object`` column of ``datetime.date``**
  (so it is sent back as a date column), datetime → ``datetime64[us, UTC]``. On output dtypes
  are inferred from the columns; an all-null ``object`` column keeps the dtype it arrived with
  (``frame.attrs["benchbook.dtypes"]``), else ``string``; naive ``datetime64`` columns and mixed
  ``object`` columns are refused rather than guessed; the index is not sent.
- **Config**: checked against ``config_schema`` (its ``$schema``, else 2020-12); top-level
  property ``default`` values are filled in for keys the host did not send.
- **Outputs**: undeclared or missing required outputs and type mismatches end the run with
  kind ``invalid_output``; an optional output returned as ``None`` is sent as null.
- **Error kinds** the SDK produces: ``plugin_error``, ``invalid_input``, ``invalid_config``,
  ``invalid_output``, ``protocol_error``, ``frame_too_large``, ``rpc_unavailable`` (table in
  :mod:`~benchbook.plugin.errors`). An uncaught ``PluginRpcError`` fails the run with the host's
  kind (e.g. ``capability_denied``). The message of any other exception is ``str(exc)`` (the
  class name when empty); its traceback goes to standard error.
- **Protocol**: every received frame is validated against ``#/$defs/host_frame`` and every sent
  one against ``#/$defs/plugin_frame``. An out-of-turn or invalid frame at the top level is
  answered with ``protocol_error`` and the loop goes on; during an RPC wait it fails the run
  (even if plugin code catches the exception). An ``error`` frame with ``call_id`` null during
  an RPC wait is taken as the answer to that call. The SDK does not pre-check capabilities: the
  host is the authority.
- **Batches** (:mod:`~benchbook.plugin.batches`): ``@plugin.run(batch=True)`` registers a run
  function that takes many runs of a step at once: ``run(ctx, frame, config)`` with ``frame`` a
  pandas DataFrame, one row per run (index ``0 … n-1``), one column per declared input
  (nullable dtypes ``Int64``, ``Float64``, ``string``, ``boolean`` for scalar ports, so a
  missing integer stays an integer column; ``datetime64[us, UTC]`` for datetime as in tables;
  ``object`` columns of the decoded values for the rest); it returns a DataFrame of outputs in
  the same order (an optional ``error`` column fails single rows: a message or a
  ``PluginError``) or a list of output dicts and ``PluginError`` elements; numpy and pandas
  values become plain values of each port's type. The describe result says ``batch: true``
  (plain ``@plugin.run``: no ``batch`` key). An item whose inputs or outputs break the ports
  fails on its own (``result.errors``); a wrong-length return, an undeclared column, bad config
  or an exception fails the whole frame. One object of inputs (a host that does not batch) is
  run as a frame of one row and answered as a single run; a plugin without ``batch`` answers a
  list with ``protocol_error``. Logs, stdout isolation and RPC work as in a single run, but the
  host refuses ``get_context_record``, ``update_record``, ``create_record`` and ``commit`` in a
  batch (``capability_denied``: no single run is in context)::

      @plugin.run(batch=True)
      def run(ctx, frame, config):
          late = frame["minutes"] > 15
          return pd.DataFrame({"label": late.map({True: "late", False: "on time"})})

- **Tier 2**: RPC methods raise ``PluginRpcError`` kind ``rpc_unavailable`` (log frames still
  work). Exit status 0 after answering (also with an error frame), 1 when the frame was
  missing or of the other type, or the plugin file could not be loaded (every frame is then
  answered with ``plugin_error``), 2 for bad arguments.
- **Scratch**: ``ctx.scratch`` is ``BENCHBOOK_SCRATCH`` or, when unset, a temporary folder left
  in place for the host to read; relative envelope paths are read from it.
- **Loading**: the plugin file is imported as module ``__benchbook_plugin__`` with its folder
  first on ``sys.path``; an argument that is not a file and does not end in ``.py`` is imported
  as a dotted module name (for installed plugins).
"""
from __future__ import annotations

from benchbook.plugin.context import LOG_MESSAGE_LIMIT, Context
from benchbook.plugin.declaration import Plugin, RunFunction
from benchbook.plugin.errors import PluginDefinitionError, PluginError, PluginRpcError, ProtocolError
from benchbook.plugin.loader import load_plugin
from benchbook.plugin.runtime import serve
from benchbook.plugin.tables import dataframe_to_envelope, envelope_to_dataframe
from benchbook.plugin.values import bytes_to_envelope, envelope_to_bytes
from benchbook.plugin.wire import (
    BINARY_INLINE_THRESHOLD,
    MAX_FRAME_BYTES,
    TABLE_INLINE_ROWS,
    frame_schema,
    validate_host_frame,
    validate_plugin_frame,
)

__all__ = [
    "BINARY_INLINE_THRESHOLD",
    "LOG_MESSAGE_LIMIT",
    "MAX_FRAME_BYTES",
    "TABLE_INLINE_ROWS",
    "Context",
    "Plugin",
    "PluginDefinitionError",
    "PluginError",
    "PluginRpcError",
    "ProtocolError",
    "RunFunction",
    "bytes_to_envelope",
    "dataframe_to_envelope",
    "envelope_to_bytes",
    "envelope_to_dataframe",
    "frame_schema",
    "load_plugin",
    "serve",
    "validate_host_frame",
    "validate_plugin_frame",
]
