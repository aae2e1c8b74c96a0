"""The domain's error hierarchy, mapped to the spec's error envelope in one place (``benchbook/http/app.py``).

::

    BenchbookError (status 400)        {detail}, or {detail, errors} when ``errors`` lists each
     │                                  problem as {loc, msg, type, input, ctx} like request validation
     ├── Unauthorized (401)             a sync call without a device token the authority knows, or
     │                                  with a revoked one (docs/sync.md)
     ├── NotFound (404)                 a thing the URL names (path or query) does not exist (or is
     │                                  deleted): the target is not there
     ├── Conflict (409)                 name taken, uniqueness clash, live children block a delete; a
     │                                  request valid in itself that clashes with what is stored, a
     │                                  body naming what does not exist included (:func:`missing`)
     ├── Invalid (422)                  a value breaks a rule the request itself breaks
     ├── BadGateway (502)               a service outside benchbook (an AI provider, the model
     │                                  router) cannot be reached, refused or answered nonsense
     └── Abandoned (503)                the work's client disconnected or the server is stopping
                                        (domain/abandon.py); its transaction is rolled back

Spec section *Errors*: domain errors answer ``{detail: <message>}``; DESIGN.md fixes the codes.
"""
from __future__ import annotations

from typing import Any


class BenchbookError(Exception):
    """Base of all domain errors; ``status`` is the HTTP status, ``detail`` the message.

    ``errors`` is a list of ``{loc, msg, type, input, ctx}`` entries; when given, the body is
    ``{detail, errors}`` like a request-validation failure, so clients handle both alike.
    """

    status = 400

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        """The response body in the spec's envelope."""
        body: dict[str, Any] = {"detail": self.detail}
        if self.errors:
            body["errors"] = self.errors
        return body


class Unauthorized(BenchbookError):
    """A sync call's device token is missing, unknown or revoked (401, docs/sync.md)."""

    status = 401


class NotFound(BenchbookError):
    """A named thing does not exist (404)."""

    status = 404


class Conflict(BenchbookError):
    """The change clashes with existing data (409)."""

    status = 409


class Invalid(BenchbookError):
    """A value breaks a rule (422)."""

    status = 422


class BadGateway(BenchbookError):
    """A service benchbook depends on failed (502): the message names the address tried and
    what went wrong, never a credential."""

    status = 502


class Abandoned(BenchbookError):
    """The requester has gone (503): its client disconnected or the server began to stop while
    the work ran (``domain/abandon.py``). Raised from inside the work, so the write rolls back."""

    status = 503


def missing(detail: str, errors: list[dict[str, Any]]) -> BenchbookError:
    """The error of a request naming things that do not exist (``errors``, one entry each): 404
    when they are named in its URL (the target is not there), 409 when named in its body (the
    body clashes with what is stored; a 404 would say the target itself is missing).
    docs/decisions.md, *What the document says*."""
    in_body = any(list(e.get("loc") or [])[:1] == ["body"] for e in errors)
    return (Conflict if in_body else NotFound)(detail, errors)


def error_entry(loc: list[str | int], msg: str, type_: str, input_: Any = None,
                ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ``{loc, msg, type, input, ctx}`` entry of an ``errors`` list."""
    return {"loc": loc, "msg": msg, "type": type_, "input": input_, "ctx": ctx or {}}
