"""Progress bars for the run queue: the CLI follows the automation status's ``batch`` (spec
*Automation switch*: the current stretch of work, ``pending``, ``succeeded``, ``failed``; failures
count as done) while something else does the work, a drain in this process or a server.

The bar only reads the status; whether it is read from the database in this process or through
``GET /api/automation`` is the caller's ``status`` function, so the same bar serves in-process
commands and ``--url`` ones.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

T = TypeVar("T")
POLL = 0.25
"""Seconds between two readings of the status."""


def bar(console: Console) -> Progress:
    """The CLI's progress bar: description, bar, ``done/total``, elapsed time (to stderr's console)."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=False)


def follow(work: Callable[[], T], status: Callable[[], dict[str, Any] | None], console: Console,
           description: str = "workflow runs") -> T:
    """Run ``work()`` in a thread and show the run queue's progress until it returns; returns what
    it returned (re-raises what it raised).

    ``status()`` answers the automation status's ``batch`` (``{pending, succeeded, failed, …}`` or
    None when nothing waits or runs); it is read every :data:`POLL` seconds. The bar's total is
    ``pending + succeeded + failed`` (it grows when runs start more runs), done is ``succeeded +
    failed``. On a console that is not a terminal nothing is drawn and ``work`` just runs.
    """
    if not console.is_terminal:
        return work()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchbook-progress") as pool, \
            bar(console) as progress:
        task = progress.add_task(description, total=None)
        future = pool.submit(work)
        while not future.done():
            _show(progress, task, status())
            wait([future], timeout=POLL)
        _show(progress, task, status())
    return future.result()


def _show(progress: Progress, task: Any, batch: dict[str, Any] | None) -> None:
    if not batch:
        return
    done = int(batch.get("succeeded") or 0) + int(batch.get("failed") or 0)
    progress.update(task, total=done + int(batch.get("pending") or 0), completed=done)
