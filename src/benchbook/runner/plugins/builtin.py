"""In-process plugins (tier BUILTIN, spec *Dispatch models*): no wire, the same
``describe_result`` shape; capabilities are metadata only and gate nothing.

An in-process plugin is any object with ``describe() -> describe_result frame`` and
``run_in_process(inputs, config, rpc, log) -> final frame`` (``result`` or ``error``), where
``rpc(frame) -> frame`` answers ``rpc_call`` frames and ``log(stream, line)`` takes log lines.
benchbook's own built-ins are listed in :data:`BUILTINS`; other installed packages add theirs
through the ``benchbook.plugins`` entry-point group, and discovery treats both alike.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

ENTRY_POINT_GROUP = "benchbook.plugins"


class InProcessPlugin(Protocol):
    """What an in-process plugin offers (see the module docstring)."""

    def describe(self) -> dict[str, Any]: ...

    def run_in_process(self, inputs: dict[str, Any], config: dict[str, Any],
                       rpc: Callable[[dict[str, Any]], dict[str, Any]],
                       log: Callable[[str, str], None]) -> dict[str, Any]: ...


BUILTINS: dict[str, Callable[[], InProcessPlugin]] = {}
"""benchbook's own in-process plugins: entry name → factory."""
