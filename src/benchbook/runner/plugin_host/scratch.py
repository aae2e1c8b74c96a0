"""Scratch folders of drains, step runners and plugin processes, kept under the project and
removed even when their process is killed (issue 33 finding 8; ``docs/plugin-authoring.md``
*Processes and scratch folders*).

Layout (``<root>`` = ``<project>/.benchbook/scratch``, see :func:`root_of`)::

    <root>/<area>.lock    held (``flock``, exclusive) by the process owning <area>/ while it lives
    <root>/<area>/        that process's scratch area (mode 0700): drain-*/, run-*/, plugin-*/

``<area>`` is ``<pid>-<random hex>``: one per process and project, made on first use
(:func:`area`) and removed when the interpreter exits. The kernel drops the lock however its
process ends (SIGKILL included), so an area whose lock can be taken is **stale**: its owner is
gone (no pid reuse to fear, no clock to trust). The lock file is locked before it gets its name
(it is written as ``.<area>.lock.draft`` and renamed), so it never appears unlocked while its
owner lives, and it is made before the area's folder and removed after it, so a folder without
its lock file is stale too. :func:`sweep` removes stale areas; the run queue's worker does at
server start and when a drain starts, ``benchbook doctor --fix`` on demand
(:func:`benchbook.runner.plugin_host.processes.clear_leftovers`). On a filesystem without ``flock``
an area is marked ``locked: false`` and left alone by sweepers (its owner still removes it).

The folder is not part of a backup (which takes ``benchbook.toml``, ``workflows/``,
``plugins/`` and the database only) and holds a ``.gitignore`` of ``*``.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import platformdirs

from benchbook import owned_files

SCRATCH = Path(".benchbook") / "scratch"
"""Where a project keeps its scratch areas, relative to its folder."""
LOCK = ".lock"
DRAFT = ".lock.draft"


def root_of(project_root: Path | None) -> Path:
    """The scratch root of the project in ``project_root`` (``<project>/.benchbook/scratch``);
    None (a host with no project: a test, a benchmark, library use): the user's cache folder's
    ``benchbook/scratch``, swept the same way."""
    if project_root is None:
        return platformdirs.user_cache_path("benchbook", appauthor=False) / "scratch"
    return project_root / SCRATCH


def key_of(root: Path) -> str:
    """16 hex digits naming the scratch root ``root`` (of its resolved path) in markers."""
    return hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Area:
    """This process's scratch area under ``root``: ``name`` (``<pid>-<hex>``), ``key``
    (:func:`key_of` ``root``). Made by :func:`area`."""

    root: Path
    name: str
    key: str

    @property
    def path(self) -> Path:
        """The area's folder."""
        return self.root / self.name

    def make(self, kind: str) -> Path:
        """A new empty folder ``<kind>-<random>`` in the area (mode 0700)."""
        return Path(tempfile.mkdtemp(dir=self.path, prefix=f"{kind}-"))

    def marker(self) -> str:
        """A new process marker ``<key>.<area name>.<random hex>`` (see ``processes``)."""
        return f"{self.key}.{self.name}.{secrets.token_hex(4)}"


_areas: dict[Path, tuple[Area, int]] = {}
_guard = threading.Lock()


def area(root: Path) -> Area:
    """This process's area under ``root``, made (with its lock) on first use. Raises
    ``OSError`` when ``root`` cannot be written."""
    root = root.resolve() if root.exists() else root.absolute()
    with _guard:
        found = _areas.get(root)
        if found is not None:
            return found[0]
        root.mkdir(parents=True, exist_ok=True)
        ignore = root.parent / ".gitignore"
        if root.parent.name == ".benchbook" and not ignore.exists():
            with contextlib.suppress(OSError):
                ignore.write_text("*\n", encoding="utf-8")
        made, fd = _claim(root.resolve())
        _areas[root] = (made, fd)
        return made


def _claim(root: Path) -> tuple[Area, int]:
    """Lock a new area's lock file under its draft name, rename it into place, make the folder.
    A sweeper that took the draft's lock first (it removes the draft) makes this start over."""
    while True:
        name = f"{os.getpid()}-{secrets.token_hex(6)}"
        draft = root / f".{name}{DRAFT}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:  # a sweeper holds it and removes it
            os.close(fd)
            continue
        except OSError:  # no locks on this filesystem: sweepers will leave the area alone
            locked = False
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "locked": locked,
                                 "started": datetime.now(UTC).isoformat()}).encode())
        try:
            os.rename(draft, root / f"{name}{LOCK}")
        except FileNotFoundError:  # a sweeper removed the draft before this process locked it
            os.close(fd)
            continue
        (root / name).mkdir(mode=0o700)
        return Area(root=root, name=name, key=key_of(root)), fd


def _release_all() -> None:
    """At exit: remove this process's areas (folder first, then the lock file, then the lock)."""
    with _guard:
        held = list(_areas.values())
        _areas.clear()
    for made, fd in held:
        shutil.rmtree(made.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            (made.root / f"{made.name}{LOCK}").unlink()
        with contextlib.suppress(OSError):
            os.close(fd)


def _forget_in_child() -> None:
    """In a forked child: drop the parent's areas (closing the inherited descriptors, so the
    child does not keep the parent's lock alive after the parent dies)."""
    for _, fd in _areas.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _areas.clear()


atexit.register(_release_all)
os.register_at_fork(after_in_child=_forget_in_child)


# ---------------------------------------------------------------------------- other processes
def owner_alive(root: Path, name: str) -> bool | None:
    """Whether the owner of area ``name`` under ``root`` lives: True (its lock is held), False
    (the lock file is missing or its lock can be taken), None (locks cannot be tried here)."""
    return _held(root / f"{name}{LOCK}")


@dataclass(frozen=True)
class Stale:
    """A stale area under ``root``: its ``name``, ``folder`` (None when only its lock file or
    draft is left) and ``size`` (bytes of its files)."""

    root: Path
    name: str
    folder: Path | None
    size: int


def stale(root: Path) -> list[Stale]:
    """The stale areas under ``root`` (the module docstring), by name: their owners are gone."""
    try:
        entries = {entry.name: entry for entry in root.iterdir()}
    except OSError:
        return []
    names = {n[1:-len(DRAFT)] if n.endswith(DRAFT) else n.removesuffix(LOCK)
             for n in entries}
    found = []
    for name in sorted(names):
        folder = entries.get(name)
        folder = folder if folder is not None and folder.is_dir() and not folder.is_symlink() else None
        locks = [entries[n] for n in (f"{name}{LOCK}", f".{name}{DRAFT}") if n in entries]
        if folder is None and not locks:
            continue  # not an area: some other file
        if any(_held(lock) is not False for lock in locks):
            continue  # alive, or cannot be told
        found.append(Stale(root, name, folder, owned_files.folder_size(folder) if folder else 0))
    return found


def _held(lock: Path) -> bool | None:
    """Whether ``lock`` is held (True), free or gone (False), or cannot be told (None)."""
    try:
        return owned_files.probe(lock)[0]
    except FileNotFoundError:
        return False


def _take(root: Path, name: str) -> tuple[int, Path] | tuple[None, None] | None:
    """Take area ``name``'s lock (its lock file, else its draft) for its removal: ``(the
    descriptor holding it, its path)``; ``(None, None)`` when the area has neither (stale: the
    lock file is made before the folder and removed after it); None when it is held or cannot
    be tried."""
    final, draft = root / f"{name}{LOCK}", root / f".{name}{DRAFT}"
    for _ in range(3):  # a draft renamed between the two looks is looked for again
        for path in (final, draft):
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            except OSError:
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                return None
            return fd, path
        if not final.exists():
            return None, None
    return None


def remove(leftovers: list[Stale]) -> tuple[int, int]:
    """Remove the stale areas ``leftovers``, each under its lock taken again (an area whose
    owner lives is never touched, whatever the list says). Returns ``(areas removed, bytes)``;
    raises ``OSError`` when a folder cannot be removed."""
    count = size = 0
    for found in leftovers:
        taken = _take(found.root, found.name)
        if taken is None:
            continue
        fd, lock = taken
        try:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(found.root / found.name)
            if lock is not None:
                lock.unlink(missing_ok=True)
        finally:
            if fd is not None:
                os.close(fd)
        count += 1
        size += found.size
    return count, size


def sweep(root: Path) -> tuple[int, int]:
    """Remove every stale area under ``root``; returns ``(areas removed, bytes)``. An area that
    cannot be removed is left (``benchbook doctor`` reports it)."""
    count = size = 0
    for found in stale(root):
        with contextlib.suppress(OSError):
            n, b = remove([found])
            count, size = count + n, size + b
    return count, size
