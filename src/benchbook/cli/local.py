"""Local commands that work on the project directly: ``init``, ``import`` and ``demo``.

``init`` creates the project folder and its database, brought to the newest migration.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import Progress

from benchbook.cli.progress import bar as progress_bar
from benchbook.cli.project import locate_project
from benchbook.cli.sending import Settings
from benchbook.cli.serve import serve
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.imports.dates import DateRules
from benchbook.domain.imports.problems import lines as problem_lines
from benchbook.domain.imports.readers import FORMATS, Table, check_size, read_table
from benchbook.domain.imports.rejected import rejected_file, rejected_name
from benchbook.domain.imports.run import ImportOptions, ImportResult, import_table
from benchbook.domain.imports.run import Progress as ImportProgress
from benchbook.persistence.db import COMMAND_WAIT, DatabaseBusy, open_database, write_lock
from benchbook.runner import triggers
from benchbook.settings import limits
from benchbook.settings.config import Project

DEMO_DIR = "penguins-demo"


def _project(ctx: click.Context, default: str | None = None) -> Project:
    chosen = getattr(ctx.find_object(Settings), "project", None) or default
    project: Project = locate_project(chosen)
    return project


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


IMPORT_EPILOG = """\b
Special columns (any other column names a field: by name, case-insensitively, by the
field name its header becomes, e.g. "Alcohol %" -> alcohol, or by the field's label):
  schema_name       the row's schema (then --schema is not needed)
  parent_record_id  the parent's record id, or the id column of an earlier row
  parent            the parent by id, natural name, or one-field unique key value
  id, natural_name  not stored (new ids; names recomputed); id names the row for
                    parent_record_id of later rows
  _line, _problem   written to the rejected-rows file by --skip-bad; not stored
\b
Formats: .csv, .tsv/.tab, .xlsx, .json (array of objects), .ndjson/.jsonl; encoding and
delimiter are detected. Dates: ISO 8601 (also week dates 2012-W05-2), 2012/01/31,
31/01/2012 or 01/31/2012 (order per column, see --dayfirst), Excel serial days; datetimes
without offset are read in the field's, else the collection's timezone. See docs/import.md.
"""
PROGRESS_ROWS = 2000
"""Files with more rows than this get a progress bar."""


class _Bar:
    """A rich progress bar for :func:`benchbook.domain.imports.run.import_table` (one task per phase)."""

    def __init__(self, bar: Progress, file: str) -> None:
        self.bar, self.file = bar, file
        self.task: Any = None

    def phase(self, name: str, total: int) -> None:
        if self.task is not None:  # a phase that stopped early (rows found bad) shows as done
            self.bar.update(self.task, completed=self.bar.tasks[-1].total)
        self.task = self.bar.add_task(f"{name} {self.file}", total=total)

    def advance(self, n: int) -> None:
        self.bar.advance(self.task, n)


def run_import_transaction(project: Project, table: Table, options: ImportOptions,
                           progress: ImportProgress | None) -> tuple[ImportResult, int]:
    """The import's one transaction: the whole import runs in it and it is committed only when
    the result says so (no bad row, or ``--skip-bad``; not ``--dry-run``), else rolled back,
    so that nothing of a failed import stays. Queues the workflow runs the new records trigger
    in the same transaction; returns the result and how many runs were queued. Raises
    ``BenchbookError`` (rolled back)."""
    db = open_database(project.database_url)
    try:
        with db.session() as session:
            transaction = session.begin()
            ctx = Ctx(session=session, actor=project.actor, files_dir=project.files_dir)
            try:
                write_lock(session, COMMAND_WAIT)  # one writer for the whole import (all or nothing)
                result = import_table(ctx, table, options, progress)
                queued = len(triggers.on_changes(ctx, project.root).jobs) if result.commit else 0
            except BaseException:
                transaction.rollback()
                raise
            if result.commit:
                transaction.commit()
            else:
                transaction.rollback()
        return result, queued
    finally:
        db.engine.dispose()


def _show_schema(result: ImportResult) -> None:
    """The inferred schema, a field a line (never cut short, however long the names), and its
    display template."""
    click.echo(f"schema {result.schema} (inferred from {result.file}):", err=True)
    for f in result.inferred:
        choices = f", choices {', '.join(f.restrictions['choices'])}" if f.restrictions.get("choices") else ""
        column = f"  (column {f.column!r})" if f.column != f.name else ""
        target = (f" -> {f.reference}" if f.type in ("reference", "reference_list") else
                  f" (names {f.reference!r} records: --references auto)" if f.reference else "")
        click.echo(f"  {f.name}: {f.type}{target}{choices}{column}", err=True)
    template = result.display_template
    click.echo(f"display template: {template}" if template else
               "display template: none (no column among the first three is filled and unique)", err=True)


def _show_preview(result: ImportResult) -> None:
    """The first rows the dry run would create, a row a line (field=value)."""
    click.echo(f"first {len(result.preview)} rows:", err=True)
    for row in result.preview:
        click.echo("  " + ", ".join(f"{k}={v}" for k, v in row.items()), err=True)


@click.command("import", epilog=IMPORT_EPILOG)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--collection", "-c", required=True,
              help="Collection to import into (with --create-schema it is created when missing).")
@click.option("--schema", "-s", default=None,
              help="Schema of the records (not needed with a schema_name column); with --create-schema, the name "
                   "of the new schema (default: the file's name).")
@click.option("--create-schema", is_flag=True, default=False,
              help="Infer a schema from the file (integer, float, boolean, date, datetime, string; a column of few "
                   "distinct values gets them as choices), show it, create it and add it to the collection.")
@click.option("--key", metavar="FIELD[,FIELD]", default=None,
              help="Upsert: a row whose values of these fields match a record updates it (each change in "
                   "history); the other rows create records. Blank cells of a matched row clear the field.")
@click.option("--parent-key", metavar="[COLUMN=][SCHEMA.]FIELD", default=None,
              help="Find each row's parent by its value of the parent schema's FIELD (or natural_name, id), "
                   "read from column COLUMN (default: the column named FIELD). SCHEMA names the parent schema; "
                   "needed with --create-schema.")
@click.option("--dayfirst/--monthfirst", default=None,
              help="Read 01/02/2012 as 1 February (--dayfirst) or as January 2 (--monthfirst). Default: per column, "
                   "day first when a value has a first number over 12 or uses dots, else month first.")
@click.option("--date-format", metavar="FORMAT", default=None,
              help="strptime format of the file's dates and datetimes, e.g. '%d %b %Y' (ISO 8601 and 2012/01/31 "
                   "are still read).")
@click.option("--skip-bad", is_flag=True, default=False,
              help="Import the good rows and write the bad ones, with _line and _problem columns, to "
                   "FILE.rejected.csv (.ndjson for JSON) beside FILE. Without it any bad row aborts the import.")
@click.option("--dry-run", is_flag=True, default=False,
              help="Check every row and report (with --create-schema: the schema, its display template and the "
                   "first rows); write nothing.")
@click.option("--create-missing", is_flag=True, default=False,
              help="A reference cell (id, key or natural name) naming no record creates a bare record of the target "
                   "schema holding it; without it such cells are a problem (one line per column, naming the values).")
@click.option("--references", type=click.Choice(["none", "auto"]), default="none", show_default=True,
              help="With --create-schema: auto makes a column whose values all name records of one schema (by "
                   "uniqueness key or natural name) a reference to it; none only proposes it.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
              help="The file's format (default: from its extension, else its content).")
@click.option("--delimiter", default=None, help="CSV delimiter: one character, or 'tab' (default: sniffed).")
@click.option("--encoding", default=None, help="Text encoding (default: UTF-8 when valid, else detected).")
@click.option("--sheet", default=None, help="Excel: the sheet's name or position from 1 (default: the first).")
@click.pass_context
def import_command(ctx: click.Context, file: Path, collection: str, schema: str | None, create_schema: bool,
                   key: str | None, parent_key: str | None, dayfirst: bool | None, date_format: str | None,
                   skip_bad: bool, dry_run: bool, create_missing: bool, references: str, fmt: str | None,
                   delimiter: str | None, encoding: str | None, sheet: str | None) -> None:
    """Import FILE's rows as records of a collection, in one import batch (all or nothing).

    Problems are listed once per distinct problem, with how many rows have it and their
    line numbers (exit status 1; nothing is written unless --skip-bad). The last line gives
    the records created, updated and unchanged, the rows skipped, and the batch id. Workflow
    runs the changes trigger are queued with them and run here afterwards, unless a server
    holds the project's run queue (then it runs them).
    """
    project = _project(ctx)
    console = Console(stderr=True)
    options = ImportOptions(collection=collection, schema=schema, create_schema=create_schema,
                            key=[k.strip() for k in (key or "").split(",") if k.strip()], parent_key=parent_key,
                            dates=DateRules(dayfirst=dayfirst, date_format=date_format), skip_bad=skip_bad,
                            dry_run=dry_run, create_missing=create_missing, references=references)
    table, result, queued = _read_and_import(project, file, options, console,
                                             {"fmt": fmt, "delimiter": delimiter, "sheet": sheet, "encoding": encoding})
    _report_import(result, table, dry_run)
    if result.failed:
        bad = len({n for p in result.problems for n in p.numbers})
        raise click.ClickException(f"{bad:,} of {len(table.rows) + len(table.problems):,} rows have problems: "
                                   "nothing was imported (--skip-bad imports the good rows)")
    if result.rejected:
        target = file.with_name(rejected_name(file.name, table))
        target.write_bytes(rejected_file(table, result.rejected))
        click.echo(f"{len(result.rejected):,} bad rows written to {target}", err=True)
    verb = "would import" if dry_run else "imported"
    click.echo(f"{verb} {file.name} into {collection}: {result.summary_line()}")
    if queued:
        _run_queued_here(project, queued)


def _read_and_import(project: Project, file: Path, options: ImportOptions, console: Console,
                     reading: dict[str, str | None]) -> tuple[Table, ImportResult, int]:
    """Reads ``file`` (``reading``: :func:`read_table`'s ``fmt``, ``delimiter``, ``sheet``, ``encoding``)
    and imports it in one transaction (:func:`run_import_transaction`; a progress bar for a large file),
    within the project's limits. Returns ``(table, result, runs queued)``. Raises ``click.ClickException``
    for unreadable limits, a file over them, or any domain error or busy database."""
    try:
        bound = project.limits
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        with limits.use(bound):  # the project's limits, as its server applies them to POST …/import
            check_size(file.stat().st_size, file.name)
            table = read_table(file.read_bytes(), file.name, **reading)
            if len(table.rows) > PROGRESS_ROWS:
                with progress_bar(console) as bar:
                    result, queued = run_import_transaction(project, table, options, _Bar(bar, file.name))
            else:
                result, queued = run_import_transaction(project, table, options, None)
    except (BenchbookError, DatabaseBusy) as exc:
        raise click.ClickException(exc.detail) from None
    return table, result, queued


def _report_import(result: ImportResult, table: Table, dry_run: bool) -> None:
    """Tells, on stderr, what the import worked out: the inferred schema (and, on a dry run, the first rows),
    the bare records made for unknown references, its notes and its problems (one line per distinct one)."""
    if result.inferred:
        _show_schema(result)
    for made in result.created_missing:
        verb = "would create" if dry_run else "created"
        click.echo(f"{verb} {made['count']:,} bare {made['schema']!r} records for {', '.join(made['named_by'])} values "
                   f"naming none (by {made['field']}: {', '.join(map(repr, made['examples']))}"
                   f"{', …' if made['count'] > len(made['examples']) else ''})", err=True)
    if dry_run and result.inferred and result.preview:
        _show_preview(result)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    for line in problem_lines(result.problems, table.unit):
        click.secho(line, fg="red", err=True)


def _run_queued_here(project: Project, queued: int) -> None:
    """Runs the ``queued`` workflow runs the import queued in this process (those a server holding the
    project's run queue does not take) and says how they ended."""
    # only when the import queued runs: the worker loads the plugins' code
    from benchbook.runner import worker

    ran = worker.for_database(open_database(project.database_url), project).drain(wait=False)
    click.echo(f"workflow runs: {queued} queued, {ran.ran} ran here ({ran.completed} completed, {ran.failed} failed, "
               f"{ran.cancelled} cancelled)" + ("; the server running this project runs the others"
                                                if ran.ran < queued else ""))


@click.command("demo")
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port to serve the demo project on.")
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
    with progress_bar(console) as bar:
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
    from benchbook.runner import switch, worker

    db = open_database(project.database_url)
    try:
        def status() -> dict[str, object] | None:
            with db.session() as s:
                batch: dict[str, object] | None = switch.status(s, project.root)["batch"]
                return batch

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
