"""The authority's sync endpoints as a device calls them (OpenAPI tag ``sync``; docs/sync.md), over ``httpx``.

Every failure is a domain error with a plain message naming the authority's address: it cannot
be reached or answered nonsense (``BadGateway``, 502), the token is refused (``Unauthorized``,
401, e.g. revoked), or it refused the call (its own status and ``detail``).
"""
from __future__ import annotations

import functools
import os
import ssl
from email.message import Message
from pathlib import Path
from typing import Any, Self

import httpx

from benchbook.domain.errors import BadGateway, BenchbookError, Conflict, Invalid, NotFound, Unauthorized
from benchbook.persistence.db import json_loads

TIMEOUT = httpx.Timeout(60.0, connect=10.0)
"""Per request: a push of :data:`benchbook.domain.sync.outbox.BATCH` entries or a feed page
is one request."""
_BY_STATUS: dict[int, type[BenchbookError]] = {401: Unauthorized, 404: NotFound, 409: Conflict, 422: Invalid}


def _tls() -> ssl.SSLContext:
    """The TLS context that checks an authority's certificate, made once per process (and again
    when ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` change, which name the certificates to trust:
    docs/sync.md). Loading the trusted certificates took 70 ms, half of a sync with nothing to do,
    when every client made its own."""
    return _tls_for(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))


@functools.cache
def _tls_for(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx.create_ssl_context()  # reads SSL_CERT_FILE / SSL_CERT_DIR (trust_env)


class Authority:
    """The authority at ``url`` (its address, the ``/api`` prefix added here), called with the
    device ``token`` when given. Use as a context manager (one connection pool)."""

    def __init__(self, url: str, token: str | None = None, *, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url + "/api", headers=headers, timeout=TIMEOUT,
                                  transport=transport, follow_redirects=False, verify=_tls())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise BadGateway(f"the authority at {self.url} cannot be reached: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            self._raise(response)
        try:
            body = json_loads(response.content)  # orjson (a snapshot page is megabytes), json beyond it
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise BadGateway(f"the authority at {self.url} answered something that is not a JSON object")
        return body

    def _raise(self, response: httpx.Response) -> None:
        """Raise the domain error of a 4xx or 5xx answer, its ``detail`` in the message."""
        try:
            body = response.json()
        except ValueError:
            body = None
        detail = body.get("detail") if isinstance(body, dict) else None
        error = _BY_STATUS.get(response.status_code, BadGateway)
        raise error(f"the authority at {self.url} answered {response.status_code}: {detail or response.reason_phrase}")

    def hello(self) -> dict[str, Any]:
        """``GET /sync/hello``: ``{project_id, device, head, empty}``."""
        return self._call("GET", "/sync/hello")  # type: ignore[no-any-return]

    def join(self, invite: str, *, holds_data: bool = False) -> dict[str, Any]:
        """``POST /sync/join``: ``{token, device, project_id}``; ``holds_data`` lets the authority
        refuse (409, the invite unused) when it holds data too."""
        return self._call("POST", "/sync/join",  # type: ignore[no-any-return]
                          json={"invite": invite, "holds_data": holds_data})

    def push(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """``POST /sync/push``: ``{results, head}``."""
        return self._call("POST", "/sync/push", json={"entries": entries})  # type: ignore[no-any-return]

    def feed(self, after: int, limit: int) -> dict[str, Any]:
        """``GET /sync/feed``: ``{entries, head, more}``."""
        return self._call("GET", "/sync/feed", params={"after": after, "limit": limit})  # type: ignore[no-any-return]

    def snapshot(self, kind: str, after: str | None = None, limit: int | None = None) -> dict[str, Any]:
        """``GET /sync/snapshot/{kind}``: ``{kind, tables}``, for a paged kind (``records``,
        ``history``) the page after cursor ``after`` of at most ``limit`` rows, with ``head``
        and ``next``."""
        params = {k: v for k, v in (("after", after), ("limit", limit)) if v is not None}
        return self._call("GET", f"/sync/snapshot/{kind}", params=params)  # type: ignore[no-any-return]

    def files_missing(self, shas: list[str]) -> list[str]:
        """``POST /sync/files/missing``: those of ``shas`` the authority lacks."""
        return list(self._call("POST", "/sync/files/missing", json={"sha256": shas})["missing"])

    def put_file(self, sha256: str, path: Path, filename: str) -> None:
        """``PUT /sync/files/{sha256}``: the content at ``path``, streamed from disk."""
        with path.open("rb") as content:
            self._call("PUT", f"/sync/files/{sha256}", files={"file": (filename or sha256, content)})

    def get_file(self, sha256: str, into: Any) -> str:
        """``GET /sync/files/{sha256}``: the content written to ``into`` (a file-like object
        with ``write``) as it streams in; returns the filename the authority keeps. Raises
        ``NotFound`` when the authority lacks it too."""
        try:
            with self._http.stream("GET", f"/sync/files/{sha256}") as response:
                if response.status_code >= 400:
                    response.read()
                    self._raise(response)
                for chunk in response.iter_bytes(1 << 20):
                    into.write(chunk)
                header = Message()
                header["content-disposition"] = response.headers.get("content-disposition", "")
                return header.get_filename() or sha256
        except httpx.HTTPError as exc:
            raise BadGateway(f"the authority at {self.url} cannot be reached: {type(exc).__name__}: {exc}") from None
