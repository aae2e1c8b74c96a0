"""The error envelope every error answer of the HTTP edge carries: a JSON object with ``detail``
(a message for people), plus ``errors`` for a refused request (each ``{loc, msg, type}``) or
``request_id`` for an unexpected failure (the OpenAPI document's ``ErrorResponse``,
``ValidationErrorResponse`` and ``InternalErrorResponse``). Written here
only: the app's error handlers, the middlewares that answer before Connexion (the guard, the
request limits, the document, a device's upload, a server stopping), the web app's routes and
the HTTP server's own 400 all build it with these functions."""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from benchbook.domain.errors import BenchbookError

STATUS = {"bad_request": 400, "unauthorized": 401, "forbidden": 403, "not_found": 404, "conflict": 409,
          "too_large": 413, "invalid": 422, "bad_gateway": 502, "abandoned": 503}
"""The HTTP status of each kind of domain error (``BenchbookError.kind``, ``domain/errors.py``)."""

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Header = tuple[bytes, bytes]


def status_of(exc: BenchbookError) -> int:
    """The HTTP status a domain error answers with (:data:`STATUS` of its ``kind``)."""
    return STATUS[exc.kind]


def error_body(detail: str, **extra: Any) -> dict[str, Any]:
    """``{"detail": detail, **extra}``: the envelope as a JSON-ready dict."""
    return {"detail": detail, **extra}


def error_bytes(detail: str, **extra: Any) -> bytes:
    """:func:`error_body` as UTF-8 JSON bytes."""
    return json.dumps(error_body(detail, **extra)).encode()


def error_headers(body: bytes, extra: Iterable[Header] = ()) -> list[Header]:
    """The headers of an envelope answer: ``content-type: application/json``, its
    ``content-length``, then ``extra`` (raw ``(name, value)`` byte pairs)."""
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]


async def send_error(send: Send, status: int, detail: str, headers: Iterable[Header] = (), **extra: Any) -> None:
    """Answer an ASGI request with ``status`` and the envelope (``detail``, ``extra``), in two
    messages on ``send``; ``headers`` are added to the envelope's own."""
    body = error_bytes(detail, **extra)
    await send({"type": "http.response.start", "status": status, "headers": error_headers(body, headers)})
    await send({"type": "http.response.body", "body": body})
