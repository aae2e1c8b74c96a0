"""The ``benchbook`` command: API commands generated from the OpenAPI document, plus local
commands (``serve``, and ``init``/``import``/``demo`` from :mod:`benchbook.cli.local` when
that module exists).

Global options: ``--project DIR`` (env ``BENCHBOOK_PROJECT``), ``--url URL`` (env
``BENCHBOOK_URL``: talk to a running server instead of in-process), ``--table``, ``--version``.
"""
from __future__ import annotations

import importlib
import importlib.util

import click

from benchbook import __version__
from benchbook.cli import try_step
from benchbook.cli.generated import build_groups
from benchbook.cli.output import Settings
from benchbook.cli.serve import serve

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 110}


def build_cli() -> click.Group:
    """The root click group with every command registered.

    Raises whatever :func:`benchbook.cli.generated.build_groups` raises for a broken document.
    """

    @click.group("benchbook", context_settings=CONTEXT_SETTINGS)
    @click.option("--project", type=click.Path(file_okay=False), envvar="BENCHBOOK_PROJECT", default=None,
                  help="Project folder (default: the nearest benchbook.toml upwards, else the user's "
                       "default project).  [env: BENCHBOOK_PROJECT]")
    @click.option("--url", envvar="BENCHBOOK_URL", default=None, metavar="URL",
                  help="Talk to the server running at URL (e.g. http://127.0.0.1:8000) instead of "
                       "opening the project in-process.  [env: BENCHBOOK_URL]")
    @click.option("--table", is_flag=True, default=False, help="Show JSON responses as a table.")
    @click.version_option(__version__, "--version", prog_name="benchbook")
    @click.pass_context
    def cli(ctx: click.Context, project: str | None, url: str | None, table: bool) -> None:
        """benchbook: local-first research data service.

        API commands are `benchbook <group> <command>`; every one has --help. Without --url
        they run in-process on the project (no server needed).
        """
        ctx.obj = Settings(project=project, url=url, table=table)

    for group in build_groups():
        cli.add_command(group)
    cli.add_command(serve)
    if importlib.util.find_spec("benchbook.cli.local") is not None:
        local = importlib.import_module("benchbook.cli.local")
        local.register(cli)
    try_step.register(cli)
    return cli


def main() -> None:
    """Console-script entry point (``benchbook``): build the command tree and run it; exits."""
    build_cli()(prog_name="benchbook")


if __name__ == "__main__":
    main()
