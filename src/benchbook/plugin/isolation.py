"""Standard output isolation: the wire gets private descriptors, plugin code gets the null device.

:func:`isolate` (idempotent, stdlib only) does, in this order:

1. flush Python's ``sys.stdout``;
2. ``os.dup(1)`` → a private, non-inheritable descriptor that frames are written to;
   ``os.dup(0)`` → a private descriptor that frames are read from;
3. ``dup2`` the null device onto fd 1 and fd 0: C-level writes (``os.write(1, …)``, ``printf``
   from an extension or through ctypes, child processes inheriting stdout) land in
   ``/dev/null``; code reading standard input (``input()``, a child process) sees end of input
   and can never swallow a frame;
4. ``sys.stdout`` becomes a line-buffered UTF-8 text wrapper over a :class:`StdoutRelay`.

The relay turns every complete line written to ``sys.stdout`` into a ``log`` frame with
``stream`` = ``stdout`` while a run is in progress; an unfinished last line is sent when the
run ends (before its ``result``/``error``). Outside a run (while the plugin file is imported,
during ``describe``, between runs) lines go to standard error instead, so they are neither lost
nor on the wire. ``sys.stdout.fileno()`` is 1, the null device. Standard error is left as it is.
"""
from __future__ import annotations

import io
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

LineSink = Callable[[str], None]


class StdoutRelay(io.RawIOBase):
    """The byte sink under ``sys.stdout`` after isolation: splits what is written into lines
    and hands each (decoded as UTF-8, undecodable bytes replaced, newline removed) to the
    current target — a ``log`` frame sender during a run, standard error otherwise."""

    def __init__(self) -> None:
        super().__init__()
        self._pending = bytearray()
        self._target: LineSink | None = None
        self._lock = threading.RLock()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        """1: the public standard output, which is the null device after isolation."""
        return 1

    def isatty(self) -> bool:
        return False

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        with self._lock:
            self._pending += chunk
            while (end := self._pending.find(b"\n")) >= 0:
                line = bytes(self._pending[:end])
                del self._pending[: end + 1]
                self._emit(line)
        return len(chunk)

    def flush_partial(self) -> None:
        """Send an unfinished last line (text written without a newline) as a line of its own."""
        with self._lock:
            if self._pending:
                line = bytes(self._pending)
                self._pending.clear()
                self._emit(line)

    def _emit(self, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace")
        target = self._target
        if target is not None:
            target(text)
        else:
            try:
                sys.stderr.write(text + "\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    @contextmanager
    def relaying(self, target: LineSink, text: IO[str] | None = None) -> Iterator[None]:
        """While the block runs, send lines to ``target``; afterwards flush ``text`` (the text
        wrapper above this sink) and the unfinished last line to ``target`` too, then go back
        to standard error."""
        with self._lock:
            self._target = target
        try:
            yield
        finally:
            try:
                if text is not None and not text.closed:
                    text.flush()
                self.flush_partial()
            finally:
                with self._lock:
                    self._target = None


@dataclass(frozen=True)
class Isolation:
    """The result of :func:`isolate`: where frames are read from and written to, and the relay
    under ``sys.stdout``."""

    frames_in: IO[bytes]
    frames_out_fd: int
    relay: StdoutRelay
    stdout: IO[str]


_state: Isolation | None = None
_state_lock = threading.Lock()


def isolate() -> Isolation:
    """Isolate standard input and output as the module docstring describes and return the
    private channels. Calling it again returns the same :class:`Isolation`. Raises
    ``OSError`` when fd 0 or fd 1 is not open."""
    global _state
    with _state_lock:
        if _state is not None:
            return _state
        for stream in (sys.stdout, sys.__stdout__):
            try:
                if stream is not None:
                    stream.flush()
            except (OSError, ValueError):
                pass
        out_fd = os.dup(1)
        in_fd = os.dup(0)
        for fd, flags in ((1, os.O_WRONLY), (0, os.O_RDONLY)):
            null = os.open(os.devnull, flags)
            try:
                os.dup2(null, fd)
            finally:
                os.close(null)
        relay = StdoutRelay()
        text = io.TextIOWrapper(io.BufferedWriter(relay), encoding="utf-8", errors="replace", line_buffering=True)
        sys.stdout = text
        _state = Isolation(os.fdopen(in_fd, "rb"), out_fd, relay, text)
        return _state


def isolation() -> Isolation | None:
    """The current isolation, or None before :func:`isolate` ran."""
    return _state
