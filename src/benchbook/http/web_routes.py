"""The web app: static files served at ``/`` (no build step; see ``docs/web.md``).

``/`` is the single page; ``/static/<path>`` serves the app's modules (``app.js``, ``lib/``,
``pages/``) and the vendored libraries (``vendor/``); ``/sw.js`` is the service worker that keeps
the app's shell for offline use (served from the root so its scope is the whole app).
"""
from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from benchbook.http.envelope import error_bytes

STATIC = resources.files("benchbook.web") / "static"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".md": "text/markdown; charset=utf-8",
         ".txt": "text/plain; charset=utf-8"}
NO_CACHE = {"cache-control": "no-cache"}


def not_found() -> Response:
    """404 in the error envelope (:mod:`benchbook.http.envelope`)."""
    return Response(error_bytes("Not found"), status_code=404, media_type="application/json")


def static_file(path: str) -> Traversable | None:
    """The packaged file at ``path`` under ``static/``, or None.

    ``path`` is ``/``-separated; empty parts, ``.``/``..`` and names starting with a dot are refused,
    so nothing outside ``static/`` is ever served.
    """
    parts = path.split("/")
    if not parts or any(not p or p.startswith(".") or "\\" in p for p in parts):
        return None
    target = STATIC
    for part in parts:
        target = target / part
    return target if target.is_file() else None


def file_response(target: Traversable, name: str) -> Response:
    """``target`` with its media type; revalidated on each load (``no-cache``) so an upgrade shows."""
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    return FileResponse(str(target), media_type=TYPES.get(suffix, "application/octet-stream"),
                        headers=NO_CACHE)


async def index(request: Request) -> Response:
    """The web app's single page."""
    return file_response(STATIC / "index.html", "index.html")


async def static(request: Request) -> Response:
    """A static asset under ``/static/``; 404 ``{detail}`` for anything else."""
    name = request.path_params["name"]
    target = static_file(name)
    return not_found() if target is None else file_response(target, name)


async def favicon(request: Request) -> Response:
    """The app's icon (``static/favicon.svg``) where browsers ask for one without reading the page."""
    return file_response(STATIC / "favicon.svg", "favicon.svg")


async def service_worker(request: Request) -> Response:
    """The service worker (``static/sw.js``) at the root, so it may control every page of the app."""
    return file_response(STATIC / "sw.js", "sw.js")


def register(app: Any) -> None:
    """Add the web routes to a Connexion app (after ``add_api``)."""
    app.add_url_rule("/", "web_index", index, methods=["GET"])
    app.add_url_rule("/sw.js", "web_service_worker", service_worker, methods=["GET"])
    app.add_url_rule("/favicon.ico", "web_favicon", favicon, methods=["GET"])
    app.add_url_rule("/static/{name:path}", "web_static", static, methods=["GET"])
