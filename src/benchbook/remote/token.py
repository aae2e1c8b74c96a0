"""The device token, kept in the project folder as ``.sync-token`` (mode 0600), never in the
database, a backup, a log, a response or history (docs/sync.md *Tokens*)."""
from __future__ import annotations

import os
from pathlib import Path

NAME = ".sync-token"


def path(root: Path) -> Path:
    """Where project ``root`` keeps its device token."""
    return root / NAME


def read(root: Path) -> str | None:
    """The token, or None when this project holds none."""
    try:
        return path(root).read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def write(root: Path, token: str) -> None:
    """Keep ``token``: written to a new file created 0600, then moved over the old one."""
    draft = root / f"{NAME}.{os.getpid()}.tmp"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    os.replace(draft, path(root))


def forget(root: Path) -> None:
    """Remove the token (disconnect)."""
    path(root).unlink(missing_ok=True)
