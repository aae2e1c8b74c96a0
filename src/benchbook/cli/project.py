"""Finding the project a command works on."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click


def locate_project(explicit: str | None) -> Any:
    """:meth:`benchbook.settings.config.Project.locate` for a command: when no project is named and none
    is found upwards, the default project is used, and the first time (when it is created) a
    line on stderr says where it is and how to choose another (issue 14, item 14)."""
    import os

    from benchbook.settings.config import CONFIG_NAME, Project, default_project_root

    if not explicit and not os.environ.get("BENCHBOOK_PROJECT"):
        here = Path.cwd().resolve()
        if not any((folder / CONFIG_NAME).exists() for folder in (here, *here.parents)):
            default = default_project_root()
            if not (default / CONFIG_NAME).exists():
                click.echo(f"note: no benchbook project in {here} or above it; using the default project {default} "
                           "(created now). `benchbook init DIR` makes a project elsewhere; --project DIR or "
                           "BENCHBOOK_PROJECT chooses one.", err=True)
    return Project.locate(explicit)
