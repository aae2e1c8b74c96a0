"""Waiting in tests without racing the machine's speed (issue 38).

A test waits for an *event* (a file appears, a run reaches a status, a thread sets a flag), never
for an amount of time. Where a wait needs a bound so that a hang still ends the run, the bound is
:data:`HANG`: far above what the work costs on a 2-core machine saturated by other processes, so
only a hang reaches it, and the verdict never depends on how busy the machine is.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

HANG = 600.0
"""Seconds: the bound of every wait in the tests. Only a hang reaches it (a wait that would take
this long on a loaded machine is a bug to fix, not a bound to raise)."""

POLL = 0.02
"""Seconds between two checks of :func:`until` (how often, not how long: it decides no verdict)."""


def until(check: Callable[[], T], what: str, *, bound: float = HANG, every: float = POLL) -> T:
    """Call ``check()`` every ``every`` seconds until it returns something truthy, and return
    that. Raises ``AssertionError`` naming ``what`` (and the last value seen) after ``bound``
    seconds: a hang, since :data:`HANG` is far above any honest wait."""
    deadline = time.monotonic() + bound
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {bound:g} s for {what} (last: {found!r})")
        time.sleep(every)
