"""Handlers of the ``system`` tag."""
from __future__ import annotations

from typing import Any

from benchbook import __version__
from benchbook.handlers.uow import services


def health() -> tuple[dict[str, Any], int]:
    """GET /health: the server answers."""
    return {"status": "ok", "version": __version__, "sync_only": services().sync_only}, 200
