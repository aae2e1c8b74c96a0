"""Run a coroutine on an event loop of its own, whatever the calling thread holds.

``asyncio.run`` refuses to start in a thread where a loop is running, and Playwright's sync API
(the web tests' session-scoped browser) leaves one running in the test process's main thread: a
test that calls ``asyncio.run`` after a web test on the same xdist worker failed, and its
never-awaited coroutine then failed the next tests too (found by bench/under_load.py, issue 38).
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def run(make: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(make())`` in a thread of its own; returns what it returned (raises what it
    raised). The coroutine is made in that thread, so none is ever left unawaited here."""
    async def main() -> T:
        return await make()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="own-loop") as pool:
        return pool.submit(lambda: asyncio.run(main())).result()
