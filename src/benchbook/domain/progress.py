"""How long work tells its caller how far it is: a callback, never a print.

A long operation (a backup, a restore, the doctor's checks, …) takes an optional
``progress: Progress`` and calls ``progress(stage, done, total)`` as it goes: ``stage`` names
the current part of the work (``"files"``), ``done`` and ``total`` count its items (files,
checks, records; ``done`` from 0 up to ``total``). A stage may be reported many times; a new
stage name starts a new part. The CLI draws a bar per stage on a terminal
(:func:`benchbook.cli.progress.stages`); off one it passes nothing.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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
