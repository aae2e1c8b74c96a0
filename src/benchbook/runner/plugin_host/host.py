"""The tier-1 host: one plugin subprocess kept alive for a whole run (plugin-protocol/README.md
*Tiers*).

The child runs in its own session and process group with a minimal environment (never the
database URL or any key), a marker (``BENCHBOOK_RUN_MARKER``) and its own scratch folder under
the project (``<project>/.benchbook/scratch/<area>/plugin-*``, :mod:`.scratch`), removed when the
process is closed; it is killed by the kernel if its host dies (:mod:`.processes`). Turns are
strictly synchronous: :meth:`PluginProcess.request` sends ``describe`` or ``run`` and reads
frames until the plugin's final one, relaying ``log`` frames and answering ``rpc_call`` frames on
the way. Standard output is read buffered, a line refused as ``frame_too_large`` as soon as it
holds :data:`~.frames.MAX_FRAME_BYTES` bytes without its newline (without waiting for the rest).
Standard error is drained all the time by a thread (a plugin writing megabytes there never
stalls) and relayed line by line (a line longer than :data:`STDERR_LINE_BYTES`, in pieces), to
the request's ``log`` while a request is in progress, else to the process's; when the final
frame of a request arrives, what the plugin wrote to standard error before it is relayed to the
request's ``log`` before :meth:`PluginProcess.request` returns (:meth:`PluginProcess.settle`:
the reader thread works under a lock, so the request's thread can take what is in the pipe),
so a process that lives on after a run (:mod:`.pool`) does not pass its last lines on to the
next run. On
a timeout the whole group gets SIGTERM, then SIGKILL after :data:`KILL_GRACE` seconds; when the
process is stopped or closed, its group is killed and then every process carrying its marker
(whatever session it moved to). Every failure is a :class:`~.frames.StepFailed`.

Use::

    with PluginProcess(["python3", "plugin.py"], cwd=folder, project_root=project.root) as proc:
        contract = proc.request({"type": "describe"}, timeout=20)
        final = proc.request({"type": "run", "inputs": {...}, "config": {}}, timeout=60,
                             rpc=answer_rpc, log=lambda stream, line: ...)
"""
from __future__ import annotations

import os
import queue
import select
import shutil
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Self

from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host import processes, scratch
from benchbook.runner.plugin_host.frames import (
    MAX_FRAME_BYTES,
    PLUGIN_FINAL,
    encode,
    parse_plugin_line,
)

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when a plugin is stopped."""
STDERR_KEPT = 1 << 20
"""Bytes of a plugin's standard error kept for error messages (the log gets every line)."""
STDERR_LINE_BYTES = 1 << 20
"""Longest piece of a standard error line relayed at once (a longer line arrives in pieces)."""
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "SYSTEMROOT", "TMPDIR")
"""Environment variables a plugin inherits; nothing else of the host's environment."""

LogSink = Callable[[str, str], None]
"""``log(stream, line)``: ``stream`` is ``log``, ``stdout`` or ``stderr``."""
RpcAnswer = Callable[[dict[str, Any]], dict[str, Any]]
"""``rpc(rpc_call frame) -> rpc_result or error frame``."""
_EOF = object()


def plugin_env(folder: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The minimal environment of a plugin process: :data:`PASSED_ENV` from the host, plus
    ``BENCHBOOK_SCRATCH`` (``folder``) and ``extra``."""
    env = {k: v for k in PASSED_ENV if (v := os.environ.get(k)) is not None}
    # coverage.py's settings, when the host itself is measured (the tests): tooling, never a secret
    env.update({k: v for k, v in os.environ.items() if k.startswith("COVERAGE_")})
    env["BENCHBOOK_SCRATCH"] = str(folder)
    env.update(extra or {})
    return env


class PluginProcess:
    """A running tier-1 plugin. ``argv`` is run in ``cwd``; ``log`` receives every stderr line
    (stream ``stderr``) besides what each :meth:`request` is given; its scratch folder is in
    this process's scratch area of the project in ``project_root`` (None: the user's cache
    folder, :func:`.scratch.root_of`). Attributes: ``proc`` (the ``Popen``), ``scratch`` (its
    folder), ``marker`` (its ``BENCHBOOK_RUN_MARKER``). Raises :class:`StepFailed`
    (``process_exit``) when it or its scratch folder cannot be made."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, log: LogSink | None = None,
                 env: dict[str, str] | None = None, project_root: Path | None = None) -> None:
        try:
            area = scratch.area(scratch.root_of(project_root))
            self.scratch = area.make("plugin")
        except OSError as exc:
            raise StepFailed("process_exit", f"the plugin's scratch folder could not be made: {exc}") from None
        self.marker = area.marker()
        self._log = log
        self._lines: queue.Queue[Any] = queue.Queue()
        self._stderr_tail = bytearray()
        self._stderr_partial = bytearray()  # the start of a line whose newline has not come yet
        self._stderr_lock = threading.Lock()  # held while stderr is read and relayed (settle)
        self._stderr_ended = False
        self._request_log: LogSink | None = None
        self.in_turn = False  # a request was sent and its final frame has not come (yet)
        try:
            self.proc = processes.spawn(argv, cwd=cwd, env=plugin_env(self.scratch, {
                **(env or {}), processes.MARKER: self.marker}))
        except OSError as exc:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise StepFailed("process_exit", f"the plugin could not be started ({' '.join(argv)}): {exc}") from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [threading.Thread(target=self._read_stdout, args=(self.proc.stdout,), daemon=True),
                         threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True)]
        for t in self._threads:
            t.start()

    # ------------------------------------------------------------------ readers (threads)
    # Each reader closes its own stream when it is done: a buffered stream cannot be closed by
    # another thread while a read blocks on it (a process that escaped every sweep and holds the
    # pipe would make close() wait for it).
    def _read_stdout(self, out: IO[bytes]) -> None:
        try:
            self._frames(out)
        finally:
            out.close()

    def _frames(self, out: IO[bytes]) -> None:
        while True:
            try:  # buffered: returns at a newline, at end of input, or once MAX_FRAME_BYTES are in
                line = out.readline(MAX_FRAME_BYTES)
            except (OSError, ValueError):
                line = b""
            if not line:
                self._lines.put(_EOF)
                return
            if len(line) == MAX_FRAME_BYTES and not line.endswith(b"\n"):  # its newline would pass the limit
                self._lines.put(StepFailed("frame_too_large",
                                           f"the plugin sent a line over {MAX_FRAME_BYTES} bytes"))
                return
            self._lines.put(line)

    def _read_stderr(self, err: IO[bytes]) -> None:
        fd = err.fileno()
        try:
            os.set_blocking(fd, False)
            while not self._stderr_ended:
                select.select([fd], [], [])  # readable: data or end of input
                with self._stderr_lock:
                    self._pull_stderr(fd)
        except (OSError, ValueError):
            pass
        finally:
            with self._stderr_lock:
                self._stderr_ended = True
                if self._stderr_partial:
                    self._relay(bytes(self._stderr_partial))
                    self._stderr_partial.clear()
                err.close()

    def _pull_stderr(self, fd: int) -> None:
        """Read what the pipe holds now (non-blocking) and relay every whole line of it; the
        caller holds ``_stderr_lock``."""
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                self._stderr_ended = True
                return
            self._stderr_partial += chunk
            while (end := self._stderr_partial.find(b"\n", 0, STDERR_LINE_BYTES)) >= 0 \
                    or len(self._stderr_partial) >= STDERR_LINE_BYTES:
                cut = end + 1 if end >= 0 else STDERR_LINE_BYTES
                self._relay(bytes(self._stderr_partial[:cut]))
                del self._stderr_partial[:cut]

    def _relay(self, raw: bytes) -> None:
        self._stderr_tail += raw
        if len(self._stderr_tail) > STDERR_KEPT:
            del self._stderr_tail[:len(self._stderr_tail) - STDERR_KEPT]
        sink = self._request_log or self._log
        if sink:
            sink("stderr", raw.decode("utf-8", "replace").rstrip("\n"))

    def settle(self) -> None:
        """Relay every whole line the plugin has written to standard error so far (to the
        request's ``log`` while a request is in progress), without waiting for more."""
        assert self.proc.stderr is not None
        with self._stderr_lock:
            if not self._stderr_ended:
                try:
                    self._pull_stderr(self.proc.stderr.fileno())
                except (OSError, ValueError):
                    pass

    # ------------------------------------------------------------------ turns
    def request(self, frame: dict[str, Any], *, timeout: float, rpc: RpcAnswer | None = None,
                log: LogSink | None = None) -> dict[str, Any]:
        """Send ``frame`` (``describe`` or ``run``) and return the plugin's final frame
        (``describe_result``/``result``, or its ``error`` frame). ``log`` frames go to ``log``;
        ``rpc_call`` frames are answered with ``rpc`` (without one, with ``capability_denied``).
        Raises :class:`StepFailed` (``timeout`` after killing the group, ``process_exit``,
        ``protocol_error``, ``frame_too_large``)."""
        finals = PLUGIN_FINAL[frame["type"]]
        deadline = time.monotonic() + timeout
        self._request_log = log
        try:
            self.in_turn = True
            self._send(frame)
            while True:
                got = self._next(deadline, timeout)
                kind = got["type"]
                if kind == "log":
                    if log:
                        log(got.get("stream", "log"), got["message"])
                elif kind == "rpc_call":
                    self._send(rpc(got) if rpc else {"type": "error", "call_id": got["call_id"], "error": {
                        "kind": "capability_denied", "message": "no host operations are available here",
                        "retryable": False}})
                elif kind in finals:
                    self.in_turn = False
                    self.settle()  # its stderr lines of this request reach this request's log
                    return got
                else:
                    raise StepFailed("protocol_error", f"the plugin answered {frame['type']!r} with a "
                                                       f"{kind!r} frame (expected {' or '.join(finals)})")
        except StepFailed:
            self.kill()
            raise
        finally:
            self._request_log = None

    def _send(self, frame: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode(frame))
            self.proc.stdin.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            raise self._exited() from None

    def _next(self, deadline: float, timeout: float) -> dict[str, Any]:
        try:
            item = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise StepFailed("timeout", f"the plugin gave no answer within {timeout:g} s; it was stopped",
                             retryable=True) from None
        if item is _EOF:
            raise self._exited()
        if isinstance(item, StepFailed):
            raise item
        return parse_plugin_line(item)

    def _exited(self) -> StepFailed:
        code = processes.ended(self.proc, KILL_GRACE)  # not reaped: kill() still ends its whole group
        for t in self._threads[1:]:
            t.join(timeout=1)
        tail = self._stderr_tail[-2000:].decode("utf-8", "replace").strip()
        how = f"exited with code {code}" if code is not None else "closed its output"
        return StepFailed("process_exit", f"the plugin {how} before answering" + (f"; stderr: {tail}" if tail else ""))

    # ------------------------------------------------------------------ ending
    def alive(self) -> bool:
        """Whether the plugin process is still running (it is not reaped here)."""
        return processes.ended(self.proc, 0) is None

    def kill(self) -> None:
        """Stop the whole process group (SIGTERM, then SIGKILL after :data:`KILL_GRACE` s; the
        plugin is reaped only after its group was killed, so the group id is still its own),
        then kill every process carrying the plugin's marker (:func:`.processes.kill_marked`)."""
        if self.proc.returncode is None:
            if processes.ended(self.proc, 0) is None:
                _signal_group(self.proc.pid, signal.SIGTERM)
                processes.ended(self.proc, KILL_GRACE)
            if self.proc.returncode is None:  # still unreaped: the group id cannot be anyone else's
                _signal_group(self.proc.pid, signal.SIGKILL)  # children left behind in the group go too
            self.proc.wait()
        processes.kill_marked(self.marker)

    def close(self) -> None:
        """End the plugin: close its input (a tier-1 loop ends at end of input), wait up to
        :data:`KILL_GRACE` s, then :meth:`kill`; remove the scratch folder."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        processes.ended(self.proc, KILL_GRACE)
        self.kill()
        for thread in self._threads:  # the process is gone: both readers reach end of input and close
            thread.join(timeout=KILL_GRACE)
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
