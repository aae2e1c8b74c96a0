"""A request's progress, readable by another request (issue 36 item 4; ``docs/limits.md``
*Progress of a request*).

A request carrying the header ``X-Progress-Key: KEY`` (:data:`benchbook.domain.progress.KEY_PATTERN`)
has what its domain reports (:func:`benchbook.domain.progress.reporting`: deleting records,
restoring, describing plugins, converting the history) kept under ``KEY`` on the app's
:class:`~benchbook.domain.progress.ProgressBoard` while it runs and for a while after, and
``GET /api/progress/{key}`` answers it. This is how a command sent over ``--url`` draws its bar:
it picks a random key, sends it with the request and reads the key while waiting.

Refused, in the error envelope (OpenAPI ``ErrorResponse``): a key that does not match the pattern
(422, as every malformed parameter) and a key whose request is still being handled (409).
"""
from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from benchbook.domain.errors import error_entry
from benchbook.domain.progress import KEY_PATTERN, KeyInUse, ProgressBoard, reported_to
from benchbook.http.envelope import send_error, status_of

HEADER = b"x-progress-key"
"""The request header naming a progress key (lower case, as ASGI gives header names)."""
_KEY = re.compile(KEY_PATTERN)
_LOC: list[str | int] = ["header", "X-Progress-Key"]


class ProgressMiddleware:
    """Keeps the progress of each request carrying :data:`HEADER` on ``board`` (module docstring)."""

    def __init__(self, app: ASGIApp, board: ProgressBoard) -> None:
        self.app = app
        self.board = board

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = None
        if scope["type"] == "http":
            key = next((v for k, v in scope.get("headers", []) if k.lower() == HEADER), None)
        if key is None:
            await self.app(scope, receive, send)
            return
        text = key.decode("latin-1")
        if not _KEY.fullmatch(text):
            await send_error(send, 422, "X-Progress-Key must be 8 to 64 letters, digits, '_' or '-'",
                             errors=[error_entry(_LOC, "must be 8 to 64 letters, digits, '_' or '-'", "pattern")])
            return
        try:
            report = self.board.start(text)
        except KeyInUse as exc:
            await send_error(send, status_of(exc), f"a request with progress key {text} is still being handled: pick another key",
                             errors=[error_entry(_LOC, "in use by a request still being handled", "conflict")])
            return
        try:
            with reported_to(report):
                await self.app(scope, receive, send)
        finally:
            self.board.end(text)
