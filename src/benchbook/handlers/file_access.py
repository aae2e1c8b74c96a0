"""File access (OpenAPI: ``POST /file-access/zip``; docs/decisions.md *CLI*): records together
with their files, as one zip."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from starlette.responses import StreamingResponse

from benchbook.domain.records import exports
from benchbook.domain.records.queries import RecordQuery
from benchbook.handlers.uow import read, services

QUERY_KEYS = ("filter", "parent_record_id", "schema", "search", "sort", "where", "within")
CHUNK = 1 << 16


def export_zip(body: dict[str, Any]) -> StreamingResponse:
    """``POST /file-access/zip``: the zip :func:`benchbook.domain.records.exports.export_zip`
    writes, streamed from its temporary file (which is removed once sent)."""
    query = RecordQuery(**{k: body[k] for k in QUERY_KEYS if body.get(k) is not None})
    with read() as session:
        archive = exports.export_zip(session, services().project.files_dir, body["collection"], query,
                                   columns=body.get("columns"), files=body.get("files", True))

    def stream() -> Iterator[bytes]:
        try:
            while chunk := archive.read(CHUNK):
                yield chunk
        finally:
            archive.close()

    name = str(body["collection"]).replace('"', "")
    return StreamingResponse(stream(), media_type="application/octet-stream",  # as documented: bytes
                             headers={"content-disposition": f'attachment; filename="{name}.zip"'})
