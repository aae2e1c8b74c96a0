"""The served contract (docs/decisions.md *The served contract*: the API description at ``/openapi.json``
is the running server's and always matches it).

``/api/openapi.json`` (and ``/openapi.json``, which :class:`benchbook.http.root_paths.RootPathsMiddleware`
maps there) answers the very document the app was built from: the dict handed to Connexion's
``add_api``, which routes and validates every request with it. It is served as written, with its
``components`` and ``$ref``s, not the copy Connexion would serve with every reference inlined
(client generators make one model per inlined copy: openapi-python-client made 1,211 model
modules from the inlined form instead of one per component). Only ``servers`` is set, to where
this server answers the API: ``/api`` under the request's ``root_path``. ``/api/openapi.yaml``
answers the same document as YAML.

The document is serialised once per ``root_path`` (normally only ``""``) and kept.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import yaml
from starlette.types import ASGIApp, Receive, Scope, Send

from benchbook.http.envelope import error_bytes, error_headers

#: The API's prefix, with no version segment (OpenAPI ``servers``); ``servers[0].url`` is this under
#: the ``root_path``.
API_PREFIX = "/api"
JSON_PATH = f"{API_PREFIX}/openapi.json"
YAML_PATH = f"{API_PREFIX}/openapi.yaml"


def served_document(document: dict[str, Any], root_path: str = "") -> dict[str, Any]:
    """``document`` as served under ``root_path``: the same mapping (shallow copy, nothing inside
    changed) whose ``servers`` is the one entry ``{"url": root_path + "/api"}``."""
    return {**document, "servers": [{"url": root_path.rstrip("/") + API_PREFIX}]}


def _plain(value: Any) -> Any:
    """JSON for what YAML parses beyond JSON (an unquoted ``2024-01-01`` is a date)."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} in the OpenAPI document cannot be written as JSON")


class ContractMiddleware:
    """Answers ``GET``/``HEAD`` of ``/api/openapi.json`` (``application/json``) and
    ``/api/openapi.yaml`` (``text/yaml``) with :func:`served_document` of ``document``; any other
    method there is 405 ``{detail}`` with ``Allow: GET, HEAD``. Everything else goes on to ``app``.

    ``document`` must be the mapping the app was built from; it is read, never changed.
    """

    def __init__(self, app: ASGIApp, document: dict[str, Any]) -> None:
        self.app = app
        self.document = document
        self._bodies: dict[tuple[str, str], bytes] = {}

    def body(self, path: str, root_path: str) -> bytes:
        """The served bytes of ``path`` (:data:`JSON_PATH` or :data:`YAML_PATH`) under ``root_path``."""
        key = (path, root_path)
        if key not in self._bodies:
            served = served_document(self.document, root_path)
            if path == JSON_PATH:
                text = json.dumps(served, ensure_ascii=False, default=_plain)
            else:
                text = yaml.safe_dump(served, sort_keys=False, allow_unicode=True)
            self._bodies[key] = text.encode("utf-8")
        return self._bodies[key]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        root_path: str = scope.get("root_path", "")
        path: str = scope["path"]
        if root_path and path.startswith(root_path):  # ASGI servers may keep the root path in path
            path = path[len(root_path):]
        if path not in (JSON_PATH, YAML_PATH):
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET").upper()
        if method in ("GET", "HEAD"):
            status, body = 200, self.body(path, root_path)
            media = "application/json" if path == JSON_PATH else "text/yaml; charset=utf-8"
            headers = [(b"content-type", media.encode())]
        else:
            status, body = 405, error_bytes("Method Not Allowed")
            headers = error_headers(body, [(b"allow", b"GET, HEAD")])
        if status == 200:
            headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


__all__ = ["API_PREFIX", "ContractMiddleware", "served_document"]
