"""OpenAI-compatible clients for every provider (the ``openai`` package) and what their
failures mean to a benchbook user.

One client per request, never retried by the library (``max_retries=0``): each request the
service makes is one row of ``ai_usage``, and a provider that is down answers quickly. A
failure becomes a :class:`BadGateway` (502) naming the address tried and what went wrong;
the key is never in it (:func:`redact` removes it from anything the provider said).
"""
from __future__ import annotations

from typing import Any

import openai

from benchbook.domain.ai.config import DEFAULT_LOCAL, check_base_url, check_local_server
from benchbook.domain.errors import BadGateway

CHAT_TIMEOUT = 120.0
"""Seconds a model may take to answer one request (local models can be slow)."""
LIST_TIMEOUT = 10.0
CONNECT_TIMEOUT = 5.0
NO_KEY = "no-key"
"""Sent as the key to servers that need none (a local model server): the client wants one."""
DETAIL_LENGTH = 300


def client(base_url: str, api_key: str | None, *, timeout: float = CHAT_TIMEOUT,
           http_client: openai.DefaultHttpxClient | None = None) -> openai.OpenAI:
    """A client for the OpenAI-compatible API at ``base_url`` (over ``http_client`` if given)."""
    return openai.OpenAI(api_key=api_key or NO_KEY, base_url=base_url, max_retries=0,
                         timeout=openai.Timeout(timeout, connect=CONNECT_TIMEOUT), http_client=http_client)


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``[key]``."""
    return text.replace(secret, "[key]") if secret else text


def _said(exc: openai.APIStatusError) -> str:
    """What the provider said about the failure, short."""
    body: Any = exc.body
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict):
            body = body.get("message") or body.get("detail") or ""
    text = " ".join(str(body or "").split())
    return text[:DETAIL_LENGTH] + ("…" if len(text) > DETAIL_LENGTH else "")


def failure(exc: openai.OpenAIError, *, what: str, base_url: str, secret: str | None) -> tuple[str, BadGateway]:
    """``(error kind, the 502 to raise)`` for a failed request to ``what`` at ``base_url``.

    Kinds: ``timeout``, ``unreachable``, ``key_refused`` (401, 403), ``rate_limited`` (429),
    ``provider_error`` (any other status), ``bad_response`` (an answer that cannot be read)."""
    if isinstance(exc, openai.APITimeoutError):
        kind, message = "timeout", f"{what} at {base_url} did not answer in time"
    elif isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        reason = f" ({' '.join(str(cause).split())[:DETAIL_LENGTH]})" if cause and str(cause) else ""
        kind, message = "unreachable", f"{what} at {base_url} cannot be reached: is it running?{reason}"
    elif isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)):
        kind = "key_refused"
        message = (f"{what} at {base_url} refused the API key ({exc.status_code}): set another with "
                   "PATCH /ai/config api_key")
    elif isinstance(exc, openai.APIStatusError):
        kind = "rate_limited" if isinstance(exc, openai.RateLimitError) else "provider_error"
        said = _said(exc)
        message = f"{what} at {base_url} answered {exc.status_code}" + (f": {said}" if said else "")
    else:
        kind, message = "bad_response", f"{what} at {base_url} gave an answer benchbook cannot read"
    return kind, BadGateway(redact(message, secret))


def local_models(base_url: str = DEFAULT_LOCAL, allowed_hosts: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The models a local model server at ``base_url`` offers (its ``/models``):
    ``{base_url, models: [{id, owned_by, created}]}``. No key is sent: the address comes from
    the request, and so the host must be this computer's or one of ``allowed_hosts`` (``[ai]
    allowed_hosts``), and a redirect is not followed (it could lead anywhere). Raises
    ``Invalid`` for a bad address, ``HostNotAllowed`` (403) for another host, before anything
    is sent, ``BadGateway`` when nothing answers (or it answers a redirect)."""
    url = check_base_url(base_url, ["query", "base_url"])
    check_local_server(url, allowed_hosts)
    try:
        with client(url, None, timeout=LIST_TIMEOUT, http_client=openai.DefaultHttpxClient(follow_redirects=False)) as c:
            found = list(c.models.list())
    except openai.OpenAIError as exc:
        raise failure(exc, what="the local model server", base_url=url, secret=None)[1] from None
    models = []
    for m in found:
        created, owner = getattr(m, "created", None), getattr(m, "owned_by", None)
        models.append({"id": str(m.id), "owned_by": owner if isinstance(owner, str) else None,
                       "created": created if isinstance(created, int) else None})
    return {"base_url": url, "models": models}
