"""Serving a plugin: the tier 1 frame loop, the tier 2 one-shot, and one run.

``serve(plugin, mode)`` expects :func:`benchbook.plugin.isolation.isolate` to have run. With
``mode`` None it loops (tier 1): each ``describe`` is answered with the describe_result, each
``run`` runs the run function, until end of input (exit status 0). With ``mode`` ``describe`` or
``run`` (tier 2) it reads exactly one frame, which must be of that type, answers it and returns
0 — also when the answer is an ``error`` frame of a failed run; 1 when no valid frame of that
type arrived (an ``error`` frame kind ``protocol_error`` is still written). A frame that fails
``#/$defs/host_frame`` or comes out of turn (an ``rpc_result`` when no call waits) is answered
with an ``error`` frame kind ``protocol_error``, ``call_id`` null, and the loop goes on.

A run: config checked (``invalid_config``), inputs decoded (``invalid_input``), the run
function called with ``(ctx, inputs, config)``, its outputs encoded (``invalid_output``), then
one ``result`` frame. Any exception from plugin code ends the run with one ``error`` frame,
``call_id`` null: a :class:`PluginError` (including an uncaught :class:`PluginRpcError`) with
its own kind, message and retryable; anything else (``SystemExit`` too) with kind
``plugin_error``, message ``str(exc)`` (the class name when that is empty), retryable false,
and the traceback on standard error. If the host broke the protocol while the run waited for
an RPC answer, the run ends with that ``protocol_error`` even if plugin code caught it. A
frame too long for the wire is replaced by an ``error`` frame kind ``frame_too_large``.
"""
from __future__ import annotations

import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from benchbook.plugin.batches import answer_run
from benchbook.plugin.context import Context, clip_message, default_scratch
from benchbook.plugin.errors import PluginError, PluginRpcError, ProtocolError
from benchbook.plugin.isolation import Isolation, isolate
from benchbook.plugin.wire import Wire


class Plugin(Protocol):
    """What serving needs of a :class:`benchbook.plugin.Plugin` (declared here so that this
    module, which the declaration's ``main()`` calls, does not import the declaration back)."""

    id: str
    inputs: dict[str, dict[str, Any]]
    outputs: dict[str, dict[str, Any]]
    batch: bool
    run_function: Callable[[Context, dict[str, Any], dict[str, Any]], Mapping[str, Any]] | None

    def describe(self) -> dict[str, Any]: ...

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, Any]: ...

MODES = ("describe", "run")
"""The tier 2 modes: the first command-line argument, and the only frame type then read."""

_loading = threading.local()


@contextmanager
def loading_plugin() -> Iterator[None]:
    """Marks the import of a plugin file by ``python -m benchbook.plugin`` (``Plugin.main()``
    then returns at once instead of serving)."""
    _loading.active = True
    try:
        yield
    finally:
        _loading.active = False


def loading() -> bool:
    """Whether a plugin file is being imported by ``python -m benchbook.plugin``."""
    return bool(getattr(_loading, "active", False))


def error_frame(error: PluginError) -> dict[str, Any]:
    """A top-level ``error`` frame (``call_id`` null) for ``error``."""
    envelope = error.envelope()
    envelope["message"] = clip_message(envelope["message"])
    return {"type": "error", "call_id": None, "error": envelope}


def _plugin_failure(exc: BaseException) -> PluginError:
    if isinstance(exc, PluginError):
        sys.stderr.write(f"run failed: {exc.kind}: {exc.message}\n")
        return exc
    traceback.print_exception(exc, file=sys.stderr)
    return PluginError("plugin_error", str(exc) or type(exc).__name__)


class Session:
    """One plugin served over one wire; the :class:`~benchbook.plugin.context.Channel` of its
    runs. ``tier`` 1 allows RPC during a run, tier 2 does not."""

    def __init__(self, plugin: Plugin | None, wire: Wire, isolation: Isolation | None, tier: int) -> None:
        self.plugin = plugin
        self.wire = wire
        self.isolation = isolation
        self.tier = tier
        self.active = False
        self.broken: PluginError | None = None
        self._rpc_lock = threading.Lock()

    # -- Channel -----------------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send an rpc_call and wait for its answer (see :mod:`benchbook.plugin.context`)."""
        what = params.get("tool") if method == "call_tool" else method
        if self.tier == 2:
            raise PluginRpcError(
                "rpc_unavailable",
                f"cannot call {what!r}: RPC is not available in tier 2 (one-shot), there is no second frame to read",
            )
        with self._rpc_lock:
            if not self.active:
                raise PluginRpcError("rpc_unavailable", f"cannot call {what!r}: the run has ended")
            if self.broken is not None:
                raise self.broken
            call_id = uuid.uuid4().hex
            try:
                self.wire.send({"type": "rpc_call", "call_id": call_id, "method": method, "params": params})
            except PluginError as exc:
                raise PluginRpcError(exc.kind, f"cannot send rpc_call {method!r}: {exc.message}") from None
            return self._answer(call_id, method)

    def _answer(self, call_id: str, method: str) -> dict[str, Any]:
        try:
            frame = self.wire.read_frame()
        except PluginError as exc:
            self.broken = exc
            raise
        if frame is None:
            self.broken = ProtocolError(f"input ended while waiting for the answer to rpc_call {method!r} ({call_id})")
            raise self.broken
        answered = frame.get("call_id")
        if frame["type"] == "rpc_result" and answered == call_id:
            result: dict[str, Any] = frame["result"]
            return result
        if frame["type"] == "error" and answered in (call_id, None):
            error = frame["error"]
            raise PluginRpcError(error["kind"], error["message"], error["retryable"])
        self.broken = ProtocolError(
            f"expected the answer to rpc_call {method!r} ({call_id}), got a {frame['type']!r} frame"
            + (f" for call_id {answered!r}" if answered else "")
        )
        raise self.broken

    def log(self, message: str, stream: str) -> None:
        """A ``log`` frame during a run, a line on standard error otherwise."""
        if self.active:
            self.wire.send({"type": "log", "message": message, "stream": stream})
        else:
            sys.stderr.write(message + "\n")

    # -- frames --------------------------------------------------------------------------
    def send_answer(self, frame: dict[str, Any]) -> None:
        """Send the frame that ends a turn; one that cannot be sent becomes an error frame."""
        try:
            self.wire.send(frame)
        except PluginError as exc:
            self.wire.send(error_frame(exc))

    def handle(self, frame: dict[str, Any]) -> None:
        """Answer one top-level host frame (describe, run, or an out-of-turn one)."""
        if self.plugin is None:
            raise AssertionError("handle() needs a plugin")
        if frame["type"] == "describe":
            self.send_answer(self.plugin.describe())
        elif frame["type"] == "run":
            self.send_answer(self.run(frame))
        else:
            self.send_answer(error_frame(ProtocolError(f"unexpected {frame['type']!r} frame: no rpc_call is waiting")))

    def run(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Run the run function for one ``run`` frame; returns the ``result`` or ``error`` frame."""
        scratch = default_scratch()
        ctx = Context(self, scratch=scratch, capabilities=frame.get("capabilities", ()), tier=self.tier)
        self.broken = None
        self.active = True
        try:
            if self.isolation is None:
                answer = self._execute(frame, ctx)
            else:
                with self.isolation.relay.relaying(self._relay_line, self.isolation.stdout):
                    answer = self._execute(frame, ctx)
        finally:
            with self._rpc_lock:
                self.active = False
        if self.broken is not None:
            return error_frame(self.broken)
        return answer

    def _relay_line(self, line: str) -> None:
        self.wire.send({"type": "log", "message": clip_message(line), "stream": "stdout"})

    def _execute(self, frame: dict[str, Any], ctx: Context) -> dict[str, Any]:
        assert self.plugin is not None
        plugin = self.plugin
        try:
            return answer_run(plugin, ctx, frame["inputs"], frame["config"], ctx.scratch)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 (any failure of plugin code ends the run)
            return error_frame(_plugin_failure(exc))

    def next_frame(self) -> dict[str, Any] | None:
        """The next top-level frame; a bad one is answered with an error frame and skipped."""
        while True:
            try:
                return self.wire.read_frame()
            except PluginError as exc:
                self.send_answer(error_frame(exc))


def _wire_of(isolation: Isolation) -> Wire:
    return Wire(isolation.frames_in, isolation.frames_out_fd)


def serve(plugin: Plugin, mode: str | None = None) -> int:
    """Serve ``plugin`` on the isolated standard input/output (isolating first if needed):
    tier 1 loop when ``mode`` is None, tier 2 one-shot for ``describe``/``run``. Returns the
    exit status described in the module docstring; 1 when the host closed the pipe."""
    isolation = isolate()
    session = Session(plugin, _wire_of(isolation), isolation, tier=1 if mode is None else 2)
    try:
        if mode is None:
            while (frame := session.next_frame()) is not None:
                session.handle(frame)
            return 0
        try:
            frame = session.wire.read_frame()
        except PluginError as exc:
            session.send_answer(error_frame(exc))
            return 1
        if frame is None or frame["type"] != mode:
            got = "end of input" if frame is None else f"a {frame['type']!r} frame"
            session.send_answer(error_frame(ProtocolError(f"mode {mode!r} reads one {mode!r} frame, got {got}")))
            return 1
        session.handle(frame)
        return 0
    except BrokenPipeError:
        sys.stderr.write("benchbook.plugin: the host closed the pipe\n")
        return 1


def serve_failure(error: PluginError, mode: str | None = None) -> int:
    """Answer every frame (tier 1: until end of input; tier 2: the one frame) with an error
    frame for ``error`` — used when the plugin file could not be loaded. Returns 1."""
    isolation = isolate()
    session = Session(None, _wire_of(isolation), isolation, tier=1 if mode is None else 2)
    try:
        while session.next_frame() is not None:
            session.send_answer(error_frame(error))
            if mode is not None:
                break
    except BrokenPipeError:
        pass
    return 1
