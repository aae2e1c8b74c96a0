"""A device's sync on the command line (docs/sync.md, *On the command line*): ``benchbook remote
sync`` with a progress bar and a summary table, and ``benchbook clone URL DIR --invite CODE``.

``remote sync`` is the command generated for ``remote.sync`` (same operation, help and
``--url``), run otherwise: in-process it calls :func:`benchbook.remote.syncing.sync` here, whose
``progress`` callback draws the CLI's bar (:func:`benchbook.cli.progress.bar`) on stderr while it
pulls and pushes, instead of sending the request to an app in this process (where no progress
comes back). With ``--url`` the running server syncs and the table is made from its answer.
Either way it then prints what moved as a table and, when rows wait to be resolved, how to list
them; ``--json`` prints the answer as JSON instead, as the generated command does.

``clone`` makes a new project folder (as ``init``) and connects it to an authority with a
one-use invite (:func:`benchbook.remote.syncing.connect`): the first copy draws the same bar
(the sync it runs takes the same progress callback).
"""
from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from benchbook.cli.generated import ApiCommand, build_command, load_document
from benchbook.cli.project import locate_project
from benchbook.cli.sending import Settings

T = TypeVar("T")

ROWS = (("pushed", "pushed"), ("pulled", "pulled"), ("conflicts", "conflicts"), ("rejected", "rejected"),
        ("files sent", "files_sent"), ("files received", "files_received"))
"""The summary table's rows: (label, SyncSummary key)."""
LIST_ROWS = "benchbook remote list-conflicts"


# ------------------------------------------------------------------------------ what is shown

STAGES = {"push": "push entries", "pull": "pull entries", "copy": "copy records"}
"""The bar's words for each stage of a sync (:data:`benchbook.remote.syncing.Progress`)."""


class SyncBar:
    """A :data:`benchbook.remote.syncing.Progress` callback (``bar(stage, done, total)``) that draws
    the sync on a rich ``progress`` (:func:`benchbook.cli.progress.bar`): one line per stage as the
    sync goes through them (pull, push, pull again), each counting entries ``done/total``.

    A new line starts when the stage changes or the current one has reached its total (a
    second pull right after the first, nothing having been pushed between them).
    """

    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.stage: str | None = None
        self.task: Any = None
        self.done = self.total = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self.stage or (self.task is not None and self.done >= self.total):
            self.task = self.progress.add_task(STAGES.get(stage, stage), total=total)
            self.stage = stage
        self.done, self.total = done, max(done, total)
        self.progress.update(self.task, completed=done, total=self.total, refresh=True)


def summary_table(summary: dict[str, Any]) -> Any:
    """A rich table of a SyncSummary (``{pushed, pulled, conflicts, rejected, files_sent,
    files_received}``): one row each, in that order (a missing key shows 0)."""
    from rich.table import Table

    table = Table(show_header=True)
    table.add_column("sync", style="bold")
    table.add_column("count", justify="right")
    for label, key in ROWS:
        table.add_row(label, str(int(summary.get(key) or 0)))
    return table


def open_rows_line(open_rows: int) -> str | None:
    """The line that says how to list the rows waiting to be resolved, or None when there are none."""
    if open_rows <= 0:
        return None
    rows = "1 row waits" if open_rows == 1 else f"{open_rows} rows wait"
    return (f"{rows} to be resolved (conflicts, refusals, edits against deletes): `{LIST_ROWS}` lists them, "
            "`benchbook remote resolve-conflict ID --take …` resolves one")


def show_summary(summary: dict[str, Any], open_rows: int, title: str | None = None) -> None:
    """Print ``title`` (a line), the summary table on stdout and, when rows wait to be resolved,
    the line saying how to list them (:func:`open_rows_line`)."""
    from rich.console import Console

    console = Console(file=sys.stdout, soft_wrap=False)
    if title:
        console.print(title, highlight=False, markup=False, soft_wrap=True)
    console.print(summary_table(summary))
    line = open_rows_line(open_rows)
    if line:
        console.print(line, highlight=False, markup=False, soft_wrap=True)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _stderr() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def _failure(exc: Exception) -> click.ClickException:
    """A domain error (or a busy database) as the CLI says an HTTP error: ``error <status>: <detail>``."""
    from benchbook.domain.errors import BenchbookError
    from benchbook.http.envelope import status_of

    status = status_of(exc) if isinstance(exc, BenchbookError) else None
    detail = getattr(exc, "detail", None) or str(exc)
    return click.ClickException(f"error {status}: {detail}" if status else detail)


# ------------------------------------------------------------------------------ remote sync

def drawn(console: Any, run: Callable[[Any], T]) -> T:
    """``run(progress)``: with the sync bar (:class:`SyncBar`) on ``console`` as ``progress``
    when it is a terminal, else with no bar (:func:`benchbook.remote.syncing.quiet`); returns
    what ``run`` returns and raises what it raises."""
    from benchbook.cli.progress import bar
    from benchbook.remote import syncing

    if not console.is_terminal:
        return run(syncing.quiet)
    with bar(console) as progress:
        return run(SyncBar(progress))


def run_sync(db: Any, project: Any, console: Any) -> dict[str, int]:
    """:func:`benchbook.remote.syncing.sync` on ``project`` (its database ``db``), drawn on
    ``console`` (:func:`drawn`); returns its SyncSummary. Raises what it raises (``Conflict``
    when no authority is followed, the authority's errors)."""
    from benchbook.remote import syncing

    return dict(drawn(console, lambda progress: syncing.sync(db, project, progress)))


def _sync_here(settings: Settings, as_json: bool) -> None:
    from benchbook.domain.errors import BenchbookError
    from benchbook.persistence.db import DatabaseBusy, open_database
    from benchbook.remote import syncing

    project = locate_project(settings.project)
    db = open_database(project.database_url)
    try:
        summary = run_sync(db, project, _stderr())
        status = syncing.status(db, project)
    except (BenchbookError, DatabaseBusy) as exc:
        raise _failure(exc) from None
    finally:
        db.engine.dispose()
    if as_json:
        _echo_json(summary)
    else:
        show_summary(summary, int(status.get("open_conflicts") or 0), f"synced with {status.get('url')}")


def _sync_over_http(settings: Settings, operation: Any, as_json: bool) -> None:
    from benchbook.cli.output import show_response
    from benchbook.cli.sending import send

    response = send(settings, operation.request({}), path=operation.path)
    if as_json or response.status_code >= 400:
        show_response(response, operation=operation)
        return
    summary = response.json()
    status: dict[str, Any] = {}
    found = send(settings, {"method": "GET", "url": "/api/remote", "params": []}, path="/remote")
    try:
        answered = found.json() if found.status_code == 200 else None
    except ValueError:
        answered = None
    if isinstance(answered, dict):
        status = answered
    open_rows = status.get("open_conflicts")
    if open_rows is None:  # not known: at least the rows this sync made
        open_rows = int(summary.get("conflicts") or 0) + int(summary.get("rejected") or 0)
    show_summary(summary, int(open_rows), f"synced with {status.get('url') or 'the authority'} (by {settings.url})")


SYNC_HELP = """\
Shown: a progress bar of the pulls and the push while they run (on a terminal), then a table
of what moved (pushed, pulled, conflicts, rejected, files sent, files received) and, when rows
wait to be resolved, how to list them (`benchbook remote list-conflicts`). With --url the
running server syncs, and the table is made from its answer."""


def build_sync_command() -> ApiCommand:
    """The ``remote sync`` command: the generated command of ``remote.sync`` (its operation,
    summary and description) with this module's callback and a ``--json`` flag instead of the
    generated ``--table``/``--columns`` (the table is what it shows). Raises ``StopIteration``
    when the document has no ``remote.sync``."""
    doc = load_document()
    path, method, op = next((p, m, o) for p, item in doc["paths"].items() for m, o in item.items()
                            if isinstance(o, dict) and o.get("operationId") == "remote.sync")
    generated = build_command(doc, path, method, op, "sync")
    operation = generated.operation

    def callback(as_json: bool) -> None:
        settings = click.get_current_context().find_object(Settings) or Settings()
        if settings.url:
            _sync_over_http(settings, operation, as_json)
        else:
            _sync_here(settings, as_json)

    json_flag = click.Option(["--json", "as_json"], is_flag=True, default=False,
                             help="Print the summary as JSON (as the API answers it) instead of the table.")
    return ApiCommand(operation, "sync", callback=callback, params=[json_flag],
                      help=f"{generated.help}\n\n{SYNC_HELP}", short_help=generated.short_help)


sync_command = build_sync_command()
"""``benchbook remote sync`` (registered in :data:`benchbook.cli.main.LOCAL_COMMANDS` over the
generated one)."""


# ------------------------------------------------------------------------------ clone

def _empty_the_folder(target: Path, made: bool) -> None:
    """Leave ``target`` as it was: gone when this command ``made`` it, else empty again."""
    if made:
        shutil.rmtree(target, ignore_errors=True)
        return
    for child in target.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def clone(url: str, directory: Path, invite: str, console: Any) -> dict[str, Any]:
    """Make ``directory`` a new project (as ``benchbook init``) that follows the authority at
    ``url`` (``http://`` or ``https://``; a trailing ``/api`` is dropped), joined with the one-use
    ``invite``, and holds its copy; the copy is followed by the CLI's bar on ``console`` when it
    is a terminal. Returns what ``POST /remote/connect`` answers (RemoteStatus plus
    ``summary``).

    ``directory`` must not exist or be an empty folder: ``click.UsageError`` otherwise (nothing
    touched). When the join fails the folder is removed again (emptied, when it existed empty)
    and ``click.ClickException`` says why (the authority's error as ``error <status>: <detail>``,
    or the folder that could not be made) and that the invite was not used. When the join worked
    and the copy then stopped (the network, the authority), the folder stays: it follows the
    authority, holds what was copied, and ``benchbook remote sync`` there finishes the copy (the
    invite is used, so removing the folder would lose that); ``click.ClickException`` says so.
    Anything else (Ctrl+C) is re-raised after the folder is cleared.
    """
    from benchbook.domain.errors import BenchbookError
    from benchbook.persistence.db import DatabaseBusy, open_database
    from benchbook.remote import syncing
    from benchbook.remote import token as tokens
    from benchbook.settings.config import Project

    if not url.startswith(("http://", "https://")):
        raise click.UsageError(f"URL {url!r} is not an http:// or https:// address of the authority "
                               "(e.g. https://lab.example.org:8765)")
    url = url.rstrip("/").removesuffix("/api")
    target = directory.expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise click.UsageError(f"DIR {directory} exists and is not a folder: clone makes a new project folder")
    if target.exists() and any(target.iterdir()):
        raise click.UsageError(f"DIR {directory} is not empty: clone makes a new project, in a new or empty folder")
    made = not target.exists()
    joined = False
    try:
        project = Project.init(target)
        db = open_database(project.database_url)
        try:
            result = drawn(console, lambda progress: syncing.connect(db, project, url, invite, progress))
        finally:
            joined = tokens.read(project.root) is not None
            db.engine.dispose()
    except BaseException as exc:
        if joined and isinstance(exc, (BenchbookError, DatabaseBusy)):
            # joined: the folder follows the authority and holds what was copied so far; the
            # next sync goes on from there (the invite is used, so removing it would lose that)
            raise click.ClickException(
                f"{_failure(exc).message}\nthe join worked but the copy stopped: {directory} follows the authority "
                f"and holds what was copied so far; finish with: cd {shlex.quote(str(directory))} && "
                "benchbook remote sync") from None
        _empty_the_folder(target, made)
        if isinstance(exc, OSError):
            raise click.ClickException(f"cannot make the project in {directory}: {exc}") from None
        if not isinstance(exc, (BenchbookError, DatabaseBusy)):
            raise
        failure = _failure(exc)
        left = "removed" if made else "emptied again"
        raise click.ClickException(f"{failure.message}\nnothing was cloned: {directory} was {left}. "
                                   "The invite was not used.") from None
    return dict(result)


@click.command("clone")
@click.argument("url")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--invite", required=True, metavar="CODE",
              help="The one-use invite the authority's admin made for this device "
                   "(`benchbook sync create-device` there; valid for 24 hours).")
@click.option("--json", "as_json", is_flag=True, default=False,
              help="Print the new project's sync status and the copy's summary as JSON (no table, no next steps).")
def clone_command(url: str, directory: Path, invite: str, as_json: bool) -> None:
    """Make DIR a new project that follows the authority at URL, holding its copy.

    DIR must not exist or be empty. It is made as `benchbook init` makes a project, then joined
    to the authority with the one-use invite, whose whole history it copies (a progress bar
    on a terminal). Then the copy's summary and the next steps are printed. When the join or the
    copy fails, DIR is removed again (emptied, if it existed empty) and nothing is left.

    \b
    Arguments:
      URL  The authority's address, e.g. https://lab.example.org:8765 (a `benchbook serve` there).
      DIR  The new project's folder.
    """
    result = clone(url, directory, invite, _stderr())
    if as_json:
        _echo_json(result)
        return
    summary = result.get("summary") or {}
    show_summary(summary, int(result.get("open_conflicts") or 0),
                 f"cloned {result.get('url') or url} into {directory} as device {result.get('device')}")
    where = shlex.quote(str(directory))
    click.echo("next steps:\n"
               f"  cd {where} && benchbook serve   (work there, offline too: http://127.0.0.1:8000/)\n"
               "  benchbook remote sync   (in that folder: send your changes, get everyone else's)")
