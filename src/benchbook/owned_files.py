"""Files and folders owned by a living process, told by a lock the kernel drops when it dies.

A process that owns a work folder (a backup's, ``maintenance/backup_work.py``; a plugin host's
scratch area, ``runner/plugin_host/scratch.py``) holds an exclusive ``flock`` on a small JSON file
for as long as it lives. Whatever way it ends, ``kill -9`` included, the kernel releases the
lock, so another process can tell a live owner from a dead one without pids or clocks:
:func:`probe` tries a shared lock without waiting. An owner that could not take its lock
(a filesystem without ``flock``) writes ``"locked": false`` in the file, and :func:`probe` then
says it cannot tell, so nothing of a possibly live owner is ever swept.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

OWNER_BYTES = 1 << 16
"""Most bytes of an owner file read (they hold a few short fields)."""


def probe(lock: Path) -> tuple[bool | None, dict[str, Any]]:
    """Whether ``lock``'s owner lives: ``(True, owner)`` its lock is held, ``(False, owner)`` it
    is free (the owner is gone), ``(None, owner)`` it cannot be told (the file cannot be opened
    or locked, or says ``"locked": false``). ``owner`` is the file's JSON object (empty when it
    is not one). Raises ``FileNotFoundError`` when ``lock`` does not exist."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        raise
    except OSError:
        return None, {}
    try:
        try:
            owner = json.loads(os.read(fd, OWNER_BYTES) or b"{}")
        except ValueError:
            owner = {}
        owner = owner if isinstance(owner, dict) else {}
        if owner.get("locked") is False:
            return None, owner
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True, owner
        except OSError:
            return None, owner
        return False, owner
    finally:
        os.close(fd)  # lets the probe's shared lock go


def folder_size(folder: Path) -> int:
    """Bytes of the files below ``folder`` (symbolic links counted as themselves, files removed
    meanwhile as 0); 0 for a folder that is gone."""
    total = 0
    for base, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(base, name)).st_size
    return total
