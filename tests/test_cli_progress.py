"""The run-queue progress bar (cli/progress.py): it follows the automation status's ``batch``
while the work runs, hands back the work's result or error, and draws nothing off a terminal."""
from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from rich.console import Console
from sqlalchemy import func, select

from benchbook.cli.progress import follow, send_followed
from benchbook.cli.sending import Settings, send
from benchbook.demo import build_demo
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import Job
from benchbook.settings.config import Project
from tests.waiting import HANG


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


def test_the_bar_counts_the_batch_down_and_returns_the_result() -> None:
    readings = iter([{"pending": 3, "succeeded": 0, "failed": 0}, {"pending": 1, "succeeded": 1, "failed": 1}])
    both_read = threading.Event()

    def status() -> dict[str, Any] | None:
        batch = next(readings, None)
        if batch is None:  # the bar has drawn both readings: the work may end
            both_read.set()
            return {"pending": 0, "succeeded": 2, "failed": 1}
        return batch

    def work() -> str:
        assert both_read.wait(HANG), "the bar stopped reading the status"
        return "drained"

    console, out = terminal()
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


def test_jobs_drain_and_rerun_many_show_the_runs_counted_down(tmp_project: Project) -> None:
    """``benchbook jobs drain`` draws the bar while its request drains the demo's 344 runs;
    ``jobs rerun-many`` answers at once and the bar then follows the 5 runs it queued."""
    build_demo(tmp_project)  # queues a penguin-tag run per penguin
    settings = Settings(project=str(tmp_project.root))
    console, out = terminal()

    def request(method: str, url: str, body: Any = None) -> Any:
        req = {"method": method, "url": url, "params": [], **({"json": body} if body is not None else {})}
        return send_followed(settings, req, OPERATIONS.get((method, url)),
                             lambda: send(settings, req, path=url.removeprefix("/api")), console)

    drained = request("POST", "/api/jobs/drain")
    assert drained.status_code == 200 and drained.json()["ran"] == 344
    assert "344/344" in out.getvalue()
    ids = [job["id"] for job in request("GET", "/api/jobs").json()[:5]]
    rerun = request("POST", "/api/jobs/rerun", {"ids": ids})
    assert rerun.status_code == 200, rerun.text
    assert "5/5" in out.getvalue()
    db = open_database(tmp_project.database_url)
    try:
        with db.session() as s:  # the bar waited for them: all five ran before it returned
            assert s.scalar(select(func.count()).select_from(Job).where(Job.status == "completed")) == 349
    finally:
        db.engine.dispose()


OPERATIONS = {("POST", "/api/jobs/drain"): "jobs.drain_jobs", ("POST", "/api/jobs/rerun"): "jobs.rerun_many"}
