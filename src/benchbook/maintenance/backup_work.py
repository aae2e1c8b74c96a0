"""The work folder of a backup, and what removes it whichever way the backup ends (issue 33
finding 7, ``docs/maintenance.md``).

A backup writes in ``.benchbook-backup-<random>/`` next to its archive (the same filesystem, so
the finished archive is renamed into place): the database snapshot, then the archive as it
grows, together as large as the database. The folder is removed on every way out a process has:
a return, an error, and SIGINT, SIGTERM or SIGHUP (:func:`exits_on_signals` turns them into
exceptions, so the clean-up runs). SIGKILL and a power cut cannot be caught; for them:

- the folder holds ``owner.json`` (pid, host, start time, project, archive: for people), which
  the backup holds an exclusive ``flock`` on while it runs. The kernel drops that lock when the
  process ends, however it ends, so a folder whose lock can be taken is *stale* (its backup is
  gone), and one whose lock cannot is *running*: no pid reuse, no clock to trust. The file is
  locked before it gets its name, so it never appears unlocked while its backup lives;
- the project folder holds a pointer, ``.benchbook-backup-<random>.json`` (``{"work": path}``),
  removed with the folder, so ``benchbook doctor`` finds the folders of the project's stopped
  backups wherever they were written (:func:`project_leftovers`);
- every backup first removes the stale folders of the folder it writes to, whichever project
  they were of (:func:`sweep`).

A folder without ``owner.json`` (written by benchbook before 33, or a backup killed in the instant
between making the folder and naming its marker) counts as stale once it is older than
:data:`UNMARKED_GRACE`. Locks need a POSIX system (``fcntl``); on a filesystem that refuses them,
a folder is left alone (state ``unknown``) rather than guessed about.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from benchbook import owned_files

PREFIX = ".benchbook-backup-"
"""Names of work folders (and, with ``.json``, of their pointers in the project folder)."""
OWNER = "owner.json"
UNMARKED_GRACE = 600.0
"""Seconds a work folder without ``owner.json`` is left alone: it may be a backup starting now."""
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Leftover:
    """A work folder found on disk: ``folder`` (None for a pointer whose folder is gone already),
    ``state`` (``running``: its backup holds the lock; ``stale``: it does not, or an unmarked
    folder older than :data:`UNMARKED_GRACE`; ``unknown``: the lock cannot be tried), ``size``
    (bytes of its files), ``owner`` (``owner.json``: ``pid``, ``host``, ``started`` ISO 8601,
    ``project``, ``archive``; empty when unmarked) and ``pointer`` (its file in a project folder,
    when found through one)."""

    folder: Path | None
    state: str
    size: int = 0
    owner: dict[str, Any] = field(default_factory=dict)
    pointer: Path | None = None

    @property
    def name(self) -> str:
        """The folder's name (or the pointer's, when the folder is gone)."""
        path = self.folder or self.pointer
        return path.name if path is not None else ""


@dataclass
class Work:
    """A backup's work folder while it runs (:func:`work_folder`): its ``path`` and the stale
    folders of other backups that were removed before it was made (``swept``)."""

    path: Path
    swept: list[Leftover]


@contextlib.contextmanager
def exits_on_signals() -> Iterator[None]:
    """While inside: SIGINT raises ``KeyboardInterrupt``, SIGTERM and SIGHUP ``SystemExit(128 +
    signal number)``, so the ``finally`` clauses of the code inside run (a signal's default
    action would end the process on the spot). After the first of them the three are ignored
    until the block is left, so the clean-up is not cut short by a second one. A signal ignored
    when the block starts stays ignored (``nohup``); the previous handlers come back on leaving.
    Does nothing outside the main thread (Python runs signal handlers there only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}

    def stop(signum: int, frame: FrameType | None) -> None:
        for other in SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    try:
        for signum, handler in previous.items():
            if handler is not signal.SIG_IGN:
                signal.signal(signum, stop)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


@contextlib.contextmanager
def work_folder(where: Path, project_root: Path, archive: Path) -> Iterator[Work]:
    """Sweep the stale work folders of ``where`` (:func:`sweep`), make a new one there (mode
    0700), mark it as this process's (``owner.json``, locked while inside) and leave a pointer
    to it in ``project_root`` (best effort: a project folder that cannot be written gets none).
    On leaving, whichever way: the folder and the pointer are removed (with SIGINT, SIGTERM and
    SIGHUP held back meanwhile, so that one arriving then cannot cut the removal short). Raises
    ``OSError`` when ``where`` cannot be written."""
    swept = sweep(where)
    path = Path(tempfile.mkdtemp(dir=where, prefix=PREFIX))
    pointer = project_root / f"{path.name}.json"
    lock = None
    try:
        lock = _mark(path, project_root, archive)
        with contextlib.suppress(OSError):
            pointer.write_text(json.dumps({"work": str(path)}), encoding="utf-8")
        yield Work(path=path, swept=swept)
    finally:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            shutil.rmtree(path, ignore_errors=True)
            pointer.unlink(missing_ok=True)
            if lock is not None:
                os.close(lock)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _mark(folder: Path, project_root: Path, archive: Path) -> int:
    """Write ``owner.json`` into ``folder``, exclusively locked before it gets its name; returns
    the descriptor holding the lock (closing it lets the lock go). On a filesystem without locks
    the marker says ``locked: false`` and sweepers leave the folder alone."""
    draft = folder / f".{OWNER}.draft"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        locked = True
    except OSError:
        locked = False
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "started": datetime.now(UTC).isoformat(),
             "project": str(project_root), "archive": str(archive), "locked": locked}
    os.write(fd, json.dumps(owner).encode())
    os.rename(draft, folder / OWNER)
    return fd


def survey(folder: Path, *, now: float | None = None) -> list[Leftover]:
    """The work folders in ``folder`` (directories named ``.benchbook-backup-*``, no links), each
    with its state (see :class:`Leftover`), by name."""
    now = time.time() if now is None else now
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [judge(entry, now=now) for entry in entries
            if entry.name.startswith(PREFIX) and entry.is_dir() and not entry.is_symlink()]


def judge(folder: Path, *, now: float | None = None) -> Leftover:
    """The state of the work folder ``folder`` (see :class:`Leftover`)."""
    now = time.time() if now is None else now
    size = owned_files.folder_size(folder)
    try:
        held, owner = owned_files.probe(folder / OWNER)
    except FileNotFoundError:
        try:
            young = now - folder.stat().st_mtime <= UNMARKED_GRACE
        except FileNotFoundError:  # removed meanwhile
            young = False
        return Leftover(folder, "running" if young else "stale", size)
    return Leftover(folder, {True: "running", False: "stale", None: "unknown"}[held], size, owner)


def project_leftovers(root: Path, *, now: float | None = None) -> list[Leftover]:
    """The work folders of ``root``'s backups: the ones its pointers name (a pointer whose folder
    is gone, or that names no work folder of its own name, is a ``stale`` leftover itself, with
    ``folder`` None) and the ones in ``root`` itself."""
    found: dict[Path, Leftover] = {}
    try:
        pointers = sorted(p for p in root.glob(f"{PREFIX}*.json") if p.is_file())
    except OSError:
        pointers = []
    for pointer in pointers:
        work = _pointed(pointer)
        if work is None or not work.is_dir() or work.is_symlink():
            found[pointer] = Leftover(None, "stale", pointer=pointer)
            continue
        leftover = judge(work, now=now)
        leftover.pointer = pointer
        found[work] = leftover
    for leftover in survey(root, now=now):
        assert leftover.folder is not None
        found.setdefault(leftover.folder, leftover)
    return list(found.values())


def _pointed(pointer: Path) -> Path | None:
    """The work folder ``pointer`` names, when it is one named like the pointer (a pointer can
    never make a sweep remove any other folder)."""
    try:
        work = Path(json.loads(pointer.read_text(encoding="utf-8"))["work"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return work if work.name == pointer.stem and work.name.startswith(PREFIX) else None


def remove(leftovers: list[Leftover]) -> tuple[int, int]:
    """Remove the stale ones of ``leftovers`` (the others are skipped): their folders, their
    pointers, and the pointer their ``owner.json`` names in its project. Returns ``(folders or
    pointers removed, bytes)``; raises ``OSError`` when a folder cannot be removed."""
    count = size = 0
    for leftover in leftovers:
        if leftover.state != "stale":
            continue
        if leftover.folder is not None:
            try:
                shutil.rmtree(leftover.folder)
            except FileNotFoundError:  # a sweep removed it meanwhile
                pass
            project = leftover.owner.get("project")
            if isinstance(project, str) and project:
                (Path(project) / f"{leftover.folder.name}.json").unlink(missing_ok=True)
        if leftover.pointer is not None:
            leftover.pointer.unlink(missing_ok=True)
        count += 1
        size += leftover.size
    return count, size


def sweep(folder: Path) -> list[Leftover]:
    """Remove the stale work folders of ``folder`` (the ones of backups that are gone; a running
    backup's folder is never touched); returns the ones removed. One that cannot be removed is
    left (``benchbook doctor`` reports it): a backup does not fail for another one's folder."""
    removed = []
    for leftover in survey(folder):
        if leftover.state == "stale":
            with contextlib.suppress(OSError):
                remove([leftover])
                removed.append(leftover)
    return removed
