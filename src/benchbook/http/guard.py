"""Host-only security and request ids (docs/decisions.md *Local only*; OpenAPI
``InternalErrorResponse``).

A pure ASGI middleware, outermost, so every response (errors included) carries an
``x-request-id`` header:

- ``Host`` must name this computer (``localhost``, ``127.0.0.1`` or ``[::1]``, any port)
  unless the server runs with ``--allow-remote``: protection against DNS rebinding → 403.
- A state-changing request (POST, PUT, PATCH, DELETE) whose ``Origin`` (or, without one,
  ``Referer``) is another site → 403: protection against cross-site request forgery.
- So is a request of an operation the OpenAPI document marks ``x-benchbook-outbound: true``
  (the server reaches out to another address: ``GET /ai/local/models``, the model router's),
  whatever its method, and also one a browser says came from another site (``Sec-Fetch-Site:
  cross-site``) while hiding its ``Origin`` and ``Referer`` (``<img referrerpolicy=no-referrer>``):
  a page elsewhere must not make the server send requests (issue 33 item 10). An operation
  marked ``x-benchbook-return-from: model-router`` (the login's callback) accepts the model
  router's own site, which sends the browser there.
- ``Host``, ``Origin`` or ``Referer`` given more than once → 400: which one counts would
  otherwise depend on who reads them (a second ``Origin`` must not hide a foreign first one).
"""
from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from benchbook.http.envelope import send_error

LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SINGLE = ("host", "origin", "referer")


@dataclass(frozen=True)
class Outbound:
    """An operation the document marks ``x-benchbook-outbound: true``: its ``methods`` (``HEAD``
    too for a ``GET``), its URL ``path`` as a regex under ``/api``, and the site that may send a
    browser to it (``return_from``: ``model-router``, or None)."""

    methods: frozenset[str]
    path: re.Pattern[str]
    return_from: str | None = None


def outbound_operations(document: dict[str, Any]) -> list[Outbound]:
    """The operations of the OpenAPI ``document`` marked ``x-benchbook-outbound: true``."""
    found = []
    for path, item in document.get("paths", {}).items():
        for method, op in item.items():
            if isinstance(op, dict) and op.get("x-benchbook-outbound") is True:
                methods = {method.upper()} | ({"HEAD"} if method.lower() == "get" else set())
                pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape("/api" + path))
                found.append(Outbound(frozenset(methods), re.compile(f"^{pattern}/?$"),
                                      op.get("x-benchbook-return-from")))
    return found


def _site(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def _returns_from(name: str | None, source: str) -> bool:
    """Whether ``source`` (an ``Origin`` or ``Referer``) is the site named ``name``."""
    if name != "model-router":
        return False
    from benchbook.domain.ai.config import router_url  # read now: the environment names it

    return _site(source) == _site(router_url())


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

    def __init__(self, app: ASGIApp, allow_remote: bool = False, outbound: Iterable[Outbound] = ()) -> None:
        self.app = app
        self.allow_remote = allow_remote
        self.outbound = list(outbound)

    def _outbound(self, method: str, path: str) -> Outbound | None:
        return next((o for o in self.outbound if method in o.methods and o.path.match(path)), None)

    def refusal(self, scope: Scope) -> str | None:
        """Why this request is refused (403), or None to let it through."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if not self.allow_remote and host_name(host) not in LOCAL_NAMES:
            return (f"Host {host!r} is not this computer: the server only answers requests addressed to "
                    "localhost, 127.0.0.1 or [::1] (start it with --allow-remote to change that)")
        method = scope.get("method", "GET").upper()
        outbound = self._outbound(method, scope.get("path", ""))
        if method not in UNSAFE and outbound is None:
            return None
        why = ("; this operation makes the server send a request elsewhere (x-benchbook-outbound)"
               if outbound is not None else "")
        source = headers.get("origin") or headers.get("referer")
        if source is None:
            hidden = headers.get("sec-fetch-site", "").strip().lower() == "cross-site"
            if outbound is not None and outbound.return_from is None and hidden:
                return "cross-site request refused: a browser sent it from another site (Sec-Fetch-Site)" + why
            return None
        parts = urlsplit(source)
        origin_host = (parts.hostname or "").lower()
        if source == "null" or not origin_host:
            return "cross-site request refused: Origin is opaque" + why
        same_host = parts.netloc.lower() == host.lower()
        local = host_name(parts.netloc) in LOCAL_NAMES and host_name(host) in LOCAL_NAMES
        if not (same_host or local or (outbound is not None and _returns_from(outbound.return_from, source))):
            return f"cross-site request refused: Origin {source!r} is another site" + why
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
        await send_error(stamped, status, reason)


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
