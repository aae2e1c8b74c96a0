"""Handlers of the ``files`` tag."""
from __future__ import annotations

from typing import Any

from starlette.responses import FileResponse

from benchbook.domain import files as domain
from benchbook.handlers.uow import read, services, write

Body = dict[str, Any]


def upload_file(file: Any) -> tuple[Body, int]:
    try:
        with write() as ctx:
            row = domain.store(ctx.session, ctx.files_dir, file.file, file.filename or "")
            return domain.file_response(row), 201
    finally:
        file.file.close()


def download_file(sha256: str, filename: str | None = None) -> FileResponse:
    with read() as s:
        row, path = domain.find_file(s, services().project.files_dir, sha256)
    return FileResponse(path, filename=filename or row.filename, media_type="application/octet-stream")


def file_info(sha256: str) -> tuple[Body, int]:
    with read() as s:
        return domain.file_info(s, services().project.files_dir, sha256), 200


def delete_file(sha256: str) -> tuple[None, int]:
    with write() as ctx:
        path = domain.delete_file(ctx.session, ctx.files_dir, sha256)
    path.unlink(missing_ok=True)  # only once the database has forgotten it
    return None, 204
