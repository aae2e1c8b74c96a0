"""The run-queue progress bar (cli/progress.py): it follows the automation status's ``batch``
while the work runs, hands back the work's result or error, and draws nothing off a terminal."""
from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from rich.console import Console

from benchbook.cli.progress import follow


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


def test_the_bar_counts_the_batch_down_and_returns_the_result() -> None:
    done = threading.Event()
    batches = iter([{"pending": 3, "succeeded": 0, "failed": 0}, {"pending": 1, "succeeded": 1, "failed": 1}])

    def status() -> dict[str, Any] | None:
        if done.is_set():
            return {"pending": 0, "succeeded": 2, "failed": 1}
        return next(batches, {"pending": 1, "succeeded": 1, "failed": 1})

    def work() -> str:
        done.wait(2)
        return "drained"

    console, out = terminal()
    threading.Timer(0.6, done.set).start()
    assert follow(work, status, console, "penguin-tag") == "drained"
    shown = out.getvalue()
    assert "penguin-tag" in shown and "0/3" in shown and "2/3" in shown and "3/3" in shown


def test_the_work_s_error_reaches_the_caller() -> None:
    def work() -> None:
        raise RuntimeError("the queue is gone")

    with pytest.raises(RuntimeError, match="the queue is gone"):
        follow(work, lambda: None, terminal()[0])


def test_off_a_terminal_nothing_is_drawn() -> None:
    out = io.StringIO()
    assert follow(lambda: 7, lambda: {"pending": 1, "succeeded": 0, "failed": 0}, Console(file=out)) == 7
    assert out.getvalue() == ""
