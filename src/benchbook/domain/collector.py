"""Python's cyclic garbage collector paused while one call writes many records.

A bulk call (an import, a set-based create, delete or restore) builds a few small objects per
value of every row: cells, values, dicts of values, bind parameters. Python's cyclic collector
runs after every 700 net allocations of such objects and, every so often, walks every object
alive, the rows built so far included, so its cost grows with the size of the call: a fifth of an
import's time at 100,000 and 300,000 rows (docs/performance.md *The collector paused during
bulk work*). None of those objects form reference cycles (reference counting frees them, and
the peak memory of an import was the same with the collector off), so pausing the collector
for the call loses nothing.

The collector is process-wide: while a bulk call runs in one of a server's threads, the other
threads' cyclic garbage waits until the call ends (then the collector runs as usual). Calls may
nest and run in several threads at once: the collector is enabled again when the last one ends,
and only if it was enabled when the first one started.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the ``with`` block (module docstring); it runs
    again when the last block open in the process ends, however it ends."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                gc.enable()
