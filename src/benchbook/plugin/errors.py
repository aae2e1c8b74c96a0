"""The SDK's exceptions, in one place.

::

    SDKError                      root of the SDK's exceptions
     ├── PluginError              fails the run: error frame {kind, message, retryable}, call_id null
     │    ├── PluginRpcError      a ctx RPC call failed (the host answered with an error frame,
     │    │                       or RPC is unavailable); kind comes from the host
     │    └── ProtocolError       a frame broke the wire protocol (kind "protocol_error")
     ├── PluginDefinitionError    (also a ValueError) a Plugin(...) declaration is not a valid
     │                            describe_result; raised when the plugin file is imported
     └── tables.BadValue          (also a ValueError) a value does not fit its declared type or
                                  the table envelope's format

The ``kind`` values the SDK itself produces (the protocol fixes only ``capability_denied``:
plugin-protocol/README.md *Capabilities*):

=====================  =====================================================================
``plugin_error``       plugin code raised an exception that is not a :class:`PluginError`
``invalid_input``      ``run.inputs`` do not match the declared inputs (type, required, unknown)
``invalid_config``     ``run.config`` fails the declared ``config_schema``
``invalid_output``     the run function returned outputs that do not match the declared outputs
``protocol_error``     a received frame is not JSON, not an object, fails ``#/$defs/host_frame``
                       or comes out of turn
``frame_too_large``    a frame would be longer than ``MAX_FRAME_BYTES`` (either direction)
``rpc_unavailable``    a ctx RPC method was called in tier 2 (one-shot) or after the run ended
=====================  =====================================================================
"""
from __future__ import annotations

from typing import Any


class SDKError(Exception):
    """Root of the SDK's exceptions."""


class PluginError(SDKError):
    """Raise from a run function to fail the run with a chosen error ``kind``.

    ``raise PluginError("not_found", "no sample sheet in the record")`` ends the run with
    ``{"type": "error", "call_id": null, "error": {"kind": "not_found", "message": ...,
    "retryable": false}}``. ``str(exc)`` is ``message``.
    """

    def __init__(self, kind: str, message: str, retryable: bool = False) -> None:
        if not kind:
            raise ValueError("PluginError needs a non-empty kind")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable

    def envelope(self) -> dict[str, Any]:
        """The error envelope ``{"kind", "message", "retryable"}`` of this error."""
        return {"kind": self.kind, "message": self.message, "retryable": self.retryable}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind!r}, {self.message!r}, retryable={self.retryable!r})"


class PluginRpcError(PluginError):
    """A ctx RPC call (``ctx.get_file``, ``ctx.update_record``, ``ctx.call_tool`` …) failed.

    Raised when the host answers the ``rpc_call`` with an ``error`` frame: ``kind``,
    ``message`` and ``retryable`` are the host's (``capability_denied`` when the method or tool
    is not among the plugin's declared capabilities). Also raised, with kind
    ``rpc_unavailable``, when RPC cannot be used at all (tier 2, or after the run ended), and
    with kind ``frame_too_large`` when the call would not fit in one frame. Catch it to go on
    without the call; left uncaught it fails the run with the same kind.
    """


class ProtocolError(PluginError):
    """A frame broke the wire protocol: not JSON, not an object, invalid against the frame
    schema, or out of turn (for example an ``rpc_result`` for another ``call_id``).
    ``kind`` is always ``protocol_error``; the message names what was wrong."""

    def __init__(self, message: str) -> None:
        super().__init__("protocol_error", message, retryable=False)


class PluginDefinitionError(SDKError, ValueError):
    """A ``Plugin(...)`` declaration (or its ``@plugin.run`` registration) is invalid: the
    describe_result it would send fails the frame schema, ``config_schema`` is not a valid JSON
    Schema, or a second run function is registered."""
