"""``ctx``: what a run function can do besides computing — log, and call the host over RPC.

Every RPC method sends one ``rpc_call`` frame with a fresh ``call_id`` and blocks until the
host answers that ``call_id`` (calls from several threads are serialised: the protocol is
synchronous). An ``error`` answer raises :class:`PluginRpcError` with the host's ``kind``,
``message`` and ``retryable``; catch it (``capability_denied`` for a method or tool the plugin
did not declare) to go on without the call. In tier 2 (one-shot) and after the run ended,
every RPC method raises ``PluginRpcError`` kind ``rpc_unavailable`` without sending anything.
"""
from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from benchbook.plugin.errors import PluginRpcError
from benchbook.plugin.values import bytes_to_envelope, envelope_to_bytes

LOG_MESSAGE_LIMIT = 1_000_000
"""Longest ``log`` message sent, in characters; longer ones are cut and marked, so a log line
always fits in one frame."""


@functools.cache
def default_scratch() -> Path:
    """``BENCHBOOK_SCRATCH`` when set (created if missing), else a temporary folder made once
    per process and left in place (files in it may be read by the host after the plugin
    exits)."""
    configured = os.environ.get("BENCHBOOK_SCRATCH")
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        return path.resolve()
    return Path(tempfile.mkdtemp(prefix="benchbook-scratch-")).resolve()


def clip_message(message: str) -> str:
    """``message`` cut to ``LOG_MESSAGE_LIMIT`` characters, with a note of how much was cut."""
    if len(message) <= LOG_MESSAGE_LIMIT:
        return message
    return message[:LOG_MESSAGE_LIMIT] + f" … [{len(message) - LOG_MESSAGE_LIMIT:,} characters cut]"


class Channel(Protocol):
    """The host connection a :class:`Context` uses (implemented by the runtime)."""

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send an rpc_call and return the rpc_result's ``result``; raise PluginRpcError on an
        error answer."""
        ...

    def log(self, message: str, stream: str) -> None:
        """Send a log frame (or write to standard error when no run is in progress)."""
        ...


class Context:
    """The ``ctx`` argument of a run function.

    Attributes: ``scratch`` (a ``Path``: ``BENCHBOOK_SCRATCH``, or a temporary folder when
    unset), ``capabilities`` (the tuple the host passed with this run; the host enforces it),
    ``tier`` (1 for the frame loop, 2 for one-shot). All RPC methods raise
    :class:`PluginRpcError` as the module docstring describes.
    """

    def __init__(
        self, channel: Channel, *, scratch: Path, capabilities: Sequence[str] = (), tier: int = 1
    ) -> None:
        self._channel = channel
        self.scratch = scratch
        self.capabilities = tuple(capabilities)
        self.tier = tier

    def log(self, message: object) -> None:
        """Send ``str(message)`` as a ``log`` frame with stream ``log`` (cut to
        ``LOG_MESSAGE_LIMIT`` characters)."""
        self._channel.log(clip_message(str(message)), "log")

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Call one RPC method (``get_file``, ``update_record``, ``create_record``, ``commit``,
        ``call_tool``) with raw ``params`` and return the raw ``result`` object."""
        return self._channel.call(method, params)

    def get_file(self, sha256: str) -> bytes:
        """The content of the stored file ``sha256`` (RPC ``get_file``; inline base64 or a
        scratch file, decoded here). Raises PluginRpcError kind ``protocol_error`` when the
        host's answer is not a binary envelope."""
        result = self.rpc("get_file", {"sha256": sha256})
        envelope = {key: value for key, value in result.items() if key != "size"}
        try:
            return envelope_to_bytes(envelope, self.scratch)
        except ValueError as exc:
            raise PluginRpcError("protocol_error", f"get_file answer: {exc}") from None

    def update_record(self, record_id: str, data: dict[str, Any]) -> dict[str, Any]:
        """Merge ``data`` (field name → value; null clears) into record ``record_id``; returns
        the record (RPC ``update_record``)."""
        return self.rpc("update_record", {"record_id": record_id, "data": data})

    def create_record(
        self, collection: str, schema_name: str, data: dict[str, Any], parent_record_id: str | None = None
    ) -> dict[str, Any]:
        """Create a record of ``schema_name`` in ``collection`` (under ``parent_record_id``
        when given); returns the record (RPC ``create_record``)."""
        return self.rpc(
            "create_record",
            {"collection": collection, "schema_name": schema_name, "parent_record_id": parent_record_id, "data": data},
        )

    def commit(self) -> None:
        """Make the run's writes so far durable (RPC ``commit``)."""
        self.rpc("commit", {})

    def call_tool(self, tool: str, /, **args: Any) -> dict[str, Any]:
        """Call host tool ``tool`` with keyword ``args``; returns the tool's result (RPC
        ``call_tool``, params ``{tool, args}``; the capability checked is the tool name)."""
        return self.rpc("call_tool", {"tool": tool, "args": args})

    def get_context_record(self) -> dict[str, Any]:
        """The record this run is for (tool ``get_context_record``)."""
        return self.call_tool("get_context_record")

    def find_records(
        self,
        collection: str | None = None,
        schema: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 50,
    ) -> dict[str, Any]:
        """Records matching a filter tree: ``{"items": [...], "total": n}`` (tool
        ``find_records``; arguments left as None are sent as null)."""
        return self.call_tool("find_records", collection=collection, schema=schema, filter=filter, limit=limit)

    def get_schema(self, name: str) -> dict[str, Any]:
        """The schema called ``name`` (tool ``get_schema``)."""
        return self.call_tool("get_schema", name=name)

    def store_file(self, filename: str, content: bytes) -> dict[str, Any]:
        """Store ``content`` in the file store: ``{"sha256", "filename", "size"}`` (tool
        ``store_file``; content up to ``BINARY_INLINE_THRESHOLD`` bytes inline, longer through a
        scratch file)."""
        envelope = bytes_to_envelope(content, self.scratch, stem="store")
        return self.call_tool("store_file", filename=filename, content=envelope)

