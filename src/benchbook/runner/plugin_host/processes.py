"""Plugin processes and everything they start: made to end with their host, and swept when
their run ends or their host is gone. Containment without cgroups (issue 33 finding 8,
``docs/plugin-authoring.md`` *Processes and scratch folders*), in three layers, each catching
what the one before misses:

1. **Parent death** (Linux): a plugin is started with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so
   the kernel kills it when its host dies, SIGKILL included. The signal follows the *thread*
   that forked the child, not the process: benchbook runs steps in drain and request threads
   that may end before a plugin does, so every plugin is forked by one long-lived spawner
   thread (:func:`spawn`) that ends only with the process. The plugin is started through
   util-linux's ``setpriv --pdeathsig KILL`` where it is installed (``vfork`` and exec: the
   cost does not grow with the host's memory); elsewhere the child calls ``prctl`` itself
   between ``fork`` and exec (``preexec_fn``), which copies the host's page tables (measured:
   2.6 ms a start for a small host, 25 ms for a host of 500 MB, against 1.8 and 2.0 ms through
   ``setpriv``). A host killed in the instant between ``setpriv``'s start and its ``prctl``
   leaves the plugin to layer 3.
2. **Its process group**: a plugin starts in a new session (its pid is its group's and its
   session's id); when it is stopped, its whole group is killed before the plugin is reaped
   (:func:`ended` waits without reaping), so the group id cannot have passed to anyone else.
3. **Its marker**: the plugin's environment holds ``BENCHBOOK_RUN_MARKER=<key>.<area>.<random>``
   (:meth:`.scratch.Area.marker`: the project's scratch root, the host's scratch area), which
   its descendants inherit whatever session or group they move to. When the plugin is stopped
   every process carrying its marker is killed (:func:`kill_marked`); at server start, when a
   drain starts and with ``benchbook doctor --fix``, every process carrying a marker of the
   project whose area's owner is gone (its lock is free, :func:`.scratch.owner_alive`) is
   killed (:func:`clear_leftovers`). Markers are read from ``/proc/<pid>/environ`` (the
   environment a process was started with); each process is killed through a pidfd opened
   before its marker is read again, so the process checked is the process killed.

What escapes: a descendant that empties its environment *and* leaves the plugin's process
group. On systems other than Linux only layer 2 applies (no ``prctl``, no ``/proc``). A tier-2
container is stopped by name on a timeout, but a host killed with SIGKILL leaves it running
until it ends by itself (its ``docker run`` client dies with the host).
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import errno
import functools
import logging
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.runner.plugin_host import scratch

log = logging.getLogger("benchbook.runs")

MARKER = "BENCHBOOK_RUN_MARKER"
"""The environment variable holding a plugin's marker."""
PIPE_BUFFER = 1 << 16
"""Bytes of the host's buffer on a plugin's standard input, output and error (Linux's pipe size)."""
KILL_WAIT = 10.0
"""Longest wait, in seconds, for processes sent SIGKILL to end before the next sweep pass."""
SWEEP_PASSES = 20
"""Sweeps of ``/proc`` per clean-up at most (a pass finds what the processes killed by the one
before started meanwhile; a fork bomb outruns it)."""
_MARKER_BYTES = MARKER.encode() + b"="
_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _load_prctl()


@functools.cache
def _setpriv() -> str | None:
    """The path of a ``setpriv`` that can set the parent-death signal (util-linux 2.33 and
    later), on Linux; None otherwise."""
    path = shutil.which("setpriv") if _PRCTL is not None else None
    if path is None:
        return None
    try:
        shown = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "--pdeathsig" in shown else None


def _runnable(program: str, cwd: Path, env: dict[str, str]) -> None:
    """Raise what ``Popen`` would for a ``program`` that cannot be run (``FileNotFoundError``,
    ``PermissionError``), before it is handed to ``setpriv`` (which would only exit 127)."""
    if os.sep in program:
        path: str | None = str(cwd / program)
    else:
        path = shutil.which(program, mode=os.F_OK, path=env.get("PATH", os.defpath))
    if path is None or not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


def _dies_with(host: int) -> Callable[[], None]:
    """What the child runs between fork and exec: SIGKILL on its parent thread's end; if the
    host died before that (the child was reparented), end now."""
    prctl, kill = _PRCTL, int(signal.SIGKILL)

    def preexec() -> None:
        assert prctl is not None
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != host:
            os._exit(1)
    return preexec


class _Spawner:
    """One daemon thread of this process that forks every plugin (layer 1 of the module
    docstring); started on first use, and again in a forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] | None = None
        self._pid = 0

    def call(self, work: Callable[[], Any]) -> Any:
        """``work()`` run on the spawner thread; its result, or the exception it raised."""
        with self._lock:
            if self._jobs is None or self._pid != os.getpid():
                self._jobs, self._pid = queue.SimpleQueue(), os.getpid()
                threading.Thread(target=self._serve, args=(self._jobs,), name="benchbook-spawner", daemon=True).start()
            jobs = self._jobs
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        jobs.put((work, done))
        return done.result()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]]) -> None:
        while True:
            work, done = jobs.get()
            try:
                done.set_result(work())
            except Exception as exc:  # noqa: BLE001 - handed to the caller, who raises it
                done.set_exception(exc)


_SPAWNER = _Spawner()


def spawn(argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``argv`` in ``cwd`` with exactly ``env``, in a new session, its standard input,
    output and error pipes buffered by :data:`PIPE_BUFFER` bytes, set to be killed when this
    process dies (Linux: by the spawner thread, through ``setpriv`` or ``prctl``; see the module
    docstring). Raises ``OSError`` when it cannot be started."""
    command, preexec = list(argv), None
    if (setpriv := _setpriv()) is not None:
        _runnable(command[0], cwd, env)
        command = [setpriv, "--pdeathsig", "KILL", "--", *command]
    elif _PRCTL is not None:
        # preexec_fn is unsafe with threads when it takes a lock another thread may hold at
        # fork; this one makes one C call through a function resolved beforehand and reads
        # getppid (CPython holds the import lock across the fork itself): nothing in it can block
        preexec = _dies_with(os.getpid())

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, bufsize=PIPE_BUFFER,
                                preexec_fn=preexec)  # noqa: PLW1509 - see above
    if _PRCTL is None:
        return start()
    return _SPAWNER.call(start)  # type: ignore[no-any-return]


def ended(proc: subprocess.Popen[bytes], timeout: float | None) -> int | None:
    """Wait up to ``timeout`` seconds (None: for ever) for ``proc`` to end and return its exit
    status as ``Popen.returncode`` gives it (negative: the signal), or None while it runs. On
    Linux the process is **not reaped** (a pidfd, then ``waitid(WNOWAIT)``), so its pid and
    group id stay its own until ``proc.wait()``; elsewhere ``proc.wait`` reaps it."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not ready:
        return None
    info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


# ---------------------------------------------------------------------------------- markers
def marker_of(pid: int) -> str | None:
    """The marker in the environment ``pid`` was started with, or None (no marker, gone, a
    zombie, not ours to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if _MARKER_BYTES not in data:
        return None
    for entry in data.split(b"\0"):
        if entry.startswith(_MARKER_BYTES):
            return entry[len(_MARKER_BYTES):].decode("ascii", "replace")
    return None


def marked() -> Iterator[tuple[int, str]]:
    """``(pid, marker)`` of every process this user can read that carries a marker (none
    where there is no ``/proc``); never this process."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    me = os.getpid()
    for name in names:
        if name.isdigit() and int(name) != me and (value := marker_of(int(name))) is not None:
            yield int(name), value


def _kill(pid: int, wanted: Callable[[str], bool]) -> tuple[bool, int | None]:
    """SIGKILL ``pid`` if its marker is still wanted: ``(killed, a pidfd to wait on or None)``
    (the caller closes the pidfd)."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        return False, None
    except (AttributeError, OSError):
        fd = None
    value = marker_of(pid)  # read after the pidfd pinned the process: it is the one killed
    if value is None or not wanted(value):
        if fd is not None:
            os.close(fd)
        return False, None
    try:
        if fd is not None:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True, fd


def _await(fds: list[int]) -> None:
    """Wait until every pidfd in ``fds`` is readable (its process ended), :data:`KILL_WAIT` s at
    most without progress; closes them."""
    try:
        waiting = list(fds)
        while waiting:
            ready, _, _ = select.select(waiting, [], [], KILL_WAIT)
            if not ready:
                return
            waiting = [fd for fd in waiting if fd not in ready]
    finally:
        for fd in fds:
            os.close(fd)


def sweep(wanted: Callable[[str], bool]) -> list[int]:
    """Kill every process whose marker ``wanted(marker)`` accepts, and wait for them to end;
    again, for what they started meanwhile, until a pass finds none (at most
    :data:`SWEEP_PASSES` passes). Returns the pids killed."""
    killed: set[int] = set()
    for _ in range(SWEEP_PASSES):
        found = [pid for pid, value in marked() if wanted(value)]
        if not found:
            break
        fds = []
        for pid in found:
            done, fd = _kill(pid, wanted)
            if done:
                killed.add(pid)
            if fd is not None:
                fds.append(fd)
        _await(fds)
    return sorted(killed)


def kill_marked(value: str) -> list[int]:
    """Kill every process carrying the marker ``value`` (a plugin's, when it is stopped)."""
    return sweep(lambda found: found == value)


@dataclass(frozen=True)
class Orphan:
    """A process carrying a marker of a project whose host is gone: ``pid``, ``marker``,
    ``command`` (its command line, cut to 200 characters)."""

    pid: int
    marker: str
    command: str


def _orphaned(root: Path) -> Callable[[str], bool]:
    """Whether a marker is of the scratch root ``root`` and its area's owner is gone."""
    key = scratch.key_of(root)
    known: dict[str, bool] = {}

    def wanted(value: str) -> bool:
        parts = value.split(".")
        if len(parts) != 3 or parts[0] != key:
            return False
        if parts[1] not in known:
            known[parts[1]] = scratch.owner_alive(root, parts[1]) is False
        return known[parts[1]]
    return wanted


def orphans(project_root: Path | None) -> list[Orphan]:
    """The processes left by plugins of the project in ``project_root`` whose host is gone."""
    wanted = _orphaned(scratch.root_of(project_root))
    return [Orphan(pid, value, _command(pid)) for pid, value in marked() if wanted(value)]


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200]
    except OSError:
        return "?"


@dataclass(frozen=True)
class Cleared:
    """What :func:`clear_leftovers` did: ``killed`` (pids), ``areas`` removed, their ``bytes``."""

    killed: list[int]
    areas: int
    bytes: int


def reap(project_root: Path | None) -> list[int]:
    """Kill the processes left by plugins of the project in ``project_root`` whose host is gone
    (:func:`orphans`); returns their pids."""
    return sweep(_orphaned(scratch.root_of(project_root)))


def clear_leftovers(project_root: Path | None) -> Cleared:
    """Kill the processes left by plugins of the project whose host is gone (:func:`reap`), then
    remove the stale scratch areas (:func:`.scratch.sweep`). Never touches what a live host owns."""
    root = scratch.root_of(project_root)
    killed = reap(project_root)
    areas, size = scratch.sweep(root)
    if killed or areas:
        log.warning("cleared what stopped benchbook processes left in %s: %d plugin process(es) killed, "
                    "%d scratch area(s) removed (%d bytes)", root, len(killed), areas, size)
    return Cleared(killed, areas, size)
