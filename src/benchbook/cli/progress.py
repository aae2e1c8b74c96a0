"""Progress bars of long commands. The run queue's: the CLI follows the automation status's
``batch`` (docs/automation.md *The switch*: the current stretch of work, ``pending``, ``succeeded``,
``failed``; failures count as done) while something else does the work, a drain in this process
or a server.

The bar only reads the status; whether it is read from the database in this process or through
``GET /api/automation`` is the caller's ``status`` function, so the same bar serves in-process
commands and ``--url`` ones.

Local long work (backup, restore, doctor; a records delete or restore-all sent to an app in this
process) reports ``progress(stage, done, total)`` through a callback
(:mod:`benchbook.domain.progress`); :func:`stages` draws it, a bar line per stage.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchbook.domain.progress import Progress as Report

T = TypeVar("T")
POLL = 0.25
"""Seconds between two readings of the status."""


def bar(console: Console) -> Progress:
    """The CLI's progress bar: description, bar, ``done/total``, elapsed time (to stderr's console)."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
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
        final = status()
        if final:
            _show(progress, task, final)
        else:  # nothing waits or runs any more: every run counted so far is done
            total = progress.tasks[0].total
            progress.update(task, completed=total or 0, total=total or 0)
    return future.result()


def _show(progress: Progress, task: Any, batch: dict[str, Any] | None) -> None:
    if not batch:
        return
    done = int(batch.get("succeeded") or 0) + int(batch.get("failed") or 0)
    # drawn as read (refresh): every reading shows, however late the bar's own refresh thread runs
    progress.update(task, total=done + int(batch.get("pending") or 0), completed=done, refresh=True)


# ------------------------------------------------------------------ API commands that start runs

DURING = {"jobs.drain_jobs"}
"""Operations that answer once the queue is empty: the bar runs while their request does."""
AFTER = {"jobs.run_workflow_many", "jobs.rerun_many"}
"""Operations that queue runs and answer at once: the bar follows the runs after the answer."""
REPORTED = {"records.delete_records", "records.bulk_delete_records", "audit.restore_all", "plugins.refresh_plugins",
            "audit.get_storage"}
"""Operations whose domain reports its progress (:func:`benchbook.domain.progress.reporting`):
sent to an app in this process, the bar follows their stages through the callback; over
``--url`` the request carries a random ``X-Progress-Key`` and the bar follows what ``GET
/api/progress/{key}`` answers while it runs (:func:`_keyed`)."""
CONVERSION = {"audit.get_storage"}
"""Operations that may start the history conversion (``converting: true``). In this process the
request waits for it with the bar (it is one of :data:`REPORTED`); over ``--url`` the bar follows
the ``done``/``total`` that ``GET /audit/storage`` already answers until it stops, then the
figures are asked again."""
STALL = 30.0
"""Seconds without any run finishing after which the bar stops waiting (nobody is draining:
another process holds the queue and is stuck, or automation was paused meanwhile)."""


def send_followed(settings: Any, request: dict[str, Any], operation_id: str | None,
                  send: Callable[[], Any], console: Console | None = None) -> Any:
    """``send()`` (the command's request; returns its ``httpx.Response``), with a progress bar of
    the runs it drains or starts when ``operation_id`` is one of :data:`DURING` or :data:`AFTER`,
    or of the stages its domain reports when it is one of :data:`REPORTED` (in this process
    through the callback, over ``--url`` through ``GET /api/progress/{key}``), and stderr is a
    terminal; otherwise just ``send()``.

    ``settings`` is the CLI's :class:`~benchbook.cli.sending.Settings`: with ``url`` the status is
    read through ``GET /api/automation``, else from the project's database in this process. After
    an :data:`AFTER` operation the bar waits until nothing waits or runs, or until no run has
    finished for :data:`STALL` seconds (then a line says how many still wait).
    """
    console = console or Console(stderr=True)
    if operation_id in CONVERSION and settings.url and console.is_terminal:
        return _converted(settings, send, console)
    if operation_id in REPORTED and not settings.url:
        from benchbook.domain.progress import reported_to

        with stages(console) as report, reported_to(report):
            return send()
    if operation_id in REPORTED and console.is_terminal:
        return _keyed(settings, request, send, console)
    if operation_id not in DURING | AFTER or not console.is_terminal:
        return send()
    status = _status_reader(settings)
    if operation_id in DURING:
        return follow(send, status, console)
    response = send()
    if 200 <= response.status_code < 300:
        left = follow(lambda: _until_idle(status), status, console)
        if left:
            console.print(f"{left} run(s) still waiting: `benchbook jobs drain` runs them, "
                          "`benchbook automation get` says whether automation is paused")
    return response


def _converted(settings: Any, send: Callable[[], Any], console: Console) -> Any:
    """``send()`` (``GET /audit/storage`` over ``--url``); when its answer says a conversion
    runs, a bar of it until it stops (see :data:`CONVERSION`), then ``send()`` again: the
    figures after it."""
    from benchbook.domain.history.storage import STAGE

    response = send()
    if not _converting(response):
        return response
    status = _storage_reader(settings)
    total = [int(response.json().get("total") or 0)]

    def shown() -> dict[str, Any]:  # once it has stopped: every entry it set out to convert is done
        now = status()
        if now is not None:
            total[0] = int(now["succeeded"]) + int(now["pending"])
            return now
        return {"succeeded": total[0], "failed": 0, "pending": 0}

    follow(lambda: _until_converted(status), shown, console, STAGE)
    return send()


def _keyed(settings: Any, request: dict[str, Any], send: Callable[[], Any], console: Console) -> Any:
    """``send()`` over ``--url`` with a random ``X-Progress-Key`` added to ``request``'s headers
    (``send`` sends that same dict), drawing the stages ``GET /api/progress/{key}`` answers every
    :data:`POLL` seconds while the request runs, and its last reading once it has been answered
    (so the bar ends where the work ended). Returns ``send()``'s response; re-raises what it raised."""
    import secrets

    key = secrets.token_urlsafe(18)  # 24 characters of [A-Za-z0-9_-]
    request["headers"] = {**(request.get("headers") or {}), "X-Progress-Key": key}
    with stages(console) as report, ThreadPoolExecutor(max_workers=1, thread_name_prefix="benchbook-request") as pool:
        sent = pool.submit(send)
        while True:
            answered = not wait([sent], timeout=POLL).not_done
            reading = _server_json(settings, f"progress/{key}")
            if report is not None and isinstance(reading, dict):
                for stage in reading.get("stages") or []:
                    report(str(stage["stage"]), int(stage["done"]), int(stage["total"]))
            if answered:
                return sent.result()


def _converting(response: Any) -> bool:
    if not 200 <= response.status_code < 300:
        return False
    try:
        return bool(response.json().get("converting"))
    except (ValueError, AttributeError):
        return False


def _until_converted(status: Callable[[], dict[str, Any] | None]) -> None:
    """Wait until ``status()`` says no conversion runs (None)."""
    import time

    while status() is not None:
        time.sleep(POLL)


def _server_json(settings: Any, path: str) -> Any:
    """The JSON body of ``GET /api/<path>`` at ``settings.url``, or None when the server cannot
    be reached or answers something that is not JSON (a bar only skips that reading)."""
    import httpx

    base = str(settings.url).rstrip("/").removesuffix("/api")
    try:
        return httpx.get(f"{base}/api/{path}", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return None


def _storage_reader(settings: Any) -> Callable[[], dict[str, Any] | None]:
    """The history conversion read through ``GET /api/audit/storage`` of ``settings.url``, as a
    batch for :func:`follow` (``succeeded`` = done, ``pending`` = total - done), None when none
    runs (or the server cannot be read)."""
    def over_http() -> dict[str, Any] | None:
        found = _server_json(settings, "audit/storage")
        if not isinstance(found, dict) or not found.get("converting") or found.get("total") is None:
            return None
        done, total = int(found.get("done") or 0), int(found["total"])
        return {"succeeded": min(done, total), "failed": 0, "pending": max(total - done, 0)}

    return over_http


def _until_idle(status: Callable[[], dict[str, Any] | None]) -> int:
    """Wait until ``status()`` says nothing waits or runs (0) or until no run has finished for
    :data:`STALL` seconds (how many still wait)."""
    import time

    last, since = -1, time.monotonic()
    while True:
        batch = status()
        if not batch or not batch.get("pending"):
            return 0
        done = int(batch.get("succeeded") or 0) + int(batch.get("failed") or 0)
        if done != last:
            last, since = done, time.monotonic()
        elif time.monotonic() - since > STALL:
            return int(batch["pending"])
        time.sleep(POLL)


def _status_reader(settings: Any) -> Callable[[], dict[str, Any] | None]:
    """How to read the automation status's ``batch`` for ``settings`` (see :func:`send_followed`)."""
    if settings.url:
        def over_http() -> dict[str, Any] | None:
            found = _server_json(settings, "automation")
            return found.get("batch") if isinstance(found, dict) else None

        return over_http

    from benchbook.persistence.db import open_database
    from benchbook.runner import switch
    from benchbook.settings.config import Project

    project = Project.locate(settings.project)  # the command's request has located (or made) it
    db = open_database(project.database_url)

    def in_process() -> dict[str, Any] | None:
        with db.session() as s:
            batch: dict[str, Any] | None = switch.status(s, project.root)["batch"]
            return batch

    return in_process


# ------------------------------------------------------------- local work with a domain callback

def stderr_console() -> Console:
    """The console the long local commands draw their bars on: stderr (a terminal or not; rich
    decides, and ``FORCE_COLOR``/``TTY_COMPATIBLE`` force it as usual)."""
    return Console(stderr=True)


@contextmanager
def stages(console: Console | None = None) -> Iterator[Report | None]:
    """A :data:`benchbook.domain.progress.Progress` callback drawing one bar line per stage
    (description, bar, ``done/total``, elapsed) on ``console`` (default :func:`stderr_console`)
    while the block runs, or None when the console is not a terminal (then nothing is drawn:
    piped output stays as it was). A stage's line is finished (shown complete) when the next
    stage starts or the block ends without an error."""
    console = console or stderr_console()
    if not console.is_terminal:
        yield None
        return
    with bar(console) as progress:
        tasks: dict[str, Any] = {}

        def report(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                _finish(progress, tasks)
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done, total=total, refresh=True)

        yield report
        _finish(progress, tasks)


def _finish(progress: Progress, tasks: dict[str, Any]) -> None:
    """Show the newest stage as complete (a stage whose items were all done, or that had none)."""
    if tasks:
        task = progress.tasks[-1]
        progress.update(task.id, completed=task.total or 0, total=task.total or 0, refresh=True)
