"""Builds the ASGI application: the API under ``/api`` routed from ``openapi.yaml`` by
Connexion, ``/openapi.json`` and ``/docs`` at the root, the web app at ``/``.

Errors are mapped to the error envelopes here and only here (OpenAPI ``ErrorResponse``,
``ValidationErrorResponse``, ``InternalErrorResponse``):
domain errors → ``{detail}`` with their status; request validation → 422
``{detail: "Request validation failed", errors: [...]}``; anything unexpected → 500
``{detail: "Internal server error", request_id}``.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import sys
import traceback
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

# connexion 3.3 imports starlette.testclient, which warns about httpx on import: noise for users
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
import connexion
from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from connexion.middleware import MiddlewarePosition
from connexion.options import SwaggerUIOptions
from connexion.resolver import RelativeResolver
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException

from benchbook import __version__
from benchbook.domain.errors import BenchbookError
from benchbook.http import document as api_document
from benchbook.http import web_routes
from benchbook.http.abandonment import INFLIGHT, AbandonMiddleware
from benchbook.http.device_uploads import DeviceUploadGuard
from benchbook.http.document_served import ContractMiddleware
from benchbook.http.envelope import error_body, status_of
from benchbook.http.guard import GuardMiddleware, outbound_operations
from benchbook.http.pacing import PagingMiddleware
from benchbook.http.progress_keys import ProgressMiddleware
from benchbook.http.query_parser import QueryParser
from benchbook.http.redaction import Secrets, of_scope
from benchbook.http.request_limits import LimitsMiddleware
from benchbook.http.root_paths import RootPathsMiddleware
from benchbook.http.validation import VALIDATOR_MAP, RequestInvalid
from benchbook.persistence.db import BUSY_TIMEOUT_MS, DatabaseBusy, is_locked_error, open_database
from benchbook.services import Services
from benchbook.settings.config import Project
from benchbook.settings.limits import Limits, apply_to_document

log = logging.getLogger("benchbook")

#: The document's paths a ``--sync-only`` server serves: what syncing devices call (docs/sync.md);
#: never the admin's devices list, invites or revokes, nor anything else.
SYNC_PATHS = frozenset({"/health", "/sync/hello", "/sync/join", "/sync/push", "/sync/feed", "/sync/snapshot/{kind}",
                        "/sync/files/missing", "/sync/files/{sha256}"})


def load_document() -> dict[str, Any]:
    """The OpenAPI document shipped with the package, parsed (a fresh copy; parsed once per
    content and kept in the user cache: :mod:`benchbook.http.document`)."""
    return api_document.load_document()


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> ConnexionResponse:
    return ConnexionResponse(status_code=status, body=json.dumps(body), mimetype="application/json",
                             content_type="application/json", headers=headers or {})


def _request_id(request: ConnexionRequest) -> str:
    return str(request.scope.get("state", {}).get("request_id", ""))


def _error(request: ConnexionRequest, status: int, body: dict[str, Any],
           headers: dict[str, str] | None = None) -> ConnexionResponse:
    """An error answer, with every secret the request's body held taken out (``redaction``)."""
    return _json(status, of_scope(request.scope).scrub_body(body), headers)


def _domain_error(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    assert isinstance(exc, BenchbookError)
    return _error(request, status_of(exc), exc.body())


def _problem(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    assert isinstance(exc, ProblemException)
    if isinstance(exc, RequestInvalid):
        return _error(request, 422, error_body("Request validation failed", errors=exc.errors))
    if exc.status == 400:
        entry: dict[str, Any] = {"loc": ["request"], "msg": str(exc.detail), "type": "value_error", "input": None,
                                 "ctx": {}}
        return _error(request, 422, error_body("Request validation failed", errors=[entry]))
    if exc.status >= 500:
        return _internal(request, exc)
    return _error(request, exc.status, error_body(str(exc.detail or exc.title)), dict(exc.headers or {}))


def allowed_methods(document: dict[str, Any]) -> list[tuple[re.Pattern[str], str]]:
    """For each documented path, a regex of its URL and its ``Allow`` value: the document's
    methods, plus ``HEAD`` where there is a ``GET`` (Starlette answers ``HEAD`` on every ``GET``
    route), each once, sorted. Literal paths come first, as OpenAPI matches them before
    templated ones (``/collections/deleted`` before ``/collections/{name_or_id}``)."""
    out: list[tuple[tuple[int, tuple[bool, ...]], re.Pattern[str], str]] = []
    for path, item in document["paths"].items():
        methods = {m.upper() for m in item if m in ("get", "post", "put", "patch", "delete")}
        if "GET" in methods:
            methods.add("HEAD")
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape("/api" + path))
        specificity = (path.count("{"), tuple("{" in part for part in path.split("/")))
        out.append((specificity, re.compile(f"^{pattern}$"), ", ".join(sorted(methods))))
    return [(rx, allow) for _, rx, allow in sorted(out, key=lambda row: row[0])]


def allow_header(allowed: list[tuple[re.Pattern[str], str]], path: str) -> str | None:
    """The ``Allow`` value of the documented path URL ``path`` matches first, or None."""
    return next((allow for rx, allow in allowed if rx.match(path)), None)


def _http_error(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:  # Starlette lists one route's methods; the document knows them all
        path = request.scope["path"]
        if not path.startswith("/api/"):
            path = request.scope.get("root_path", "") + path
        services = request.scope.get("state", {}).get("services")
        allow = allow_header(services.allowed if services else [], path)
        if allow:
            # Starlette's own header is ``Allow``: replace it, whatever its case, or both go out
            headers = {k: v for k, v in headers.items() if k.lower() != "allow"}
            headers["Allow"] = allow
    return _json(exc.status_code, error_body(str(exc.detail)), headers)


def _internal(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """500 ``{detail, request_id}``; the log line holds the traceback with every secret taken out:
    the request body's and the project's AI key (an exception's message may quote either)."""
    from benchbook.domain.ai import config as ai_config  # only on this rare path (start-up time)

    rid = _request_id(request)
    secrets = of_scope(request.scope)
    services = request.scope.get("state", {}).get("services")
    key = ai_config.load(services.project.root).api_key if services is not None else None
    if key:
        secrets = Secrets(secrets.names, secrets.values | {key})
    text = "".join(traceback.format_exception(exc)).rstrip()
    log.error("request %s failed\n%s", rid, secrets.scrub_text(text))
    return _json(500, error_body("Internal server error", request_id=rid))


def _busy(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    """Another writer held the database past the bound (``persistence.db.write_lock``), or SQLite
    said "database is locked" anywhere: 503 with ``Retry-After``, never a 500 (issue #13)."""
    if isinstance(exc, DatabaseBusy):
        return _json(503, error_body(exc.detail), {"Retry-After": str(exc.retry_after)})
    if not is_locked_error(exc):
        return _internal(request, exc)
    busy = DatabaseBusy(BUSY_TIMEOUT_MS / 1000)
    return _json(503, error_body(busy.detail), {"Retry-After": str(busy.retry_after)})


def _unreadable(request: ConnexionRequest, exc: Exception) -> ConnexionResponse:
    entry: dict[str, Any] = {"loc": ["body"], "msg": f"the request body cannot be read: {exc}", "type": "body_decoding",
             "input": None, "ctx": {}}
    return _json(422, error_body("Request validation failed", errors=[entry]))


def create_app(project: Project, *, allow_remote: bool = False, sync_only: bool = False,
               resume_history: bool = False, only_paths: frozenset[str] | None = None) -> connexion.AsyncApp:
    """The whole service for ``project`` (database opened and upgraded now).

    ``allow_remote`` lets requests with a non-local ``Host`` through (docs/decisions.md
    *Local only*); ``sync_only`` serves only :data:`SYNC_PATHS` (docs/decisions.md *Server*: only what
    syncing devices call): no web app, no ``/docs`` or OpenAPI document, 404 ``{detail}`` for
    everything else; ``resume_history`` (the server, not a one-off CLI command) continues a history
    conversion a restart cut off and, once the app starts serving (ASGI lifespan), runs the server's
    run worker (:mod:`benchbook.runner.worker`): runs a crash left ``running`` are marked
    interrupted, the queue is drained after each change and polled every second; the worker stops
    when the app shuts down. ``only_paths`` routes only those documented paths (a one-off in-process
    CLI command: only its handler module is imported and Connexion checks and routes one path
    instead of all; the document served and the ``Allow`` lists stay whole).
    """
    services = Services(project=project, db=open_database(project.database_url), sync_only=sync_only)
    api_document.skip_known_good_validation()  # Connexion checks a document once per content
    document = load_document()
    limits = project.limits
    apply_to_document(document, limits)
    if sync_only:
        document["paths"] = {p: v for p, v in document["paths"].items() if p in SYNC_PATHS}
    services.allowed = allowed_methods(document)
    app = connexion.AsyncApp(__name__, lifespan=_lifespan(services, serving=resume_history and not sync_only))
    routed = document if only_paths is None else {
        **document, "paths": {p: v for p, v in document["paths"].items() if p in only_paths}}
    app.add_api(routed, resolver=RelativeResolver("benchbook.handlers"), strict_validation=True,
                uri_parser_class=QueryParser,
                validate_responses=os.environ.get("BENCHBOOK_VALIDATE_RESPONSES") == "1",
                validator_map=VALIDATOR_MAP,
                swagger_ui_options=SwaggerUIOptions(serve_spec=False, swagger_ui=not sync_only))
    if not sync_only:
        web_routes.register(app)
        # the document itself, $refs kept, not Connexion's inlined copy (docs/decisions.md
        # *The served contract*)
        app.add_middleware(ContractMiddleware, position=MiddlewarePosition.BEFORE_SWAGGER, document=document)
    app.add_error_handler(BenchbookError, _domain_error)
    app.add_error_handler(ProblemException, _problem)
    app.add_error_handler(HTTPException, _http_error)
    app.add_error_handler(UnicodeDecodeError, _unreadable)
    app.add_error_handler(DatabaseBusy, _busy)
    app.add_error_handler(OperationalError, _busy)
    app.add_error_handler(sqlite3.OperationalError, _busy)
    app.add_error_handler(Exception, _internal)
    for middleware, options in edge_middlewares(services, document, allow_remote=allow_remote, sync_only=sync_only,
                                                limits=limits):
        app.add_middleware(middleware, position=MiddlewarePosition.BEFORE_EXCEPTION, **options)
    app.services = services
    if resume_history and not sync_only:
        from benchbook.domain.history import storage as history_storage  # the server only (start-up)

        history_storage.resume(services.db.engine)
    return app


def edge_middlewares(services: Services, document: dict[str, Any], *, allow_remote: bool, sync_only: bool,
                     limits: Limits) -> list[tuple[type, dict[str, Any]]]:
    """The app's own middlewares, outermost first, each with its options (Connexion inserts each
    one just outside its exception handling, in this order):

    1. the guard (``guard.py``): refuses a foreign ``Host``/``Origin`` and stamps
       ``x-request-id`` on every response, so it comes before anything that answers;
    2. the root paths (``root_paths.py``: ``/openapi.json``, ``/docs``), the web app's server only;
    3. each request's "requester has gone" signal (``abandonment.py``);
    4. the services of the request;
    5. a device's upload, its token checked before its body is read (``device_uploads.py``);
    6. the progress a request with a progress key reports, kept to be read (``progress_keys.py``);
    7. the pacing of record pages (``pacing.py``);
    8. the limits of the request (``request_limits.py``)."""
    stack: list[tuple[type, dict[str, Any]]] = [
        (GuardMiddleware, {"allow_remote": allow_remote, "outbound": outbound_operations(document)})]
    if not sync_only:
        stack.append((RootPathsMiddleware, {}))
    return [*stack, (AbandonMiddleware, {"inflight": INFLIGHT}), (_ServicesMiddleware, {"services": services}),
            (DeviceUploadGuard, {"services": services}), (ProgressMiddleware, {"board": services.progress}),
            (PagingMiddleware, {"places": limits.page_requests}),
            (LimitsMiddleware, {"limits": limits})]


def _lifespan(services: Services, *, serving: bool) -> Callable[[Any], AbstractAsyncContextManager[None]]:
    """Starts the server's run worker when the app starts serving (``serving``), and stops the
    app's run worker when it shuts down (the worker module is imported only by what uses it: a
    one-off command that never ran a workflow has no worker to stop, and skips its imports)."""
    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        if serving:
            from benchbook.runner import worker

            worker.start_serving(services.db, services.project)
        yield
        run_worker = sys.modules.get("benchbook.runner.worker")
        if run_worker is not None:
            run_worker.stop(services.db)
    return lifespan


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
