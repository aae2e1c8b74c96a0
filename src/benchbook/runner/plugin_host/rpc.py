"""What a plugin may ask of the host during a run (plugin-protocol/README.md *Capabilities*): the RPC methods
``get_file``, ``update_record``, ``create_record``, ``commit`` and ``call_tool``, whose tools
are ``get_context_record``, ``find_records``, ``get_schema`` and ``store_file``.

:func:`enforcing` checks every ``rpc_call`` against the capabilities captured at discovery: the
tool name for ``call_tool``, the method name otherwise; anything else is answered with an
``error`` frame of kind ``capability_denied`` (the plugin may go on). :class:`HostOperations`
carries the calls out through the domain's normal rules, in the caller's unit of work (its
``Ctx``: the run's history batch and actor), so a plugin's writes are history like any other.

Answers, per method (params → result):

================== ======================================= =====================================
get_file           ``{sha256}``                            binary envelope + ``filename``, ``size``
update_record      ``{record_id, data}``                   the record (RecordResponse)
create_record      ``{collection, schema_name, data,       the record
                   parent_record_id}``
commit             ``{}``                                  ``{}`` (the run's writes so far are kept)
get_context_record ``{}``                                  the record the run is for
find_records       ``{collection, schema, filter, limit}`` ``{items, total}``
get_schema         ``{name}``                              the schema (SchemaResponse)
store_file         ``{filename, content}`` (content: a     ``{sha256, filename, size}``
                   binary envelope)
================== ======================================= =====================================

A domain refusal is an ``error`` frame whose kind is ``not_found``, ``invalid`` or ``conflict``
(with the domain's message); bad params are ``invalid_params``; an unknown tool is
``unknown_tool``.
"""
from __future__ import annotations

import base64
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbook.domain import files
from benchbook.domain.catalog.lookup import find_schema
from benchbook.domain.catalog.schemas import schema_response
from benchbook.domain.catalog.shapes import SchemaResponse
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, NotFound
from benchbook.domain.file_shapes import FileResponse
from benchbook.domain.records import lists, writes
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.rows import find_record
from benchbook.domain.records.shapes import RecordResponse
from benchbook.domain.records.shaping import RecordShaper
from benchbook.runner.plugin_host.frames import BINARY_INLINE_THRESHOLD, violation

METHODS = ("get_file", "update_record", "create_record", "commit")
TOOLS = ("get_context_record", "find_records", "get_schema", "store_file")
FIND_LIMIT = 500
"""Most records one ``find_records`` call returns."""

Frame = dict[str, Any]


def error_frame(call_id: str | None, kind: str, message: str, retryable: bool = False) -> Frame:
    """An ``error`` frame answering ``call_id``."""
    return {"type": "error", "call_id": call_id, "error": {"kind": kind, "message": message, "retryable": retryable}}


def enforcing(capabilities: list[str], answer: Callable[[Frame], Frame]) -> Callable[[Frame], Frame]:
    """``answer`` behind the capability check (plugin-protocol/README.md *Capabilities* 3–4)."""
    allowed = set(capabilities)

    def checked(call: Frame) -> Frame:
        wanted = call["params"].get("tool") if call["method"] == "call_tool" else call["method"]
        if wanted not in allowed:
            declared = ", ".join(sorted(allowed)) or "nothing"
            return error_frame(call["call_id"], "capability_denied",
                               f"{wanted!r} is not among the plugin's declared capabilities ({declared})")
        return answer(call)
    return checked


ONE_RUN_CALLS = ("get_context_record", "update_record", "create_record", "commit")
"""The calls that belong to one run (its record, its writes): refused in a batch
(``plugin-protocol/README.md``, row *batch*)."""


def refusing_one_run_calls(answer: Callable[[Frame], Frame]) -> Callable[[Frame], Frame]:
    """``answer`` for a batch ``run``: the :data:`ONE_RUN_CALLS` are answered ``capability_denied``
    (no single run's record is in context; a batch step writes through the workflow's ``save:``)."""
    def checked(call: Frame) -> Frame:
        wanted = call["params"].get("tool") if call["method"] == "call_tool" else call["method"]
        if wanted in ONE_RUN_CALLS:
            return error_frame(call["call_id"], "capability_denied",
                               f"{wanted!r} is not available in a batch run: it belongs to one run, and a batch "
                               "holds many (a batch step gets each record's values as inputs and writes through "
                               "the workflow's save:)")
        return answer(call)
    return checked


class HostOperations:
    """Answers ``rpc_call`` frames in ``ctx`` for a run about ``record_id``; large files go
    through ``scratch`` (the plugin's scratch folder). ``commit`` calls ``on_commit`` (the run
    engine makes the writes so far durable; by default they are flushed into the caller's
    transaction)."""

    def __init__(self, ctx: Ctx, *, record_id: str | None, scratch: Path,
                 on_commit: Callable[[], None] | None = None) -> None:
        self.ctx = ctx
        self.record_id = record_id
        self.scratch = scratch
        self.on_commit = on_commit or ctx.session.flush

    def __call__(self, call: Frame) -> Frame:
        name = call["params"].get("tool") if call["method"] == "call_tool" else call["method"]
        params = call["params"].get("args", {}) if call["method"] == "call_tool" else call["params"]
        handler = getattr(self, f"_{name}", None) if name in (*METHODS, *TOOLS) else None
        if handler is None:
            return error_frame(call["call_id"], "unknown_tool", f"there is no host tool {name!r} "
                                                                f"(tools: {', '.join(TOOLS)})")
        try:
            with self.ctx.session.begin_nested():  # a refused write leaves nothing half-done behind
                result = handler(**params)
        except TypeError as exc:
            return error_frame(call["call_id"], "invalid_params", f"{name}: {exc}")
        except (NotFound, Invalid, Conflict) as exc:
            kind = {NotFound: "not_found", Invalid: "invalid", Conflict: "conflict"}[type(exc)]
            return error_frame(call["call_id"], kind, exc.detail)
        except BenchbookError as exc:
            return error_frame(call["call_id"], "invalid", exc.detail)
        return {"type": "rpc_result", "call_id": call["call_id"], "result": json.loads(json.dumps(result))}

    def _record(self, record_id: str) -> RecordResponse:
        return RecordShaper(self.ctx.session).single(find_record(self.ctx.session, record_id))

    # ------------------------------------------------------------------ methods
    def _get_file(self, sha256: str) -> dict[str, Any]:
        row, path = files.find_file(self.ctx.session, self.ctx.files_dir, str(sha256))
        if row.size <= BINARY_INLINE_THRESHOLD:
            envelope = {"encoding": "base64", "data": base64.b64encode(path.read_bytes()).decode("ascii")}
        else:
            target = self.scratch / f"file-{row.sha256}"
            shutil.copyfile(path, target)
            envelope = {"encoding": "path", "path": str(target)}
        return {**envelope, "filename": row.filename, "size": row.size}

    def _update_record(self, record_id: str, data: dict[str, Any]) -> RecordResponse:
        rec = writes.update_record(self.ctx, str(record_id), {"data": data})
        return RecordShaper(self.ctx.session).single(rec)

    def _create_record(self, collection: str, schema_name: str, data: dict[str, Any] | None = None,
                       parent_record_id: str | None = None) -> RecordResponse:
        rec = writes.create_record(self.ctx, str(collection), {"schema_name": schema_name, "data": data or {},
                                                                "parent_record_id": parent_record_id})
        return RecordShaper(self.ctx.session).single(rec)

    def _commit(self) -> dict[str, Any]:
        self.on_commit()
        return {}

    # ------------------------------------------------------------------ tools
    def _get_context_record(self) -> RecordResponse:
        if not self.record_id:
            raise NotFound("this run is not about a record")
        return self._record(self.record_id)

    def _find_records(self, collection: str, schema: str | None = None, filter: Any = None,
                      limit: int = 50) -> dict[str, Any]:
        query = RecordQuery(schema=schema, filter=json.dumps(filter) if filter is not None else None)
        page = lists.list_page(self.ctx.session, str(collection), query, limit=max(1, min(int(limit), FIND_LIMIT)),
                               offset=0)
        return {"items": page["items"], "total": page["total"]}

    def _get_schema(self, name: str) -> SchemaResponse:
        return schema_response(self.ctx.session, find_schema(self.ctx.session, str(name)))

    def _store_file(self, filename: str, content: dict[str, Any]) -> FileResponse:
        problem = violation(content, "binary")
        if problem:
            raise Invalid(f"store_file: content is not a binary envelope: {problem}")
        if content["encoding"] == "base64":
            try:
                stream: Any = io.BytesIO(base64.b64decode(content["data"], validate=True))
            except ValueError as exc:
                raise Invalid(f"store_file: content is not valid base64 ({exc})") from None
        else:
            source = Path(content["path"]).resolve()
            if not source.is_relative_to(self.scratch.resolve()):
                raise Invalid("store_file: a path envelope must point into the run's scratch folder")
            stream = source.open("rb")
        with stream:
            row = files.store(self.ctx.session, self.ctx.files_dir, stream, str(filename))
        return files.file_response(row)
