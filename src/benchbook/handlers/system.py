"""Handlers of the ``system`` tag."""
from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from connexion.context import scope

from benchbook import __version__
from benchbook.domain import abandon
from benchbook.domain.errors import Abandoned, NotFound, error_entry
from benchbook.handlers.uow import services

HOLD_ENV = "BENCHBOOK_TEST_HOLD"
"""Test hook, never set in use: a folder. With it set, a ``GET /health`` carrying the header
``x-benchbook-test-hold: NAME`` (letters, digits, ``-``) holds its handler's thread, as a long
domain loop would (:func:`_hold`)."""


def health() -> tuple[dict[str, Any], int]:
    """GET /health: the server answers."""
    _hold()
    return {"status": "ok", "version": __version__, "sync_only": services().sync_only}, 200


def get_progress(key: str) -> tuple[dict[str, Any], int]:
    """GET /progress/{key}: what the request sent with ``X-Progress-Key: key`` has reported
    (:class:`benchbook.domain.progress.ProgressBoard`). Raises ``NotFound`` (404) for a key this
    server does not (or no longer) keep."""
    reading = services().progress.reading(key)
    if reading is None:
        raise NotFound(f"no request with progress key {key} is known to this server (never sent, or ended "
                       "more than 10 minutes ago)", [error_entry(["path", "key"], "not known", "not_found", key)])
    return reading, 200


def _hold() -> None:
    """The test hook of :data:`HOLD_ENV`: writes ``NAME.started`` in the folder, then waits in a
    loop calling :func:`benchbook.domain.abandon.check` until the request is abandoned (client
    gone, server stopping), writes ``NAME.abandoned`` and lets ``Abandoned`` (503) through. A
    ``NAME`` starting with ``stuck`` never checks and never returns (a thread the server cannot
    stop). Raises ``RuntimeError`` (a 500) when the handler's thread has no abandon signal."""
    folder = os.environ.get(HOLD_ENV)
    if not folder:
        return
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    name = headers.get("x-benchbook-test-hold", "")
    if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", name):
        return
    event = abandon.current()
    if event is None:
        raise RuntimeError("the handler's thread has no abandon signal (domain/abandon.py)")
    (Path(folder) / f"{name}.started").write_text(threading.current_thread().name, encoding="utf-8")
    if name.startswith("stuck"):
        threading.Event().wait()  # never set
    try:
        while True:
            abandon.check()
            event.wait()
    except Abandoned:
        (Path(folder) / f"{name}.abandoned").write_text("", encoding="utf-8")
        raise
