"""Handlers of the ``files`` tag."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from connexion.context import scope
from starlette.datastructures import UploadFile
from starlette.responses import FileResponse

from benchbook.domain import file_shapes
from benchbook.domain import files as domain
from benchbook.domain.errors import Invalid, error_entry
from benchbook.handlers.forms import parsed_form
from benchbook.handlers.uow import read, services, write

Body = dict[str, Any]


@contextmanager
def uploaded_part(file: Any = None) -> Iterator[UploadFile]:
    """The request's ``file`` part, streamed into a spool in the files folder while the request
    was validated (``validation.StreamingMultiPartValidator``; Connexion then passes no
    ``file``). Every part's spool is closed on the way out (a kept one is gone already). Raises
    ``Invalid`` when the part is not a file."""
    form = parsed_form(scope)
    upload = form.get("file") if form is not None else file
    try:
        if not isinstance(upload, UploadFile):
            raise Invalid("Request validation failed", [error_entry(
                ["body", "file"], "part 'file' must be a file (a part with a filename)", "type", None)])
        yield upload
    finally:
        for _, part in (form.multi_items() if form is not None else [("file", file)]):
            if isinstance(part, UploadFile):
                part.file.close()


def upload_file(file: Any = None) -> tuple[file_shapes.FileResponse, int]:
    """``POST /files``: the content is moved into place once, in the write's transaction."""
    with uploaded_part(file) as upload, write() as ctx:
        row = domain.store(ctx.session, ctx.files_dir, upload.file, upload.filename or "")
        return domain.file_response(row), 201


def download_file(sha256: str, filename: str | None = None) -> FileResponse:
    with read() as s:
        row, path = domain.find_file(s, services().project.files_dir, sha256)
    return FileResponse(path, filename=filename or row.filename, media_type="application/octet-stream")


def file_info(sha256: str) -> tuple[file_shapes.FileInfoResponse, int]:
    with read() as s:
        return domain.file_info(s, services().project.files_dir, sha256), 200


def delete_file(sha256: str) -> tuple[None, int]:
    with write() as ctx:
        path = domain.delete_file(ctx.session, ctx.files_dir, sha256)
    path.unlink(missing_ok=True)  # only once the database has forgotten it
    return None, 204
