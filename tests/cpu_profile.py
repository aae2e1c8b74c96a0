"""Opt-in pytest plugin: CPU seconds per test, to see where README's command spends the machine.

``python -m pytest -p tests.cpu_profile ...`` with ``BENCHBOOK_CPU_PROFILE=<dir>`` set writes one
line per test to ``<dir>/<worker>.tsv``: ``node id  own CPU s  children's CPU s  wall s``. Own CPU
is the test process's user+system time (its threads included: served projects in a thread,
uvicorn, the ASGI app); children's is that of subprocesses reaped during the test (``benchbook
serve``, plugins, Chromium when it ends). Set-up and tear-down of fixtures count toward the test
that runs them. ``python bench/cpu_profile.py <dir>`` sums the files per module and directory.
The verdict of a test never depends on it: it only measures.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator
from pathlib import Path

import pytest


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """Measure one test's set-up, call and tear-down; append a line to this worker's file."""
    folder = os.environ.get("BENCHBOOK_CPU_PROFILE")
    if not folder:
        yield
        return
    own, children, wall = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
    yield
    own = _cpu(resource.RUSAGE_SELF) - own
    children = _cpu(resource.RUSAGE_CHILDREN) - children
    wall = time.perf_counter() - wall
    path = Path(folder) / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        out.write(f"{item.nodeid}\t{own:.3f}\t{children:.3f}\t{wall:.3f}\n")
