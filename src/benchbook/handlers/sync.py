"""Handlers of the ``sync`` tag: the authority's side (docs/sync.md). Device calls name their
device by token only (``Authorization: Bearer``); the admin's calls (devices) are never served
by ``--sync-only``."""
from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import FileResponse, Response

from benchbook.domain import file_shapes
from benchbook.domain import files as store
from benchbook.domain.errors import Conflict
from benchbook.domain.sync import devices, feed, files, merge, snapshot, state
from benchbook.handlers.files import uploaded_part
from benchbook.handlers.uow import header, read, services, write

Body = dict[str, Any]


def _device(session: Any) -> str:
    return devices.verify(session, header("authorization"))


def hello() -> tuple[Body, int]:
    with write() as ctx:
        name = _device(ctx.session)
        devices.seen(ctx.session, name)
        row = state.get(ctx.session)
        return {"project_id": row.project_id, "device": name, "head": feed.number(ctx.session),
                "empty": not state.holds_data(ctx.session)}, 200


def join(body: Body) -> tuple[Body, int]:
    with write() as ctx:
        s = ctx.session
        if state.following(s) is not None:
            raise Conflict("this project follows an authority itself: a device cannot join it")
        empty = not state.holds_data(s)
        if body.get("holds_data") and not empty:
            raise Conflict("both this authority and the joining project hold data: one of them must be empty "
                           "(the empty one is filled from the other); the invite is still unused")
        name, token = devices.join(s, body["invite"])
        return {"token": token, "device": name, "project_id": state.get(s).project_id, "empty": empty}, 200


def push(body: Body) -> tuple[Body, int]:
    with write() as ctx:
        name = _device(ctx.session)
        devices.seen(ctx.session, name)
        return merge.push(ctx, name, body["entries"]), 200


def feed_page(after: int = 0, limit: int = feed.PAGE) -> tuple[Body, int]:
    with write() as ctx:  # numbering what is not numbered yet writes
        _device(ctx.session)
        return feed.page(ctx.session, after, limit), 200


def snapshot_of(kind: str, after: str | None = None, limit: int = snapshot.PAGE) -> tuple[Body, int] | Response:
    if kind == "catalog":
        with read() as s:
            _device(s)
            return snapshot.take(s, kind), 200
    with write() as ctx:  # a page says the head, numbering what is not numbered yet
        _device(ctx.session)
        page = snapshot.take(ctx.session, kind, after, limit)
    return _json(page)


def _json(body: Body) -> Response:
    """``body`` (a snapshot page: megabytes) as JSON written by ``orjson``, several times faster
    than ``json``; times as ISO 8601 text, JSON columns as stored (``orjson.Fragment``)."""
    return Response(orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS), media_type="application/json")


def list_devices() -> tuple[list[Body], int]:
    with read() as s:
        return devices.list_devices(s), 200


def create_device(body: Body) -> tuple[Body, int]:
    with write() as ctx:
        return devices.invite(ctx.session, body["name"]), 201


def revoke_device(name: str) -> tuple[Body, int]:
    with write() as ctx:
        return devices.revoke(ctx.session, name), 200


def files_missing(body: Body) -> tuple[Body, int]:
    with read() as s:
        _device(s)
        return {"missing": files.missing(s, services().project.files_dir, body["sha256"])}, 200


def upload_file(sha256: str, file: Any = None) -> tuple[file_shapes.FileResponse, int]:
    """``PUT /sync/files/{sha256}``: the ``file`` part was streamed into a spool in the files
    folder while the request was validated (as for ``POST /files``); kept only when its hash is
    ``sha256``."""
    with uploaded_part(file) as upload, write() as ctx:
        _device(ctx.session)
        return files.accept(ctx.session, ctx.files_dir, sha256, upload.file, upload.filename or ""), 201


def download_file(sha256: str) -> FileResponse:
    with read() as s:
        _device(s)
        row, path = store.find_file(s, services().project.files_dir, sha256)
    return FileResponse(path, filename=row.filename, media_type="application/octet-stream")
