"""Host-only security and request ids (spec *Authentication* 2–5, *Errors* 3).

A pure ASGI middleware, outermost, so every response (errors included) carries an
``x-request-id`` header:

- ``Host`` must name this computer (``localhost``, ``127.0.0.1`` or ``[::1]``, any port)
  unless the server runs with ``--allow-remote``: protection against DNS rebinding → 403.
- A state-changing request (POST, PUT, PATCH, DELETE) whose ``Origin`` (or, without one,
  ``Referer``) is another site → 403: protection against cross-site request forgery.
- ``Host``, ``Origin`` or ``Referer`` given more than once → 400: which one counts would
  otherwise depend on who reads them (a second ``Origin`` must not hide a foreign first one).
"""
from __future__ import annotations

import json
import uuid
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SINGLE = ("host", "origin", "referer")


def host_name(host: str) -> str:
    """``Host`` header value without the port, lower-cased (``[::1]:80`` → ``[::1]``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class GuardMiddleware:
    """Refuse foreign ``Host``/``Origin`` with 403 ``{detail}``; stamp ``x-request-id``.

    The request id is put in ``scope["state"]["request_id"]`` for handlers and the 500 envelope.
    """

    def __init__(self, app: ASGIApp, allow_remote: bool = False) -> None:
        self.app = app
        self.allow_remote = allow_remote

    def refusal(self, scope: Scope) -> str | None:
        """Why this request is refused (403), or None to let it through."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if not self.allow_remote and host_name(host) not in LOCAL_NAMES:
            return (f"Host {host!r} is not this computer: the server only answers requests addressed to "
                    "localhost, 127.0.0.1 or [::1] (start it with --allow-remote to change that)")
        if scope.get("method", "GET").upper() in UNSAFE:
            source = headers.get("origin") or headers.get("referer")
            if source is not None:
                parts = urlsplit(source)
                origin_host = (parts.hostname or "").lower()
                if source == "null" or not origin_host:
                    return "cross-site request refused: Origin is opaque"
                same_host = parts.netloc.lower() == host.lower()
                local = host_name(parts.netloc) in LOCAL_NAMES and host_name(host) in LOCAL_NAMES
                if not (same_host or local):
                    return f"cross-site request refused: Origin {source!r} is another site"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        header = (b"x-request-id", request_id.encode())

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        status, reason = 400, repeated_header(scope)
        if reason is None:
            status, reason = 403, self.refusal(scope)
        if reason is None:
            await self.app(scope, receive, stamped)
            return
        body = json.dumps({"detail": reason}).encode()
        await stamped({"type": "http.response.start", "status": status,
                       "headers": [(b"content-type", b"application/json"),
                                   (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def repeated_header(scope: Scope) -> str | None:
    """Why the request is malformed (400) when it gives ``Host``, ``Origin`` or ``Referer`` more
    than once (RFC 9110 allows one ``Host``; the browser sends one ``Origin``), else None."""
    seen: dict[str, int] = {}
    for key, _ in scope.get("headers", []):
        name = key.decode("latin-1").lower()
        if name in SINGLE:
            seen[name] = seen.get(name, 0) + 1
    repeated = [name for name in SINGLE if seen.get(name, 0) > 1]
    if repeated:
        return (f"the request gives the {', '.join(h.title() for h in repeated)} header more than once; "
                "send each at most once")
    return None


class RootPathsMiddleware:
    """Serve the API's own ``/api/openapi.json`` at ``/openapi.json`` and its Swagger UI
    (``/api/ui/``) at ``/docs/`` (``/docs`` redirects there), as the spec asks."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path == "/docs":
                await send({"type": "http.response.start", "status": 307,
                            "headers": [(b"location", b"/docs/"), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            mapped: dict[str, Any] = {}
            if path == "/openapi.json":
                mapped["path"] = "/api/openapi.json"
            elif path.startswith("/docs/"):
                mapped["path"] = "/api/ui/" + path[len("/docs/"):]
            if mapped:
                scope = {**scope, **mapped, "raw_path": mapped["path"].encode()}
        await self.app(scope, receive, send)
