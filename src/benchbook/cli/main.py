"""The ``benchbook`` command: API commands generated from the OpenAPI document, plus local
commands (``serve``, ``init``, ``import``, ``demo``, ``clone``, ``plugins new``, ``plugins try`` …);
a local command may take a generated command's place (``remote sync``, :mod:`benchbook.cli.sync`).

Global options: ``--project DIR`` (env ``BENCHBOOK_PROJECT``), ``--url URL`` (env
``BENCHBOOK_URL``: talk to a running server instead of in-process), ``--table``,
``--columns``, ``--version``.

Start-up (issue 14, item 15): nothing is built or imported before it is needed. The API
groups come from the cached parsed document (:mod:`benchbook.http.document`) and build a command
when it is looked up; local commands are listed in :data:`LOCAL_COMMANDS` by module and
attribute and imported only when run (``--help`` lists them with the help given there).
"""
from __future__ import annotations

import sys
from typing import Any

import click

from benchbook import __version__
from benchbook.cli.lazy import LazyGroup
from benchbook.cli.sending import Settings

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}

LOCAL_COMMANDS: list[tuple[str | None, str, str, str]] = [
    # (group, or None for the root; command name; "module:attribute"; the line --help lists)
    (None, "serve", "benchbook.cli.serve:serve", "Run the benchbook server (API under /api, web app at /)."),
    (None, "init", "benchbook.cli.local:init_command",
     "Create a project folder and its migrated database (default: --project, else here)."),
    (None, "import", "benchbook.cli.local:import_command", "Create records from the rows of a table file."),
    (None, "demo", "benchbook.cli.local:demo", "Build (and serve) a project holding the Palmer penguins."),
    ("plugins", "new", "benchbook.cli.scaffold:new_plugin", "Create a tier-1 plugin folder from the starter."),
    ("plugins", "try", "benchbook.cli.try_step:try_command", "Run one step of a plugin outside any workflow."),
    (None, "backup", "benchbook.cli.maintenance:backup_command", "Write a consistent backup of the project to FILE."),
    (None, "restore", "benchbook.cli.maintenance:restore_command", "Restore a backup FILE into a new folder."),
    (None, "doctor", "benchbook.cli.maintenance:doctor_command", "Check the project; --fix the safe findings."),
    (None, "clone", "benchbook.cli.sync:clone_command",
     "Make a new project folder that follows a sync authority, holding its copy."),
    # over the generated command of remote.sync: a progress bar and a summary table (cli/sync.py)
    ("remote", "sync", "benchbook.cli.sync:sync_command", "Sync now (pull, push, pull)"),
]
"""Local commands, registered lazily. Add a line here to add one (e.g. from a new module)."""


class RootGroup(LazyGroup):
    """The root group. Errors are printed in one spelling, ``error: …`` (HTTP errors
    ``error <status>: …`` from :mod:`benchbook.cli.output`), usage errors after the usage."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("aborted", err=True)
            sys.exit(1)
        except click.UsageError as exc:
            if exc.ctx is not None:
                click.echo(exc.ctx.get_usage(), err=True)
                hint = f"Try '{exc.ctx.command_path} {exc.ctx.help_option_names[0]}' for help."
                click.echo(hint, err=True)
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            message = exc.format_message()
            click.echo(message if message.startswith("error") else f"error: {message}", err=True)
            sys.exit(exc.exit_code)
        sys.exit(result if isinstance(result, int) else 0)


def build_cli() -> click.Group:
    """The root click group with every command registered (commands are made on first use).

    Raises whatever :func:`benchbook.cli.generated.build_groups` raises for a broken document.
    """
    from benchbook.cli.generated import build_groups

    @click.group("benchbook", cls=RootGroup, context_settings=CONTEXT_SETTINGS)
    @click.option("--project", type=click.Path(file_okay=False), envvar="BENCHBOOK_PROJECT", default=None,
                  help="Project folder (default: the nearest benchbook.toml upwards, else the user's "
                       "default project, whose place is said when it is created).  [env: BENCHBOOK_PROJECT]")
    @click.option("--url", envvar="BENCHBOOK_URL", default=None, metavar="URL",
                  help="Talk to the server running at URL (e.g. http://127.0.0.1:8000) instead of "
                       "opening the project in-process.  [env: BENCHBOOK_URL]")
    @click.option("--table", is_flag=True, default=False, help="Show JSON responses as a table.")
    @click.option("--columns", default=None, metavar="NAMES",
                  help="Columns of tables, comma-separated (implies --table).")
    @click.version_option(__version__, "--version", prog_name="benchbook")
    @click.pass_context
    def cli(ctx: click.Context, project: str | None, url: str | None, table: bool, columns: str | None) -> None:
        """benchbook: local-first research data service.

        API commands are `benchbook <group> <command>`; every one has --help. Without --url
        they run in-process on the project (no server needed). An id a command takes as its
        argument may be given whole, by a unique prefix, or by its last 8 characters (what
        --table shows); ids inside a body (--ids lists) are whole ids.
        """
        ctx.obj = Settings(project=project, url=url, table=table or bool(columns), columns=columns)

    assert isinstance(cli, RootGroup)
    groups: dict[str, click.Group] = {}
    for group in build_groups():
        cli.add_command(group)
        groups[group.name or ""] = group
    for parent, name, target, short_help in LOCAL_COMMANDS:
        owner = cli if parent is None else groups.get(parent)
        if owner is None:
            owner = LazyGroup(parent, help=f"{parent} commands.")
            cli.add_command(owner)
            groups[str(parent)] = owner
        assert isinstance(owner, LazyGroup)
        owner.add_import(name, target, short_help)
    return cli


def main() -> None:
    """Console-script entry point (``benchbook``): build the command tree and run it; exits."""
    build_cli()(prog_name="benchbook")


if __name__ == "__main__":
    main()
