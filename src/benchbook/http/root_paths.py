"""The paths outside ``/api`` that hold the API's own pages: ``/openapi.json`` (the
document, served by :mod:`.document_served` at ``/api/openapi.json``) and ``/docs/`` (Connexion's
Swagger UI at ``/api/ui/``; ``/docs`` redirects there). Inside the guard (:mod:`.guard`), so
these answers carry ``x-request-id`` and refuse a foreign ``Host`` like every other one."""
from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send


class RootPathsMiddleware:
    """Serve the API's own ``/api/openapi.json`` at ``/openapi.json`` and its Swagger UI
    (``/api/ui/``) at ``/docs/`` (``/docs`` redirects there)."""

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
