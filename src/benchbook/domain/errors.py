"""The domain's error hierarchy: one root, :class:`BenchbookError`, and a ``kind`` per error
that says what went wrong in words. The HTTP status of each kind is the edge's to choose
(``benchbook/http/envelope.py`` :data:`~benchbook.http.envelope.STATUS`), as are the CLI's
and the assistant's tool results' ways of saying it.

::

    BenchbookError            bad_request   {detail}, or {detail, errors} when ``errors`` lists each
     │                                      problem as {loc, msg, type, input, ctx} like request validation
     ├── Unauthorized         unauthorized  a sync call without a device token the authority knows, or
     │                                      with a revoked one (docs/sync.md)
     ├── NotFound             not_found     a thing the URL names (path or query) does not exist (or is
     │                                      deleted): the target is not there
     ├── Conflict             conflict      name taken, uniqueness clash, live children block a delete; a
     │    │                                 request valid in itself that clashes with what is stored, a
     │    │                                 body naming what does not exist included (:func:`missing`)
     │    └── KeyInUse                      a progress key whose request still runs (domain/progress.py)
     ├── Invalid              invalid       a value breaks a rule the request itself breaks
     │    ├── ValueProblem                  a value its field type or restrictions refuse
     │    │                                 (catalog/dtypes.py; also a ``ValueError``)
     │    └── PathError                     a field path that cannot be followed (records/paths.py;
     │                                      its ``error_class`` says what the caller raises for it)
     ├── ai.config.HostNotAllowed  forbidden  an address the server may not send a request to
     ├── BadGateway           bad_gateway   a service outside benchbook (an AI provider, the model
     │                                      router) cannot be reached, refused or answered nonsense
     └── Abandoned            abandoned     the work's client disconnected or the server is stopping
                                            (domain/abandon.py); its transaction is rolled back

The errors below :class:`Invalid` and :class:`Conflict` are raised by lower helpers and turned
into a richer error by their callers; one that escapes still answers in the envelope, never 500.
The body is the OpenAPI document's ``ErrorResponse`` (``ValidationErrorResponse`` with ``errors``).
"""
from __future__ import annotations

from typing import Any


class BenchbookError(Exception):
    """Base of all domain errors; ``kind`` says what went wrong (a word the edge maps to its
    status), ``detail`` the message.

    ``errors`` is a list of ``{loc, msg, type, input, ctx}`` entries; when given, the body is
    ``{detail, errors}`` like a request-validation failure, so clients handle both alike.
    """

    kind = "bad_request"

    def __init__(self, detail: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []

    def body(self) -> dict[str, Any]:
        """The response body in the error envelope (OpenAPI ``ErrorResponse``)."""
        body: dict[str, Any] = {"detail": self.detail}
        if self.errors:
            body["errors"] = self.errors
        return body


class Unauthorized(BenchbookError):
    """A sync call's device token is missing, unknown or revoked (docs/sync.md)."""

    kind = "unauthorized"


class NotFound(BenchbookError):
    """A named thing does not exist."""

    kind = "not_found"


class Conflict(BenchbookError):
    """The change clashes with existing data."""

    kind = "conflict"


class Invalid(BenchbookError):
    """A value breaks a rule."""

    kind = "invalid"


class BadGateway(BenchbookError):
    """A service benchbook depends on failed: the message names the address tried and
    what went wrong, never a credential."""

    kind = "bad_gateway"


class Abandoned(BenchbookError):
    """The requester has gone: its client disconnected or the server began to stop while
    the work ran (``domain/abandon.py``). Raised from inside the work, so the write rolls back."""

    kind = "abandoned"


def missing(detail: str, errors: list[dict[str, Any]]) -> BenchbookError:
    """The error of a request naming things that do not exist (``errors``, one entry each):
    :class:`NotFound` when they are named in its URL (the target is not there), :class:`Conflict`
    when named in its body (the body clashes with what is stored; not found would say the target
    itself is missing).
    docs/decisions.md, *What the document says*."""
    in_body = any(list(e.get("loc") or [])[:1] == ["body"] for e in errors)
    return (Conflict if in_body else NotFound)(detail, errors)


def error_entry(loc: list[str | int], msg: str, type_: str, input_: Any = None,
                ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ``{loc, msg, type, input, ctx}`` entry of an ``errors`` list."""
    return {"loc": loc, "msg": msg, "type": type_, "input": input_, "ctx": ctx or {}}
