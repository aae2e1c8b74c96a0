"""The HTTP side of the input limits (:mod:`benchbook.settings.limits`, ``docs/limits.md``): a pure ASGI
middleware that refuses, in the ``{detail}`` error envelope (OpenAPI
``ErrorResponse``),

- a request target (path and query string) longer than ``url_bytes`` → 414;
- request headers larger than ``header_bytes`` together → 431;
- a body larger than ``body_bytes`` (``upload_bytes`` for ``POST /api/files``, ``import_bytes`` and
  :data:`FORM_ALLOWANCE` for ``POST /api/collections/{name}/import``) → 413, at once when
  ``Content-Length`` says so, else as soon as the bytes received pass the limit: the body is never
  read whole first, and the request's handler never runs (an upload leaves nothing on disk).

It also makes the project's limits :func:`benchbook.settings.limits.current` for the request. It sits inside
:class:`benchbook.http.guard.GuardMiddleware` (the ``x-request-id`` header and the Host check come
first) and outside Connexion's validation, which reads the body through it.
"""
from __future__ import annotations

import logging
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchbook.domain.errors import BenchbookError
from benchbook.http.envelope import send_error, status_of
from benchbook.settings.limits import Limits, use

log = logging.getLogger("benchbook")

#: The upload route (``POST``), whose body may be as large as ``upload_bytes``.
UPLOAD_PATHS = frozenset({"/api/files", "/api/files/"})
#: A device's upload of a file's content to the authority (``PUT``; docs/sync.md *Files*), as
#: large as ``upload_bytes`` like ``POST /files``.
SYNC_UPLOAD_PATH = re.compile(r"/api/sync/files/[^/]+/?")
#: The import route (``POST``), whose body is a file as large as ``import_bytes`` and a form.
IMPORT_PATH = re.compile(r"/api/collections/[^/]+/import/?")
FORM_ALLOWANCE = 64 * 1024
"""Bytes an import's body may hold beyond its file: the multipart boundaries and the form's
other fields (schema, key, options); the file itself is held to ``import_bytes`` exactly, with a
422 naming it (``readers.check_size``)."""


class BodyTooLarge(BenchbookError):
    """A request body passed its limit (kind ``too_large``: 413). Raised from the ``receive``
    channel while the body streams in, so whoever is reading it (Connexion's validation, a
    handler) stops there; the app maps it to the ``{detail}`` envelope like every domain error."""

    kind = "too_large"


def body_limit(scope: Scope, limits: Limits) -> tuple[int, str]:
    """``(bytes, setting name)``: how large this request's body may be."""
    if scope.get("method", "GET").upper() == "PUT" and SYNC_UPLOAD_PATH.fullmatch(scope.get("path", "")):
        return limits.upload_bytes, "upload_bytes"
    if scope.get("method", "GET").upper() == "POST":
        path = scope.get("path", "")
        if path in UPLOAD_PATHS:
            return limits.upload_bytes, "upload_bytes"
        if IMPORT_PATH.fullmatch(path):
            return limits.import_bytes + FORM_ALLOWANCE, "import_bytes"
    return limits.body_bytes, "body_bytes"


def too_large(limit: int, setting: str) -> str:
    """The message of a 413."""
    what = {"upload_bytes": "an upload", "import_bytes": "an imported file and its form"}.get(setting, "a request body")
    return (f"the request body is larger than {limit} bytes, the most this server accepts for {what} "
            f"([limits] {setting} in benchbook.toml)")


class LimitsMiddleware:
    """Refuse oversized request targets, headers and bodies (module docstring); run the rest of the
    app with ``limits`` as the current ones."""

    def __init__(self, app: ASGIApp, limits: Limits) -> None:
        self.app = app
        self.limits = limits

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, detail)`` when the request line or headers alone are refused, else None."""
        target = len(scope.get("raw_path") or scope.get("path", "").encode()) + len(scope.get("query_string", b""))
        if target > self.limits.url_bytes:
            return 414, (f"the request target (path and query string) is {target} bytes long; at most "
                         f"{self.limits.url_bytes} are accepted ([limits] url_bytes). Send a long filter "
                         "in a request body where the operation takes one, or narrow it")
        headers = scope.get("headers", [])
        size = sum(len(k) + len(v) + 4 for k, v in headers)
        if size > self.limits.header_bytes:
            return 431, (f"the request headers are {size} bytes together; at most {self.limits.header_bytes} "
                         "are accepted ([limits] header_bytes)")
        limit, setting = body_limit(scope, self.limits)
        for key, value in headers:
            if key.lower() == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    return 400, f"Content-Length {value.decode('latin-1')!r} is not a number of bytes"
                if declared > limit:
                    return 413, too_large(limit, setting)
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is not None:
            status, detail = refused  # a refused 413's body is not read: the connection closes
            await send_error(send, status, detail, [(b"connection", b"close")] if status == 413 else [])
            return
        limit, setting = body_limit(scope, self.limits)
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(too_large(limit, setting))
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        with use(self.limits):
            try:
                await self.app(scope, counted, watched)
            except BodyTooLarge as exc:  # read outside Connexion's error handling (or after it)
                if started:
                    log.warning("request body over its limit after the response started: %s", exc.detail)
                    return
                # the rest of the body is not read
                await send_error(send, status_of(exc), exc.detail, [(b"connection", b"close")])
