"""The time a block's SQL statements take, for the benchmarks' ceilings (issue 15): what a rate
would come to were everything but the statements to take no time."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event


class Statements:
    """Seconds spent inside ``engine``'s cursor executions while :func:`timed_statements`'s block
    runs (``seconds``), from SQLAlchemy's ``before_cursor_execute`` to ``after_cursor_execute``:
    the database's work and the driver's binding of the parameters, not SQLAlchemy's compiling
    or the commit (not a statement)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._began = 0.0

    def before(self, *_: Any) -> None:
        self._began = time.perf_counter()

    def after(self, *_: Any) -> None:
        self.seconds += time.perf_counter() - self._began


@contextmanager
def timed_statements(engine: Engine) -> Iterator[Statements]:
    """A :class:`Statements` adding up ``engine``'s statements within the block (one thread's at
    a time: a benchmark's own single-threaded work)."""
    got = Statements()
    event.listen(engine, "before_cursor_execute", got.before)
    event.listen(engine, "after_cursor_execute", got.after)
    try:
        yield got
    finally:
        event.remove(engine, "before_cursor_execute", got.before)
        event.remove(engine, "after_cursor_execute", got.after)
