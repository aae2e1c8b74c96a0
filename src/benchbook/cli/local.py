"""Local commands that work on the project directly: ``init``, ``import`` and ``demo``.

``init`` creates the project folder and its database, brought to the newest migration.
"""
from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from benchbook.cli.output import Settings
from benchbook.cli.serve import serve
from benchbook.config import Project
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.records.csv_import import count_rows, import_csv
from benchbook.persistence.db import open_database
from benchbook.runner import triggers, worker

DEMO_DIR = "penguins-demo"


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=False)


def _project(ctx: click.Context, default: str | None = None) -> Project:
    chosen = getattr(ctx.find_object(Settings), "project", None) or default
    return Project.locate(chosen)


@click.command("init")
@click.argument("directory", required=False, default=None, type=click.Path(file_okay=False))
@click.pass_context
def init_command(ctx: click.Context, directory: str | None) -> None:
    """Create a project folder at DIRECTORY (default: --project, else the current folder):
    benchbook.toml, the database (benchbook.db unless benchbook.toml names another) migrated to
    the newest schema, files/, workflows/, plugins/. An existing project is reused and its
    database upgraded. Prints the folder's path."""
    chosen = directory or getattr(ctx.find_object(Settings), "project", None) or "."
    project = Project.init(chosen)
    open_database(project.database_url).engine.dispose()
    click.echo(str(project.root))


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--collection", "-c", required=True, help="Collection to create the records in.")
@click.option("--schema", "-s", default=None,
              help="Schema of the records (optional when the file has a schema_name column).")
@click.pass_context
def import_command(ctx: click.Context, file: Path, collection: str, schema: str | None) -> None:
    """Create one record per row of a CSV FILE (header = field names), in one import batch.

    Any bad row aborts the import: nothing is written and every problem is listed with its
    line number (exit status 1). Workflow runs the new records trigger are queued with them and
    run here afterwards, unless a server holds the project's run queue (then it runs them).
    """
    project = _project(ctx)
    console = Console(stderr=True)
    db = open_database(project.database_url)
    queued, ran = 0, worker.Tally()
    try:
        with db.session() as session, _progress(console) as bar:
            task = bar.add_task(f"importing {file.name}", total=count_rows(file))
            transaction = session.begin()
            c = Ctx(session=session, actor=project.actor, files_dir=project.files_dir)
            try:
                result = import_csv(c, file, collection, schema, progress=lambda n: bar.advance(task, n))
            except BenchbookError as exc:
                transaction.rollback()
                raise click.ClickException(exc.detail) from None
            if result.problems:
                transaction.rollback()
            else:
                queued = len(triggers.on_changes(c, project.root).jobs)  # runs commit with the records
                transaction.commit()
        if not result.problems and queued:
            ran = worker.for_database(db, project).drain(wait=False)
    finally:
        db.engine.dispose()
    if result.problems:
        for problem in result.problems:
            console.print(f"[red]{problem}[/red]")
        raise click.ClickException(f"{len(result.problems)} bad row(s): nothing was imported")
    click.echo(f"imported {result.created} record(s) into {collection} (batch {result.batch_id})")
    if queued:
        click.echo(f"workflow runs: {queued} queued, {ran.ran} ran here ({ran.completed} completed, {ran.failed} failed, "
                   f"{ran.cancelled} cancelled)" + ("; the server running this project runs the others"
                                                    if ran.ran < queued else ""))


@click.command("demo")
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--no-serve", is_flag=True, default=False, help="Only build the demo project.")
@click.option("--open", "open_browser", is_flag=True, default=False, help="Open the browser once up.")
@click.pass_context
def demo(ctx: click.Context, port: int, no_serve: bool, open_browser: bool) -> None:
    """Build a project holding the Palmer penguins (3 islands, 344 penguins, with history) in
    ./penguins-demo (or --project) and serve it."""
    from benchbook.demo import build_demo

    project = _project(ctx, DEMO_DIR) if getattr(ctx.find_object(Settings), "project", None) else \
        Project.init(DEMO_DIR)
    console = Console(stderr=True)
    with _progress(console) as bar:
        task = bar.add_task("loading penguins", total=344)
        created = build_demo(project, progress=lambda n: bar.advance(task, n))
    click.echo(f"demo project {project.root}: " + (f"created {created} records" if created else "already built"))
    if no_serve:  # no server to run the penguin-tag runs the penguins queued: run them here
        _drain_here(project, console)
    else:
        ctx.invoke(serve, port=port, project_dir=str(project.root), open_browser=open_browser)


def _drain_here(project: Project, console: Console) -> None:
    """Run the project's waiting workflow runs in this process, with a progress bar, and say how
    they ended (a server holding the project's queue runs them instead: then this returns at once)."""
    from benchbook.cli.progress import follow
    from benchbook.runner import switch

    db = open_database(project.database_url)
    try:
        def status() -> dict[str, object] | None:
            with db.session() as s:
                return switch.status(s, project.root)["batch"]

        ran = follow(lambda: worker.for_database(db, project).drain(wait=False), status, console)
        if ran.ran:
            click.echo(f"workflow runs: {ran.ran} ran ({ran.completed} completed, {ran.failed} failed, "
                       f"{ran.cancelled} cancelled)")
    finally:
        db.engine.dispose()


def register(group: click.Group) -> None:
    """Add ``init``, ``import`` and ``demo`` to the root group, and ``new`` to its ``plugins``
    group (:mod:`benchbook.cli.scaffold`)."""
    from benchbook.cli import scaffold

    group.add_command(init_command)
    group.add_command(import_command)
    group.add_command(demo)
    scaffold.register(group)
