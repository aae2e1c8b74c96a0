"""What every request's handler needs, one per app: built by :func:`benchbook.http.app.create_app`,
put in each request's scope by the app, read by :mod:`benchbook.handlers.uow`. It sits below
both so that neither imports the other."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from benchbook.domain.progress import ProgressBoard
from benchbook.persistence.db import Database
from benchbook.settings.config import Project


@dataclass
class Services:
    """What handlers need, one per app: the ``project`` and its opened ``db``; ``progress``
    holds what requests with a progress key report (:mod:`benchbook.http.progress_keys`)."""

    project: Project
    db: Database
    sync_only: bool = False
    allowed: list[tuple[re.Pattern[str], str]] = field(default_factory=list)  # paths → Allow
    progress: ProgressBoard = field(default_factory=ProgressBoard)
