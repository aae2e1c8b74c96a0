"""How long work tells its caller how far it is: a callback, never a print.

A long operation (a backup, a restore, the doctor's checks, …) takes an optional
``progress: Progress`` and calls ``progress(stage, done, total)`` as it goes: ``stage`` names
the current part of the work (``"files"``), ``done`` and ``total`` count its items (files,
checks, records; ``done`` from 0 up to ``total``). A stage may be reported many times; a new
stage name starts a new part. The CLI draws a bar per stage on a terminal
(:func:`benchbook.cli.progress.stages`); off one it passes nothing.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from benchbook.domain.errors import Conflict

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: ``done`` of the ``total`` items of ``stage`` are done."""


def silent(stage: str, done: int, total: int) -> None:
    """The :data:`Progress` that reports nowhere (the default of every operation that takes one)."""


_REPORTING: ContextVar[Progress | None] = ContextVar("benchbook_progress", default=None)


def reporting() -> Progress:
    """The :data:`Progress` the caller of the current request set with :func:`reported_to`, else
    :func:`silent`. Handlers pass it to the domain: the CLI sends a command's request to an app in
    its own process and sets it (the context reaches the handler's thread), so the domain's
    callback draws the command's bar; a request over HTTP has none and reports nowhere."""
    return _REPORTING.get() or silent


@contextmanager
def reported_to(progress: Progress | None) -> Iterator[None]:
    """Within the block (and the tasks and threads it starts, which copy the context),
    :func:`reporting` answers ``progress`` (None: :func:`silent`)."""
    token = _REPORTING.set(progress)
    try:
        yield
    finally:
        _REPORTING.reset(token)


KEY_PATTERN = r"[A-Za-z0-9_-]{8,64}"
"""What a progress key is: 8 to 64 letters, digits, ``_`` or ``-`` (a client picks it at random;
``docs/limits.md`` *Progress of a request*)."""
KEYS_KEPT = 256
"""At most this many keys are kept: the oldest one goes when a new one comes."""
KEPT_SECONDS = 600.0
"""How long a key is kept once its request has ended."""


class KeyInUse(Conflict):
    """A request with this progress key is still being handled."""


class ProgressBoard:
    """The progress of requests that carry a progress key (``X-Progress-Key``), kept in this
    server process so that another request can read it (``GET /progress/{key}``; issue 36
    item 4: a command sent over ``--url`` draws its bar from it).

    :meth:`start` gives the :data:`Progress` a request reports through, :meth:`end` marks it
    ended, and :meth:`reading` gives the state of a key: ``{"key", "finished", "stages":
    [{"stage", "done", "total"}]}`` (stages in the order they were first reported). Thread-safe: handlers report from their threads while
    the event loop reads. Holds at most :data:`KEYS_KEPT` keys (the oldest goes first, even
    one still running: its request goes on, unread); an ended request's key is forgotten
    :data:`KEPT_SECONDS` after it ended."""

    def __init__(self, kept: int = KEYS_KEPT, seconds: float = KEPT_SECONDS) -> None:
        self._kept, self._seconds = kept, seconds
        self._lock = threading.Lock()
        self._keys: dict[str, dict[str, Any]] = {}  # oldest first

    def start(self, key: str) -> Progress:
        """Open ``key`` for a request starting now and return the callback it reports through.
        Raises :class:`KeyInUse` while a request with ``key`` is still being handled."""
        with self._lock:
            self._forget_old(time.monotonic())
            held = self._keys.get(key)
            if held is not None and held["ended"] is None:
                raise KeyInUse(key)
            self._keys.pop(key, None)
            state: dict[str, Any] = {"stages": {}, "ended": None}
            self._keys[key] = state
            while len(self._keys) > self._kept:
                self._keys.pop(next(iter(self._keys)))

        def report(stage: str, done: int, total: int) -> None:
            with self._lock:
                state["stages"][stage] = (int(done), int(total))
        return report

    def end(self, key: str) -> None:
        """The request with ``key`` has ended (answered, failed or abandoned)."""
        with self._lock:
            state = self._keys.get(key)
            if state is not None:
                state["ended"] = time.monotonic()

    def reading(self, key: str) -> dict[str, Any] | None:
        """What ``key``'s request has reported so far, or None for a key not (or no longer) kept."""
        with self._lock:
            self._forget_old(time.monotonic())
            state = self._keys.get(key)
            if state is None:
                return None
            return {"key": key, "finished": state["ended"] is not None,
                    "stages": [{"stage": s, "done": d, "total": t} for s, (d, t) in state["stages"].items()]}

    def _forget_old(self, now: float) -> None:
        for key in [k for k, v in self._keys.items() if v["ended"] is not None and now - v["ended"] > self._seconds]:
            del self._keys[key]
