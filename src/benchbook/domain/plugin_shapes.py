"""What the API shows of a registered plugin (OpenAPI ``PluginResponse`` and its ``PluginPort``
ports), as types: :func:`.plugin_registry.plugin_response` builds it, the handlers answer it,
and ``tests/test_response_shapes.py`` holds them to the document's keys. ``inputs``,
``outputs`` and ``config_schema`` are the plugin's stored contract, shown as stored.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import Any, NotRequired, TypedDict


class PluginPort(TypedDict):
    """OpenAPI ``PluginPort``: one input or output of a plugin, by its ``type`` (``integer``,
    ``float``, ``string``, ``boolean``, ``date``, ``datetime``, ``bytes``, ``table``, ``file``
    or ``json``)."""

    type: str
    description: NotRequired[str]
    required: NotRequired[bool]


class PluginResponse(TypedDict):
    """OpenAPI ``PluginResponse``: a plugin's contract (ports by name, ``config_schema`` a JSON
    Schema, ``capabilities`` the host operations it may call, ``batch`` whether it takes many
    runs at once) and where it stands: ``tier`` (``1``, ``2`` or ``builtin``), ``source``,
    ``status`` (``ok``, ``error``, ``no_container_runtime``), ``error`` (None when it can run)
    and ``described_at`` (ISO 8601 text)."""

    id: str
    name: str
    description: str
    category: str
    capabilities: list[str]
    inputs: dict[str, PluginPort]
    outputs: dict[str, PluginPort]
    config_schema: dict[str, Any]
    batch: bool
    tier: str
    builtin: bool
    source: str
    status: str
    error: str | None
    described_at: str
