"""Builds the ASGI application: the API under ``/api`` routed from ``openapi.yaml`` by
Connexion, ``/openapi.json`` and ``/docs`` at the root, the web app at ``/``.

Errors are mapped to the spec's envelopes here and only here (spec *Errors*):
domain errors → ``{detail}`` with their status; request validation → 422
``{detail: "Request validation failed", errors: [...]}``; anything unexpected → 500
``{detail: "Internal server error", request_id}``.
"""
from __future__ import annotations

import copy
import json
import logging
import os
import re
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

# connexion 3.3 imports starlette.testclient, which warns about httpx on import: noise for users
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
import connexion
import yaml
from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import MiddlewarePosition
from connexion.resolver import RelativeResolver
from starlette.exceptions import HTTPException

from benchbook import __version__
from benchbook.config import Project
from benchbook.domain.errors import BenchbookError
from benchbook.domain.history import storage as history_storage
from benchbook.persistence.db import open_database
from benchbook.security import GuardMiddleware, RootPathsMiddleware
from benchbook.services import Services
from benchbook.validation import VALIDATOR_MAP, RequestInvalid
from benchbook.web import routes as web_routes

log = logging.getLogger("benchbook")


def load_document() -> dict[str, Any]:
    """The OpenAPI document shipped with the package, parsed."""
    text = (resources.files("benchbook") / "openapi.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)  # type: ignore[no-any-return]


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> ConnexionResponse:
    return ConnexionResponse(status_code=status, body=json.dumps(body), mimetype="application/json",
                             content_type="application/json", headers=headers or {})


def _request_id(request: ConnexionRequest) -> str:
    return str(request.scope.get("state", {}).get("request_id", ""))


def _domain_error(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    assert isinstance(exc, BenchbookError)
    return _json(exc.status, exc.body())


def _problem(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    assert isinstance(exc, ProblemException)
    if isinstance(exc, RequestInvalid):
        return _json(422, {"detail": "Request validation failed", "errors": exc.errors})
    if exc.status == 400:
        entry: dict[str, Any] = {"loc": ["request"], "msg": str(exc.detail), "type": "value_error", "input": None,
                                 "ctx": {}}
        return _json(422, {"detail": "Request validation failed", "errors": [entry]})
    if exc.status >= 500:
        return _internal(request, exc)
    return _json(exc.status, {"detail": str(exc.detail or exc.title)}, dict(exc.headers or {}))


def allowed_methods(document: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
    """For each documented path, a regex of its URL and the methods it allows (``Allow`` value),
    literal paths before templated ones so ``/collections/deleted`` wins over ``/collections/{x}``."""
    out: list[tuple[int, re.Pattern[str], str]] = []
    for path, item in document["paths"].items():
        methods = sorted(m.upper() for m in item if m in ("get", "post", "put", "patch", "delete"))
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape("/api" + path))
        out.append((path.count("{"), re.compile(f"^{pattern}$"), ", ".join(methods)))
    return [(rx, allow) for _, rx, allow in sorted(out, key=lambda row: row[0])]  # literal paths first


def _http_error(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # Starlette lists one route's methods; the document knows them all
        path = request.scope["path"]
        if not path.startswith("/api/"):
            path = request.scope.get("root_path", "") + path
        services = request.scope.get("state", {}).get("services")
        match = next((allow for rx, allow in (services.allowed if services else []) if rx.match(path)), None)
        if match:
            headers["allow"] = match
    return _json(exc.status_code, {"detail": str(exc.detail)}, headers)


def _internal(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    rid = _request_id(request)
    log.error("request %s failed", rid, exc_info=exc)
    return _json(500, {"detail": "Internal server error", "request_id": rid})


def _unreadable(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    entry: dict[str, Any] = {"loc": ["body"], "msg": f"the request body cannot be read: {exc}", "type": "body_decoding",
             "input": None, "ctx": {}}
    return _json(422, {"detail": "Request validation failed", "errors": [entry]})


def create_app(project: Project, *, allow_remote: bool = False, sync_only: bool = False,
               resume_history: bool = False) -> connexion.AsyncApp:
    """The whole service for ``project`` (database opened and upgraded now).

    ``allow_remote`` lets requests with a non-local ``Host`` through (spec ``--allow-remote``);
    ``sync_only`` serves only the health route until sync exists; ``resume_history`` (the
    server, not a one-off CLI command) continues a history conversion a restart cut off.
    """
    services = Services(project=project, db=open_database(project.database_url), sync_only=sync_only)
    document = load_document()
    services.allowed = allowed_methods(document)
    if sync_only:
        document = copy.deepcopy(document)
        document["paths"] = {p: v for p, v in document["paths"].items() if p == "/health"}
    app = connexion.AsyncApp(__name__)
    app.add_api(document, resolver=RelativeResolver("benchbook.handlers"), strict_validation=True,
                validate_responses=os.environ.get("BENCHBOOK_VALIDATE_RESPONSES") == "1",
                validator_map=VALIDATOR_MAP)
    if not sync_only:
        web_routes.register(app)
    app.add_error_handler(BenchbookError, _domain_error)
    app.add_error_handler(ProblemException, _problem)
    app.add_error_handler(HTTPException, _http_error)
    app.add_error_handler(UnicodeDecodeError, _unreadable)
    app.add_error_handler(Exception, _internal)
    app.add_middleware(RootPathsMiddleware, position=MiddlewarePosition.BEFORE_EXCEPTION)
    app.add_middleware(GuardMiddleware, position=MiddlewarePosition.BEFORE_EXCEPTION, allow_remote=allow_remote)
    app.add_middleware(_ServicesMiddleware, position=MiddlewarePosition.BEFORE_EXCEPTION, services=services)
    app.services = services
    if resume_history and not sync_only:
        history_storage.resume(services.db.engine)
    return app


class _ServicesMiddleware:
    """Puts the app's :class:`Services` in ``scope["state"]["services"]`` for handlers."""

    def __init__(self, app: Any, services: Services) -> None:
        self.app = app
        self.services = services

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            scope.setdefault("state", {})["services"] = self.services
        await self.app(scope, receive, send)


def app_from_env() -> connexion.AsyncApp:
    """App factory for ``uvicorn --factory`` (used by ``benchbook serve --reload``): reads
    ``BENCHBOOK_PROJECT``, ``BENCHBOOK_ALLOW_REMOTE`` and ``BENCHBOOK_SYNC_ONLY`` (``"1"`` = on)."""
    project = Project.locate(os.environ.get("BENCHBOOK_PROJECT") or None)
    return create_app(project, allow_remote=os.environ.get("BENCHBOOK_ALLOW_REMOTE") == "1",
                      sync_only=os.environ.get("BENCHBOOK_SYNC_ONLY") == "1", resume_history=True)


__all__ = ["Path", "Services", "__version__", "app_from_env", "create_app"]
