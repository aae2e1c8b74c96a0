"""Handlers of the ``plugins`` tag: the registry of discovered plugins."""
from __future__ import annotations

from typing import Any

from benchbook.domain import plugin_registry as domain
from benchbook.domain.plugin_shapes import PluginResponse
from benchbook.domain.progress import Progress, reporting, silent
from benchbook.handlers.uow import read, services, write
from benchbook.runner.plugin_host import discovery

Body = dict[str, Any]


def _refresh(progress: Progress = silent) -> Body:
    found = discovery.discover(services().project.root / "plugins", progress=progress)  # describes: outside the transaction
    with write() as ctx:
        return domain.replace_all(ctx.session, found)


def list_plugins() -> tuple[list[PluginResponse], int]:
    with read() as s:
        empty = domain.is_empty(s)
    if empty:
        _refresh()
    with read() as s:
        return domain.list_plugins(s), 200


def refresh_plugins() -> tuple[Body, int]:
    return _refresh(reporting()), 200


def get_plugin(plugin_id: str) -> tuple[PluginResponse, int]:
    with read() as s:
        if domain.is_empty(s):
            s.close()
            _refresh()
    with read() as s:
        return domain.plugin_response(domain.find_plugin(s, plugin_id)), 200
