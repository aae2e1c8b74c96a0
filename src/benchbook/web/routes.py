"""The web app: static files served at ``/`` (no build step)."""
from __future__ import annotations

from importlib import resources
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, Response

STATIC = resources.files("benchbook.web") / "static"
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css",
         ".svg": "image/svg+xml"}


async def index(request: Request) -> Response:
    """The web app's single page."""
    return FileResponse(str(STATIC / "index.html"), media_type=TYPES[".html"])


async def static(request: Request) -> Response:
    """A static asset under ``/static/``; 404 ``{detail}`` for anything else."""
    name = request.path_params["name"]
    target = STATIC / name
    if "/" in name or name.startswith(".") or not target.is_file():
        return Response('{"detail": "Not found"}', status_code=404, media_type="application/json")
    suffix = "." + name.rsplit(".", 1)[-1]
    return FileResponse(str(target), media_type=TYPES.get(suffix, "application/octet-stream"))


def register(app: Any) -> None:
    """Add the web routes to a Connexion app (after ``add_api``)."""
    app.add_url_rule("/", "web_index", index, methods=["GET"])
    app.add_url_rule("/static/{name}", "web_static", static, methods=["GET"])
