"""Logging in to the hosted model router (OAuth with PKCE, S256) and reading its key limits.

The flow: :func:`begin_login` makes a code verifier, keeps it in memory for
:data:`LOGIN_TTL` seconds (per project, in this process; a newer login replaces the one
waiting) and gives the router's login address with ``code_challenge`` =
base64url(sha256(verifier)) without padding. The router sends the browser back to the callback
with a ``code``; :func:`finish_login` exchanges code and verifier for a key (``POST
{router}/api/v1/auth/keys``). The caller saves the key like any other (``.secrets.toml``).
A verifier is used once. Plain HTTP (``httpx``): these are the router's own endpoints, not the
OpenAI-compatible API.
"""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx

from benchbook.domain.ai.config import AiSettings, router_url
from benchbook.domain.ai.providers import redact
from benchbook.domain.errors import BadGateway, Conflict

LOGIN_TTL = 600
"""Seconds a login started with :func:`begin_login` may take."""
TIMEOUT = httpx.Timeout(20.0, connect=5.0)


@dataclass
class _Pending:
    verifier: str = field(repr=False)
    started: float


_PENDING: dict[str, _Pending] = {}
_LOCK = threading.Lock()


def pkce_pair() -> tuple[str, str]:
    """``(verifier, challenge)``: 64 random URL-safe characters and base64url(sha256(verifier))
    without padding (RFC 7636, S256)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def begin_login(project: str, callback_url: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Start a login for ``project`` (any key naming it): ``{url, callback_url,
    code_challenge_method, expires_in}``; ``url`` is where the browser goes."""
    verifier, challenge = pkce_pair()
    with _LOCK:
        _PENDING[project] = _Pending(verifier, time.monotonic())
    query = urlencode({"callback_url": callback_url, "code_challenge": challenge, "code_challenge_method": "S256"})
    return {"url": f"{router_url(env)}/auth?{query}", "callback_url": callback_url,
            "code_challenge_method": "S256", "expires_in": LOGIN_TTL}


def _take(project: str) -> str:
    with _LOCK:
        pending = _PENDING.pop(project, None)
    if pending is None or time.monotonic() - pending.started > LOGIN_TTL:
        raise Conflict("no model router login is waiting (none was started, it was used, or it is older "
                       f"than {LOGIN_TTL // 60} minutes): start one with GET /ai/router/auth-url")
    return pending.verifier


def _failed(exc: httpx.HTTPError, what: str, url: str) -> BadGateway:
    if isinstance(exc, httpx.TimeoutException):
        return BadGateway(f"the model router at {url} did not answer in time ({what})")
    reason = " ".join(str(exc).split())[:300]
    return BadGateway(f"the model router at {url} cannot be reached ({what}): {reason or type(exc).__name__}")


def finish_login(project: str, code: str, env: Mapping[str, str] | None = None) -> str:
    """Exchange ``code`` and the waiting verifier for a key; returns the key. Raises
    ``Conflict`` when no login waits, ``BadGateway`` when the router fails or refuses."""
    verifier = _take(project)
    base = router_url(env)
    try:
        answer = httpx.post(f"{base}/api/v1/auth/keys", timeout=TIMEOUT,
                            json={"code": code, "code_verifier": verifier, "code_challenge_method": "S256"})
    except httpx.HTTPError as exc:
        raise _failed(exc, "exchanging the login code", base) from None
    if answer.status_code != 200:
        # the body is not passed on: it answers a request that carried the verifier
        raise BadGateway(f"the model router at {base} refused the login code ({answer.status_code}): "
                         "start again with GET /ai/router/auth-url")
    try:
        key = answer.json().get("key")
    except (ValueError, AttributeError):
        key = None
    if not isinstance(key, str) or not key.strip():
        raise BadGateway(f"the model router at {base} answered the login without a key")
    return key.strip()


def limits(settings: AiSettings, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The router's usage and limits of the key in use (``GET {router}/api/v1/key``): its
    ``data`` object (``label``, ``limit``, ``limit_remaining``, ``usage``, …) as it is.
    Raises ``Conflict`` without a key, ``BadGateway`` when the router fails or refuses it."""
    if not settings.api_key:
        raise Conflict("no model router key: log in with GET /ai/router/auth-url "
                       "(or set api_key with PATCH /ai/config)")
    base = router_url(env)
    try:
        answer = httpx.get(f"{base}/api/v1/key", timeout=TIMEOUT,
                           headers={"Authorization": f"Bearer {settings.api_key}"})
    except httpx.HTTPError as exc:
        raise _failed(exc, "reading the key's limits", base) from None
    if answer.status_code in (401, 403):
        raise BadGateway(f"the model router at {base} refused the API key ({answer.status_code}): "
                         "log in again with GET /ai/router/auth-url")
    if answer.status_code != 200:
        said = redact(" ".join(answer.text.split())[:300], settings.api_key)
        raise BadGateway(f"the model router at {base} answered {answer.status_code}" + (f": {said}" if said else ""))
    try:
        body = answer.json()
    except ValueError:
        body = None
    data = body.get("data", body) if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise BadGateway(f"the model router at {base} answered the key's limits with something that is not an object")
    # were the router ever to echo the key (say, as the label), it still goes no further
    return json.loads(redact(json.dumps(data), settings.api_key))  # type: ignore[no-any-return]
