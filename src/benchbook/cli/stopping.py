"""How ``benchbook serve`` runs uvicorn and stops within a grace period (issue 33 item 2).

uvicorn alone waits for every request in flight before it stops, however long that takes
("Waiting for background tasks to complete"), and a request whose handler thread is busy keeps
the process alive after that too. :class:`StoppingServer` changes the stop:

1. as the shutdown begins, every request in flight, and every one that starts afterwards, is
   abandoned (:data:`benchbook.http.abandonment.INFLIGHT`): domain loops stop at their next
   :func:`benchbook.domain.abandon.check` with a 503 and roll their transaction back;
2. uvicorn waits at most the grace period (``--shutdown-grace``, :data:`DEFAULT_GRACE`
   seconds; uvicorn's ``timeout_graceful_shutdown``) for the requests to finish, then cancels
   them and shuts the app down (lifespan: the run worker stops);
3. should a request's thread still be busy then (code that never checks), the process exits
   at once with status 1 instead of waiting for it: what it was writing is rolled back as after
   a crash (one transaction per write).

The server also keeps secrets out of its access log (:class:`benchbook.http.redaction.QuerySecretsFilter`).
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.supervisors import ChangeReload

from benchbook.http.abandonment import INFLIGHT

DEFAULT_GRACE = 10.0
"""Seconds ``benchbook serve`` waits for requests in flight once it begins to stop."""
STARTUP_FAILURE = 3
"""The exit status when the server could not start (uvicorn's own)."""
STUCK_EXIT_STATUS = 1
"""The exit status when a request's thread was still busy after the grace period."""

log = logging.getLogger("uvicorn.error")


class StoppingServer(uvicorn.Server):
    """uvicorn's server with the stop of the module docstring."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve (the access log first gets its secrets filter: in a ``--reload`` child too)."""
        from benchbook.http.redaction import QuerySecretsFilter

        QuerySecretsFilter.install(logging.getLogger("uvicorn.access"))
        await super().serve(sockets=sockets)

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve until stopped; then, if a request had to be cancelled (its thread may still be
        busy, and Python would wait for it before exiting), exit the process at once (a stop
        that did not reach :meth:`shutdown`'s end)."""
        try:
            super().run(sockets=sockets)
        finally:
            if INFLIGHT.cancelled:
                self._exit_now(INFLIGHT.cancelled)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Abandon what is in flight, let uvicorn wait for it (at most the grace period, then it
        cancels) and shut the app down; exit now if a request had to be cancelled or still runs
        (its thread may be busy: Python would wait for it before exiting)."""
        told = INFLIGHT.abandon_all()
        if told:
            log.info("Stopping: %d request(s) in flight told to stop", told)
        await super().shutdown(sockets=sockets)
        stuck = sum(not task.done() for task in self.server_state.tasks)
        if stuck or INFLIGHT.cancelled:
            self._exit_now(stuck + INFLIGHT.cancelled)

    def _exit_now(self, busy: int) -> None:
        log.error("%d request(s) still running after the %s s grace period (code that does not stop when asked); "
                  "exiting without waiting for them", busy, self.config.timeout_graceful_shutdown)
        for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access", "benchbook"):
            for handler in logging.getLogger(name).handlers:
                handler.flush()
        os._exit(STUCK_EXIT_STATUS)


def run(app: Any, *, reload_dirs: list[str] | None = None, **options: Any) -> None:
    """Run ``app`` (an ASGI app, or with ``reload_dirs`` an app factory's import string) with
    uvicorn ``options`` (``host``, ``port``, ``log_level``, ``timeout_graceful_shutdown``, the
    HTTP protocol's) on a :class:`StoppingServer`; with ``reload_dirs``, restart it when code
    there changes (uvicorn's reloader, the server in a child process). Returns once stopped;
    exits with :data:`STARTUP_FAILURE` when the server could not start."""
    if reload_dirs is not None:
        config = uvicorn.Config(app, factory=True, reload=True, reload_dirs=reload_dirs, **options)
        server = StoppingServer(config)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C: stopped (as uvicorn.run does)
            ChangeReload(config, target=server.run, sockets=[config.bind_socket()]).run()
        return
    server = StoppingServer(uvicorn.Config(app, **options))
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)
