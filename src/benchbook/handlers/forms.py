"""The multipart form of a request, as the edge parsed it for the handler
(:class:`benchbook.http.validation.StreamingMultiPartValidator` streams it to disk while it
checks it, then hands it on here)."""
from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData

#: Where :class:`benchbook.http.validation.StreamingMultiPartValidator` leaves the parsed form for the handler
#: (``scope["extensions"][FORM_KEY]``, a Starlette ``FormData``; see :func:`parsed_form`).
FORM_KEY = "benchbook.form"


def parsed_form(scope: Any) -> FormData | None:
    """The form the edge's multipart validator parsed for this request (``scope``, the ASGI
    scope), or None when it parsed none."""
    form = scope.get("extensions", {}).get(FORM_KEY)
    return form if isinstance(form, FormData) else None
