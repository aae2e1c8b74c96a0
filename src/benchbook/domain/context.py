"""The unit of work a domain call runs in."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session


@dataclass
class Ctx:
    """What every domain call gets: an open ``session`` (inside ``session.begin()`` for
    writes), the ``actor`` changes are attributed to, the project's ``files_dir``, the
    current audit ``batch_id`` (from ``X-Service-Batch`` or opened by the server) and the
    HTTP ``request_id`` for correlation with logs."""

    session: Session
    actor: str | None
    files_dir: Path
    batch_id: str | None = None
    request_id: str | None = None
