"""In-process plugins (tier ``builtin``, plugin-protocol/README.md *Tiers*): no wire, the same
``describe_result`` shape; capabilities are metadata only and gate nothing.

An in-process plugin is a :class:`benchbook.plugin.Plugin` (the Python SDK's declaration),
run here with a ``ctx`` whose RPC calls go straight to the host operations. benchbook's own
built-ins (one module each in :mod:`.builtins`) are listed in :data:`BUILTINS`; other installed
packages add theirs through the ``benchbook.plugins`` entry-point group (the entry point names a
``Plugin`` or a function returning one), and discovery treats both alike.
"""
from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbook.plugin import Context, Plugin, PluginError, PluginRpcError
from benchbook.plugin.batches import answer_run
from benchbook.runner.plugin_host import builtins

ENTRY_POINT_GROUP = "benchbook.plugins"

Frame = dict[str, Any]

# ---------------------------------------------------------------------------- built-ins
text_stats = builtins.text_stats.plugin
file_checksum = builtins.file_checksum.plugin

BUILTINS: dict[str, Callable[[], Plugin]] = {p.id: functools.partial(lambda plugin: plugin, p)
                                             for p in builtins.PLUGINS}
"""benchbook's own in-process plugins: entry name → factory."""


# ---------------------------------------------------------------------------- running
class _Direct:
    """The SDK's channel for an in-process run: RPC calls go to ``rpc``, logs to ``log``."""

    def __init__(self, rpc: Callable[[Frame], Frame] | None, log: Callable[[str, str], None] | None) -> None:
        self.rpc = rpc
        self.sink = log

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.rpc is None:
            raise PluginRpcError("rpc_unavailable", f"no host operations are available for {method!r} here")
        answer = self.rpc({"type": "rpc_call", "call_id": uuid.uuid4().hex, "method": method, "params": params})
        if answer["type"] == "error":
            err = answer["error"]
            raise PluginRpcError(err["kind"], err["message"], err["retryable"])
        result: dict[str, Any] = answer["result"]
        return result

    def log(self, message: str, stream: str) -> None:
        if self.sink:
            self.sink(stream, message)


def as_plugin(loaded: object) -> Plugin:
    """The :class:`Plugin` an entry point names (the object itself or what calling it returns).
    Raises ``TypeError`` otherwise."""
    plugin = loaded() if callable(loaded) and not isinstance(loaded, Plugin) else loaded
    if not isinstance(plugin, Plugin):
        raise TypeError(f"a benchbook.plugins entry point must name a benchbook.plugin.Plugin, not {plugin!r}")
    return plugin


def run_in_process(plugin: Plugin, inputs: dict[str, Any] | list[dict[str, Any]], config: dict[str, Any],
                   rpc: Callable[[Frame], Frame] | None, log: Callable[[str, str], None] | None,
                   scratch: Path) -> Frame:
    """Run ``plugin`` on wire ``inputs`` (a list for a batch plugin) and return the final frame
    (``result`` with wire outputs, or ``error``), as a subprocess plugin would answer."""
    ctx = Context(_Direct(rpc, log), scratch=scratch, capabilities=plugin.capabilities, tier=1)
    try:
        return answer_run(plugin, ctx, inputs, config, scratch)
    except PluginError as exc:
        return {"type": "error", "call_id": None, "error": exc.envelope()}
    except Exception as exc:  # noqa: BLE001 (any failure of plugin code fails the step, never the host)
        return {"type": "error", "call_id": None,
                "error": {"kind": "plugin_error", "message": f"{type(exc).__name__}: {exc}", "retryable": False}}
