"""Calling the CLI in-process from tests: one command on one project, its JSON answer."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner


def run(cli: click.Group, project: Path, *args: str) -> Any:
    """``benchbook --project PROJECT ARGS…`` through click's runner: its ``Result``."""
    return CliRunner().invoke(cli, ["--project", str(project), *args])


def ok(cli: click.Group, project: Path, *args: str) -> Any:
    """:func:`run` that must succeed: its stdout parsed as JSON when it is an object or array,
    else the text itself (empty for a 204)."""
    result = run(cli, project, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout) if result.stdout.lstrip().startswith(("{", "[")) else result.stdout
