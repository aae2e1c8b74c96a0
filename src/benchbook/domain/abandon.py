"""Work whose requester has gone: its client disconnected, or the server is shutting down.

The HTTP edge gives each request a :class:`threading.Event` (:func:`watching`) and sets it when
the client's connection closes or the server begins to stop; long loops in the domain (an
import's rows, a workbook's cells) call :func:`check` now and then and stop with
:class:`~benchbook.domain.errors.Abandoned`, which rolls their transaction back like any other
error. Outside a request (the command line, a workflow step) nothing is watched and
:func:`check` never raises. The event travels in a :class:`contextvars.ContextVar`, which
Starlette's thread pool copies into the thread that runs a plain ``def`` handler.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from benchbook.domain.errors import Abandoned

_gone: ContextVar[threading.Event | None] = ContextVar("benchbook_abandoned", default=None)


@contextmanager
def watching(event: threading.Event) -> Iterator[threading.Event]:
    """Make ``event`` the current work's "requester has gone" signal for the ``with`` block
    (and any thread the block's context is copied into)."""
    token = _gone.set(event)
    try:
        yield event
    finally:
        _gone.reset(token)


def current() -> threading.Event | None:
    """The current work's signal, or None outside a watched request."""
    return _gone.get()


def check() -> None:
    """Raise :class:`Abandoned` when the current work's requester has gone; cheap (one
    ContextVar read and one flag test), so loops may call it every row."""
    event = _gone.get()
    if event is not None and event.is_set():
        raise Abandoned("the request was abandoned: its client disconnected or the server is stopping")
