"""How long work tells its caller how far it is: a callback, never a print.

A long operation (a backup, a restore, the doctor's checks, …) takes an optional
``progress: Progress`` and calls ``progress(stage, done, total)`` as it goes: ``stage`` names
the current part of the work (``"files"``), ``done`` and ``total`` count its items (files,
checks, records; ``done`` from 0 up to ``total``). A stage may be reported many times; a new
stage name starts a new part. The CLI draws a bar per stage on a terminal
(:func:`benchbook.cli.progress.stages`); off one it passes nothing.
"""
from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: ``done`` of the ``total`` items of ``stage`` are done."""


def silent(stage: str, done: int, total: int) -> None:
    """The :data:`Progress` that reports nowhere (the default of every operation that takes one)."""
