"""What the API shows of a stored file (OpenAPI ``FileResponse`` and ``FileInfoResponse``), as
types: :mod:`.files` builds them, the handlers (and the plugin host's ``store_file``) answer
them, and ``tests/test_response_shapes.py`` holds them to the document's keys.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import TypedDict

from benchbook.domain.records.shapes import RecordRef


class FileResponse(TypedDict):
    """OpenAPI ``FileResponse``: a stored file by its content hash (``sha256``, the value of a
    file field), its name and its ``size`` in bytes."""

    sha256: str
    filename: str
    size: int


class FileInfoResponse(FileResponse):
    """OpenAPI ``FileInfoResponse``: a :class:`FileResponse` with its ``content_type`` (None when
    unknown) and the live ``records`` whose file fields hold it."""

    content_type: str | None
    records: list[RecordRef]
