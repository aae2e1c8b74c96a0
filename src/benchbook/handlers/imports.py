"""Handlers of the ``imports`` tag: ``POST /collections/{name_or_id}/import`` (an
extension; docs/import.md, docs/decisions.md *API choices*). The form was parsed while it
streamed in (``validation.StreamingMultiPartValidator``); the file part is read from its spool."""
from __future__ import annotations

import io
from typing import Any

from connexion.context import scope
from starlette.datastructures import FormData, UploadFile

from benchbook.domain import files
from benchbook.domain.errors import Invalid, error_entry
from benchbook.domain.imports.dates import DateRules
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.rejected import rejected_file, rejected_name
from benchbook.domain.imports.run import ImportOptions, import_in_savepoint, problems_error
from benchbook.domain.imports.undo import undo_import as undo
from benchbook.handlers.forms import parsed_form
from benchbook.handlers.uow import write

Body = dict[str, Any]
_ORDER = {"day_first": True, "month_first": False}


def _text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    return value.strip() or None if isinstance(value, str) else None


def _flag(form: FormData, name: str) -> bool:
    return (_text(form, name) or "false").lower() in ("true", "1", "yes", "on")


def run_import(name_or_id: str, **_: Any) -> tuple[Body, int]:
    form = parsed_form(scope) or FormData()
    upload = form.get("file")
    try:
        if not isinstance(upload, UploadFile):
            raise Invalid("Request validation failed", [error_entry(
                ["body", "file"], "part 'file' must be a file (a part with a filename)", "type", None)])
        upload.file.seek(0)
        name = upload.filename or "import"
        table = read_table(upload.file.read(), name, fmt=_text(form, "format"), delimiter=_text(form, "delimiter"),
                           sheet=_text(form, "sheet"), encoding=_text(form, "encoding"))
        options = ImportOptions(
            collection=name_or_id, schema=_text(form, "schema"), create_schema=_flag(form, "create_schema"),
            key=[k.strip() for k in (_text(form, "key") or "").split(",") if k.strip()],
            parent_key=_text(form, "parent_key"), skip_bad=_flag(form, "skip_bad"), dry_run=_flag(form, "dry_run"),
            create_missing=_flag(form, "create_missing"), references=_text(form, "references") or "none",
            dates=DateRules(dayfirst=_ORDER.get(_text(form, "date_order") or ""),
                            date_format=_text(form, "date_format")))
        with write() as ctx:
            result = import_in_savepoint(ctx, table, options)
            if result.failed:
                raise problems_error(result)
            body = {**result.as_json(), "rejected_file": None}
            if result.rejected:
                stored = files.store(ctx.session, ctx.files_dir, io.BytesIO(rejected_file(table, result.rejected)),
                                     rejected_name(name, table))
                body["rejected_file"] = files.file_response(stored)
            return body, 200
    finally:
        for _key, part in form.multi_items():
            if isinstance(part, UploadFile):
                part.file.close()


def undo_import(batch_id: str, body: Body | None = None) -> tuple[Body, int]:
    with write() as ctx:
        return undo(ctx, batch_id, force=bool((body or {}).get("force"))), 200
