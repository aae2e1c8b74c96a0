"""A device's upload to the authority is refused before its body is read when its token is not
one the authority knows (docs/sync.md *Files*).

``PUT /api/sync/files/{sha256}`` may be as large as ``[limits] upload_bytes``, and request
validation streams a multipart body to disk before any handler runs; without this guard anyone
who can reach a sync-only server could make it write gigabytes it then throws away. Every other
sync call carries a small body and is checked by its handler.

``/api/sync/files/missing`` is also a ``{sha256}`` by its shape, so a ``GET`` or ``PUT`` of it would
be routed to the file routes and refused as a bad sha256 (422); it is answered 405 with
``Allow: POST`` here instead, as any undeclared method of a documented path is.
"""
from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.responses import JSONResponse

from benchbook.domain.errors import Unauthorized
from benchbook.domain.sync import devices
from benchbook.http.envelope import error_body, status_of
from benchbook.http.request_limits import SYNC_UPLOAD_PATH
from benchbook.services import Services


class DeviceUploadGuard:
    """ASGI middleware: a ``PUT`` to :data:`~benchbook.http.request_limits.SYNC_UPLOAD_PATH` whose
    ``Authorization: Bearer`` token is missing, unknown or revoked is answered 401 ``{detail}``
    at once when its body is a multipart form (one of another type is refused with 415 by
    request validation, unread); any method but ``POST`` of ``/api/sync/files/missing`` is 405;
    everything else passes untouched."""

    MISSING = "/api/sync/files/missing"

    def __init__(self, app: Any, services: Services) -> None:
        self.app = app
        self.services = services

    def _device(self, authorization: str | None) -> str:
        with self.services.db.session() as session:
            return devices.verify(session, authorization)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path", "").rstrip("/") == self.MISSING \
                and scope.get("method") != "POST":
            await JSONResponse(error_body("Method Not Allowed"), status_code=405,
                               headers={"Allow": "POST"})(scope, receive, send)
            return
        if (scope["type"] == "http" and scope.get("method") == "PUT" and SYNC_UPLOAD_PATH.fullmatch(scope.get("path", ""))
                and Headers(scope=scope).get("content-type", "").startswith("multipart/")):  # else 415, unread
            try:
                await run_in_threadpool(self._device, Headers(scope=scope).get("authorization"))
            except Unauthorized as exc:
                await JSONResponse(exc.body(), status_code=status_of(exc))(scope, receive, send)
                return
        await self.app(scope, receive, send)
