"""The HTTP/1.1 protocol ``benchbook serve`` runs: uvicorn's h11 protocol, except that a request
h11 itself refuses (a ``Host`` header given twice, a malformed request line or header) is
answered with 400 in the ``{detail}`` error envelope (OpenAPI ``ErrorResponse``) instead of uvicorn's
plain text. Such a request never reaches the app, so this is the only place that can answer it;
repeated ``Origin`` and ``Referer`` headers do reach it and get their 400 there
(``security.repeated_header``)."""
from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from benchbook.http.envelope import error_bytes, error_headers

DETAIL = ("the request is not valid HTTP/1.1 and was not read: a malformed request line or header, "
          "or a header that may appear only once given more than once (such as Host)")


class EnvelopeH11Protocol(H11Protocol):
    """uvicorn's ``H11Protocol`` whose own 400 (a request it cannot parse) is JSON ``{detail}``."""

    def send_400_response(self, msg: str) -> None:
        """Answer 400 with ``{"detail": DETAIL}`` and close the connection (``msg`` is uvicorn's
        plain-text message, kept in the server log by uvicorn itself)."""
        body = error_bytes(DETAIL)
        headers = error_headers(body, [(b"connection", b"close")])
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
