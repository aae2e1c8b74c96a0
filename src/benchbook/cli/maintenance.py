"""Local maintenance commands (``docs/maintenance.md``): ``backup``, ``restore`` and ``doctor``.

Like ``init`` and ``import`` they work on the project folder in-process (never through
``--url``); the work is done by :mod:`benchbook.maintenance`. On a terminal each draws a
progress bar per stage of its work on stderr (:func:`benchbook.cli.progress.stages`).
"""
from __future__ import annotations

from pathlib import Path

import click

from benchbook.cli.progress import stages
from benchbook.cli.sending import Settings
from benchbook.domain.progress import silent
from benchbook.maintenance import MaintenanceError
from benchbook.maintenance import backup as backups
from benchbook.maintenance import doctor as doctors
from benchbook.settings.config import Project


def _project(ctx: click.Context) -> Project:
    """The project of ``--project`` (which must exist: maintenance never creates one), else the
    nearest ``benchbook.toml`` upwards, else the default project."""
    chosen = getattr(ctx.find_object(Settings), "project", None)
    try:
        return Project.open(chosen) if chosen else Project.locate(None)
    except (OSError, ValueError) as exc:  # no benchbook.toml; a benchbook.toml that is not TOML
        raise click.ClickException(str(exc)) from None


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--with-secrets", is_flag=True, default=False,
              help="Include .secrets.toml (the AI key). Keep such a backup as private as the key.")
@click.pass_context
def backup_command(ctx: click.Context, file: Path, with_secrets: bool) -> None:
    """Write a backup of the project to FILE, a new tar archive (gzip when FILE ends in .gz or
    .tgz): a consistent copy of the database taken while the server may be writing (SQLite's
    online backup; pg_dump on PostgreSQL), the files it uses, benchbook.toml, workflows/ and
    plugins/. Restore it with `benchbook restore FILE DIRECTORY`. FILE is made readable by you
    only (mode 0600). The work folder it writes in beside FILE is removed however the backup
    ends (Ctrl-C, SIGTERM, SIGHUP); one a killed backup left there is removed first."""
    project = _project(ctx)
    try:
        with stages() as progress:
            report = backups.backup(project, file, with_secrets=with_secrets, progress=progress or silent)
    except MaintenanceError as exc:
        raise click.ClickException(str(exc)) from None
    for leftover in report.swept:
        click.echo(f"  removed {leftover.folder}, the work folder of a backup that was killed ({leftover.size} bytes)",
                   err=True)
    click.echo(f"{report.archive}: {report.size} bytes, {report.database} database at revision {report.revision}")
    click.echo(f"  {report.tables.get('records', 0)} records, {report.tables.get('audit_entries', 0)} history entries, "
               f"{report.files} files ({report.file_bytes} bytes)")
    for sha, why in sorted(report.unreadable.items()):
        click.echo(f"  warning: file {sha} was not archived: {why} (see `benchbook doctor`)", err=True)


@click.command("restore")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--database-url", default=None, metavar="URL",
              help="PostgreSQL backups: an empty PostgreSQL database to restore into "
                   "(e.g. postgresql+psycopg://user@127.0.0.1:5432/restored).")
def restore_command(file: Path, directory: Path, database_url: str | None) -> None:
    """Restore the backup FILE into DIRECTORY, a new project folder (an existing one must be
    empty). Every file's sha256 and the database's rows per table are checked against the
    backup before the folder is put in place."""
    try:
        with stages() as progress:
            report = backups.restore(file, directory, database_url=database_url, progress=progress or silent)
    except MaintenanceError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{report.directory}: restored the backup of {report.created_at} ({report.database})")
    click.echo(f"  {report.tables.get('records', 0)} records, {report.tables.get('audit_entries', 0)} history entries, "
               f"{report.files} files, all checked")


LABELS = {"ok": "ok", "note": "note", "warning": "WARNING", "error": "ERROR"}


@click.command("doctor")
@click.option("--fix", is_flag=True, default=False,
              help="Apply the safe fixes: mark runs left running as interrupted, chmod the secrets, remove "
                   "stray and temporary files older than 10 minutes, upgrade the database, checkpoint the WAL, "
                   "remove the work folders of killed backups.")
@click.option("--quick", is_flag=True, default=False, help="SQLite: PRAGMA quick_check instead of integrity_check.")
@click.pass_context
def doctor_command(ctx: click.Context, fix: bool, quick: bool) -> None:
    """Check the project: the database's integrity, its migrations, the files folder against the
    files records use, runs stuck in `running`, the permissions of benchbook.toml and
    .secrets.toml, the work folders of killed backups. Prints each finding with how to fix it;
    exits 1 while a warning or an error is left (after --fix, the ones it could not fix)."""
    project = _project(ctx)
    with stages() as progress:
        findings = doctors.examine(project, fix=fix, quick=quick, progress=progress or silent)
    click.echo(f"benchbook doctor: {project.root}")
    for f in findings:
        label = "fixed" if f.fixed else LABELS.get(f.severity, f.severity)
        click.echo(f"  {label:<8}{f.check:<12}{f.message}")
        if f.fixed:
            click.echo(f"  {'':<20}done: {f.fixed}")
        elif f.fix and f.severity != "ok":
            click.echo(f"  {'':<20}fix: {f.fix}")
    left = [f for f in findings if f.problem]
    fixed = [f for f in findings if f.fixed]
    fixable = [f for f in left if f.repair is not None]
    summary = f"{len(left)} problem(s) left, {len(fixed)} fixed"
    if fixable and not fix:
        summary += f"; `benchbook doctor --fix` fixes {len(fixable)} of them"
    click.echo(summary)
    ctx.exit(1 if left else 0)

