"""The HTTP edge of :mod:`benchbook.domain.abandon`: each request's "requester has gone" signal.

:class:`AbandonMiddleware` (pure ASGI) gives every HTTP request a :class:`threading.Event`, made
current with :func:`benchbook.domain.abandon.watching` for the whole request (the context is
copied into the thread that runs a plain ``def`` handler), and sets it

- when the client disconnects before the answer is complete: once the app has read the whole
  body (or at once for a request without one), the middleware itself waits on ``receive()``
  for ``http.disconnect`` and hands the app, should it ask, the same messages (no body message
  is ever taken from the app);
- when the server begins to stop: :meth:`Inflight.abandon_all` (called by ``benchbook serve``
  as uvicorn starts its shutdown, ``cli/stopping.py``) sets the event of every request in
  flight and of every request that starts afterwards.

A request the server cancels while stopping (its grace period over) is answered 503 ``{detail}``
if nothing was sent yet, and counted in :attr:`Inflight.cancelled`: its handler's thread may
still be busy, which ``cli/stopping.py`` does not wait for.

Domain loops call :func:`benchbook.domain.abandon.check`, which raises ``Abandoned`` (503); the
write they were in rolls back (issue 33 item 2).
"""
from __future__ import annotations

import asyncio
import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchbook.domain import abandon
from benchbook.http.envelope import error_bytes


class Inflight:
    """The abandon events of the requests in flight (thread-safe). Once :meth:`abandon_all` ran,
    every event added is set at once: the server is stopping."""

    def __init__(self) -> None:
        self._events: set[threading.Event] = set()
        self._lock = threading.Lock()
        self.stopping = False
        self.cancelled = 0
        """Requests cancelled while the server stopped (their threads may still be busy)."""

    def add(self, event: threading.Event) -> None:
        """Track ``event`` (set now if the server is already stopping)."""
        with self._lock:
            if self.stopping:
                event.set()
            self._events.add(event)

    def discard(self, event: threading.Event) -> None:
        """Stop tracking ``event`` (its request is over)."""
        with self._lock:
            self._events.discard(event)

    def abandon_all(self) -> int:
        """Set the event of every request in flight, and of every later one; returns how many
        were in flight."""
        with self._lock:
            self.stopping = True
            for event in self._events:
                event.set()
            return len(self._events)

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


STOPPED = error_bytes("the server stopped before the request finished: its grace period for requests in "
                      "flight was over")

INFLIGHT = Inflight()
"""The process's requests in flight: one server per process, so the one ``benchbook serve``
abandons when it stops (an app made with another :class:`Inflight` is not touched)."""


def _bodiless(scope: Scope) -> bool:
    """Whether the request announces no body (no ``Transfer-Encoding``, no or a zero
    ``Content-Length``): its one ``http.request`` message is then read at once."""
    length = b""
    for key, value in scope.get("headers", []):
        name = key.lower()
        if name == b"transfer-encoding":
            return False
        if name == b"content-length":
            length = value.strip()
    return length in (b"", b"0")


class _Watch:
    """One request's ``receive``: passed through until the body has been read; from then on a
    task of its own waits for the next message (``http.disconnect``), sets ``event`` unless the
    answer was complete by then, and hands what it read to the app when the app asks."""

    def __init__(self, receive: Receive, event: threading.Event, *, bodiless: bool) -> None:
        self._receive = receive
        self.event = event
        self.answered = False
        self._read: asyncio.Queue[Message] = asyncio.Queue()
        self._gone: Message | None = None
        self._listener: asyncio.Task[None] | None = None
        if bodiless:
            self._listen()

    def _listen(self) -> None:
        self._listener = asyncio.get_running_loop().create_task(self._wait_for_disconnect())

    async def _wait_for_disconnect(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._disconnected(message)
                return
            self._read.put_nowait(message)

    def _disconnected(self, message: Message) -> None:
        if not self.answered:
            self.event.set()
        self._gone = message
        self._read.put_nowait(message)

    async def receive(self) -> Message:
        """What the app reads instead of the server's ``receive``."""
        if self._listener is None:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self._disconnected(message)
            elif message["type"] == "http.request" and not message.get("more_body", False):
                self._listen()
            return message
        if self._gone is not None and self._read.empty():
            return self._gone
        return await self._read.get()

    def close(self) -> None:
        """The request is over: stop waiting."""
        if self._listener is not None and not self._listener.done():
            self._listener.cancel()


class AbandonMiddleware:
    """Watch each HTTP request for its client leaving and the server stopping (module
    docstring); ``inflight`` is where its events are tracked (:data:`INFLIGHT`)."""

    def __init__(self, app: ASGIApp, inflight: Inflight = INFLIGHT) -> None:
        self.app = app
        self.inflight = inflight

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        event = threading.Event()
        watch = _Watch(receive, event, bodiless=_bodiless(scope))

        started = False

        async def answering(message: Message) -> None:
            nonlocal started
            started = True
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                watch.answered = True
            await send(message)

        self.inflight.add(event)
        try:
            with abandon.watching(event):
                await self.app(scope, watch.receive, answering)
        except asyncio.CancelledError:
            if not self.inflight.stopping:
                raise
            # the server's grace period is over (uvicorn cancels what is left): answer, end the task
            self.inflight.cancelled += 1
            if not started:
                await send({"type": "http.response.start", "status": 503, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(STOPPED)).encode()),
                    (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": STOPPED})
        finally:
            watch.close()
            self.inflight.discard(event)
