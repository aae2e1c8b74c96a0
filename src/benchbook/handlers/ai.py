"""Handlers of the ``ai`` tag (docs/decisions.md *AI*)."""
from __future__ import annotations

import html
from typing import Any

from connexion.context import scope
from starlette.responses import HTMLResponse

from benchbook.domain.ai import chat as conversation
from benchbook.domain.ai import config, providers, router, usage
from benchbook.handlers.uow import read, services

Body = dict[str, Any]
SIGNED_IN = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>benchbook: model router</title></head>
<body style="font-family: sans-serif; margin: 3em">
<h1>Signed in to the model router</h1>
<p>benchbook saved the key (ending in <code>{hint}</code>). You can close this tab.</p>
<script>window.close()</script>
</body></html>
"""


def _root() -> Any:
    return services().project.root


def get_config() -> tuple[Body, int]:
    return config.load(_root()).response(), 200


def update_config(body: Body) -> tuple[Body, int]:
    return config.update(_root(), body).response(), 200


def list_local_models(base_url: str = config.DEFAULT_LOCAL) -> tuple[Body, int]:
    allowed = config.load(_root()).allowed_hosts
    return providers.local_models(base_url or config.DEFAULT_LOCAL, allowed), 200  # empty: the default


def _callback_url() -> str:
    """This server's callback address, as the browser reaches it (the request's own host)."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    host = headers.get("host") or "127.0.0.1:8000"
    return f"{scope.get('scheme', 'http')}://{host}/api/ai/router/callback"


def get_router_auth_url() -> tuple[Body, int]:
    return router.begin_login(str(_root()), _callback_url()), 200


def router_callback(code: str) -> HTMLResponse:
    key = router.finish_login(str(_root()), code)
    saved = config.update(_root(), {"api_key": key, "provider": "router", "base_url": ""})
    return HTMLResponse(SIGNED_IN.format(hint=html.escape(saved.key_hint or "…")))


def get_router_limits() -> tuple[Body, int]:
    return router.limits(config.load(_root())), 200


def chat(body: Body) -> tuple[Body, int]:
    settings = config.load(_root())
    return conversation.chat(settings, body["messages"], sessions=services().db.session), 200


def get_usage() -> tuple[Body, int]:
    with read() as s:
        return usage.summary(s), 200
