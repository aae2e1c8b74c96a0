"""Sending a generated command's request and showing the response.

Requests go in-process (the whole app over ``httpx.ASGITransport``, no server) unless
``--url`` names a running server. Responses: JSON pretty-printed (or a rich table with
``--table``), other bodies (CSV, file bytes) written raw to stdout or ``--output FILE``;
an HTTP error prints ``error <status>: <detail>`` (and any ``errors`` entries, each naming
the parameter as the CLI spells it: ``--parent-record-id``, ``RECORD_ID``) to stderr and
exits with status 1. ``--limit 0`` (or ``--count``) on a paginated list prints only its ``total``. History entries show record
values keyed by field label, not field id (:func:`readable_history`).

httpx, rich and the app are imported when a request is sent or a table printed, not when the
command tree is built (``benchbook --help`` stays fast).
"""
from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Coroutine
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from benchbook.cli.spelling import cli_spelling

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
LOCAL_BASE = "http://127.0.0.1"
TIMEOUT_SECONDS, CONNECT_SECONDS = 60.0, 10.0


@dataclass
class Settings:
    """The global options every API command sees (``ctx.obj`` of the root group)."""

    project: str | None = None
    url: str | None = None
    table: bool = False
    columns: str | None = None  # --columns: comma-separated table columns
    columns_flag: str = "--columns"  # how the command spells it (records list: --table-columns)


class _Null:
    """Marker for a body property given explicitly as JSON ``null``."""

    def __repr__(self) -> str:
        return "null"


NULL = _Null()


@dataclass
class Operation:
    """One API operation as the CLI sends it: where each click parameter goes."""

    operation_id: str
    method: str
    path: str
    path_params: list[tuple[str, str]] = field(default_factory=list)  # (dest, name)
    query: list[tuple[str, str, bool]] = field(default_factory=list)  # (dest, name, is_array)
    body: list[tuple[str, str]] = field(default_factory=list)  # (dest, property)
    json_body: bool = False
    multipart: bool = False
    files: list[tuple[str, str]] = field(default_factory=list)  # (dest, part)
    raw_output: bool = False
    columns_flag: str = "--columns"  # the table's column chooser (--table-columns when the API has columns)
    cli_names: dict[str, str] = field(default_factory=dict)  # "query.x" / "body.x" / "path.x" -> --x / X

    def cli_names_by_http(self) -> dict[str, str]:
        """HTTP parameter name → how the CLI spells it (``{"force": "--force"}``)."""
        return {key.partition(".")[2]: cli for key, cli in self.cli_names.items()}

    def request(self, values: dict[str, Any]) -> dict[str, Any]:
        """``{method, url, params, json?, data?, files?}`` for httpx from the click ``values``
        (keyed by the parameters' dests; ``body_json`` is the parsed ``--body``). ``None`` or an
        empty tuple means "not given" and is not sent; :data:`NULL` is sent as JSON null.
        Never raises for values click has converted.
        """
        from urllib.parse import quote

        url = "/api" + self.path
        for dest, name in self.path_params:
            url = url.replace("{" + name + "}", quote(str(values[dest]), safe=""))
        params: list[tuple[str, Any]] = []
        for dest, name, is_array in self.query:
            value = values.get(dest)
            if is_array:
                params.extend((name, _query_text(v)) for v in value or ())
            elif value is not None:
                params.append((name, _query_text(value)))
        req: dict[str, Any] = {"method": self.method.upper(), "url": url, "params": params}
        body = dict(values.get("body_json") or {})
        for dest, prop in self.body:
            value = values.get(dest)
            if value is not None:
                body[prop] = None if value is NULL else value
        if self.json_body:
            req["json"] = body
        elif self.multipart:
            req["data"] = {k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}
            req["files"] = {part: Path(values[dest]) for dest, part in self.files if values.get(dest)}
        return req


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_body_option(value: str | None) -> dict[str, Any] | None:
    """The ``--body`` value parsed: JSON text, ``@file.json`` or ``@-`` (stdin); must be an object.

    Raises ``click.BadParameter`` for an unreadable file, bad JSON or a non-object.
    """
    if value is None:
        return None
    text = value
    if value.startswith("@"):
        source = value[1:]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text()
        except OSError as exc:
            raise click.BadParameter(f"cannot read {source}: {exc.strerror}", param_hint="--body") from exc
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc.msg} at position {exc.pos})",
                                 param_hint="--body") from exc
    if not isinstance(parsed, dict):
        raise click.BadParameter("must be a JSON object", param_hint="--body")
    return parsed



def run_request(settings: Settings, request: dict[str, Any], output_file: str | None = None,
                operation: Operation | None = None) -> None:
    """Send ``request`` (``{method, url, params, json?, data?, files?}``; ``url`` starts with ``/api``)
    and show the response as described in the module docstring; ``operation`` (the command's)
    names parameters in errors the CLI's way.

    Raises ``click.ClickException`` (exit 1) when the server cannot be reached and
    ``SystemExit(1)`` (via ``ctx.exit``) for an HTTP error status.
    """
    path = operation.path if operation is not None else None
    if operation is not None and sys.stderr.isatty():  # a progress bar is drawn only on a terminal
        from benchbook.cli.progress import send_followed  # (rich: not imported for scripts)

        response = send_followed(settings, request, operation.operation_id, lambda: send(settings, request, path=path))
    else:
        response = send(settings, request, path=path)
    total_only = ("limit", "0") in [(k, str(v)) for k, v in request.get("params") or []]
    show_response(response, table=settings.table, output_file=output_file, operation=operation,
                  columns=settings.columns, total_only=total_only, columns_flag=settings.columns_flag)


def send(settings: Settings, request: dict[str, Any], path: str | None = None) -> httpx.Response:
    """The response to ``request``, fully read: from ``settings.url`` or in-process. ``path``,
    the operation's documented path, lets an in-process app route (and import) only it.

    Raises ``click.ClickException`` when a ``--url`` server cannot be reached.
    """
    import httpx

    with ExitStack() as stack:
        req = dict(request)
        if req.get("files"):
            req["files"] = {part: (path.name, stack.enter_context(Path(path).open("rb")))
                            for part, path in req["files"].items()}
        else:
            req.pop("files", None)
        if settings.url:
            base = settings.url.rstrip("/")
            base = base.removesuffix("/api")
            try:
                with httpx.Client(base_url=base, timeout=httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_SECONDS)) as client:
                    return client.request(**req)
            except httpx.HTTPError as exc:
                raise click.ClickException(f"cannot reach {settings.url}: {exc}") from exc
        return in_own_loop(_send_in_process(settings.project, req, path))


def in_own_loop(work: Coroutine[Any, Any, T]) -> T:
    """``work`` run to its end in an event loop of its own (``asyncio.run``); in a thread of
    its own when this thread already runs a loop (a command called from a notebook's cell, or
    from a test beside a browser driver), where ``asyncio.run`` refuses to start; the caller's
    context variables go along (:func:`benchbook.domain.progress.reporting`)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    import contextvars
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:  # the caller's context goes along (a command's bar)
        return pool.submit(contextvars.copy_context().run, asyncio.run, work).result()


async def _send_in_process(project_dir: str | None, request: dict[str, Any], path: str | None) -> httpx.Response:
    import httpx

    from benchbook.http.app import create_app

    app = create_app(locate_project(project_dir), only_paths=frozenset({path}) if path else None)
    try:
        transport = httpx.ASGITransport(app=app)
        timeout = httpx.Timeout(TIMEOUT_SECONDS, connect=CONNECT_SECONDS)
        async with httpx.AsyncClient(transport=transport, base_url=LOCAL_BASE, timeout=timeout) as client:
            response = await client.request(**request)
            await response.aread()
            return response
    finally:
        services = getattr(app, "services", None)
        engine = getattr(getattr(services, "db", None), "engine", None)
        if engine is not None:
            engine.dispose()


def locate_project(explicit: str | None) -> Any:
    """:meth:`benchbook.settings.config.Project.locate` for a command: when no project is named and none
    is found upwards, the default project is used, and the first time (when it is created) a
    line on stderr says where it is and how to choose another (issue 14, item 14)."""
    import os

    from benchbook.settings.config import CONFIG_NAME, Project, default_project_root

    if not explicit and not os.environ.get("BENCHBOOK_PROJECT"):
        here = Path.cwd().resolve()
        if not any((folder / CONFIG_NAME).exists() for folder in (here, *here.parents)):
            default = default_project_root()
            if not (default / CONFIG_NAME).exists():
                click.echo(f"note: no benchbook project in {here} or above it; using the default project {default} "
                           "(created now). `benchbook init DIR` makes a project elsewhere; --project DIR or "
                           "BENCHBOOK_PROJECT chooses one.", err=True)
    return Project.locate(explicit)


def _is_json(response: httpx.Response) -> bool:
    media = str(response.headers.get("content-type", "")).split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def show_response(response: httpx.Response, *, table: bool = False, output_file: str | None = None,
                  operation: Operation | None = None, columns: str | None = None,
                  total_only: bool = False, columns_flag: str = "--columns") -> None:
    """Print ``response``: error to stderr + exit 1 for status >= 400; else JSON / table / raw
    bytes; ``total_only`` prints just the ``total`` of a paginated answer (``--limit 0``).

    Raises ``SystemExit(1)`` for an error status, ``click.UsageError`` for an unknown ``columns``.
    """
    if response.status_code >= 400:
        click.echo(error_text(response, operation), err=True)
        sys.exit(1)
    if not response.content:
        return
    if output_file is not None:
        Path(output_file).write_bytes(response.content)
        click.echo(f"wrote {len(response.content)} bytes to {output_file}", err=True)
        return
    if not _is_json(response):
        out = sys.stdout.buffer
        out.write(response.content)
        out.flush()
        return
    data = response.json()
    if total_only and isinstance(data, dict) and "total" in data:
        click.echo(str(data["total"]))
    elif table:
        print_table(data, columns=[c.strip() for c in columns.split(",") if c.strip()] if columns else None,
                    columns_flag=columns_flag)
    else:
        click.echo(json.dumps(readable_history(data), indent=2, ensure_ascii=False))


def readable_history(data: Any) -> Any:
    """``data`` with each history entry's record values (``new_data.data``, ``old_data.data``,
    keyed by field id in the API: spec *Record*) keyed by the field's label from the entry's own
    ``changes``, when those labels are distinct; anything else unchanged. Entries are found in a
    list, a page's ``items``, an event's ``entry`` or as the object itself."""
    if isinstance(data, list):
        return [readable_history(item) for item in data]
    if not isinstance(data, dict):
        return data
    if isinstance(data.get("items"), list):
        return {**data, "items": [readable_history(item) for item in data["items"]]}
    if isinstance(data.get("entry"), dict):
        return {**data, "entry": readable_history(data["entry"])}
    changes = data.get("changes")
    if not isinstance(changes, list) or "entity_type" not in data:
        return data
    labels = {c["field"]: c["label"] for c in changes if isinstance(c, dict) and c.get("field") and c.get("label")}
    if len(set(labels.values())) != len(labels):
        return data
    out = dict(data)
    for key in ("new_data", "old_data"):
        side = out.get(key)
        if isinstance(side, dict) and isinstance(side.get("data"), dict):
            out[key] = {**side, "data": {labels.get(k, k): v for k, v in side["data"].items()}}
    return out


def _cli_loc(loc: list[Any], operation: Operation | None) -> str:
    """An error entry's ``loc`` as the CLI spells it: ``["query", "where", 0]`` → ``--where[0]``,
    ``["path", "record_id"]`` → ``RECORD_ID``; ``query.x`` when the operation is not known."""
    if operation is not None and len(loc) >= 2:
        cli = operation.cli_names.get(f"{loc[0]}.{loc[1]}")
        if cli is not None:
            return cli + "".join(f"[{part}]" for part in loc[2:])
        if loc[0] == "body" and operation.json_body:
            return "--body " + ".".join(str(p) for p in loc[1:])
    return ".".join(str(p) for p in loc)


def _cli_detail(detail: str, operation: Operation | None) -> str:
    """``detail`` with parameter names the CLI spells otherwise replaced (snake_case names and
    backticked ones only: ``parent_record_id`` → ``--parent-record-id``), backticked settings
    too (`` `force=true` `` → `` `--force` ``, `` `references=clear` `` → `` `--references clear` ``)."""
    if operation is None:
        return detail
    for key, cli in operation.cli_names.items():
        name = key.partition(".")[2]
        if cli.lstrip("-") != name and ("_" in name or name in CLI_SPELLED):
            detail = re.sub(rf"(?<![\w-]){re.escape(name)}(?![\w-])", cli, detail)
        detail = detail.replace(f"`{name}`", f"`{cli}`")
    return cli_spelling(detail, operation.cli_names_by_http())


CLI_SPELLED = frozenset({"dataset", "dataset_name", "collection_name"})


def error_text(response: httpx.Response, operation: Operation | None = None) -> str:
    """``error <status>: <detail>`` plus one ``  <parameter>: <msg>`` line per ``errors``
    entry, parameters named as the CLI spells them when ``operation`` is given."""
    detail: Any = response.reason_phrase
    entries: list[Any] = []
    extra = ""
    if _is_json(response):
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict):
            detail = body.get("detail", detail)
            entries = body.get("errors") or []
            if body.get("request_id"):
                extra = f" (request id {body['request_id']})"
    elif response.text.strip():
        detail = response.text.strip()[:500]
    text = detail if isinstance(detail, str) else json.dumps(detail)
    lines = [f"error {response.status_code}: {_cli_detail(text, operation)}{extra}"]
    for entry in entries:
        if isinstance(entry, dict):
            loc_parts = list(entry.get("loc") or [])
            msg = str(entry.get("msg", ""))
            if len(loc_parts) >= 2 and msg.startswith(f"{loc_parts[1]}: "):
                msg = msg[len(str(loc_parts[1])) + 2:]
            loc = _cli_loc(loc_parts, operation)
            lines.append(f"  {loc}: {_cli_detail(msg, operation)}" if loc else f"  {msg}")
        else:
            lines.append(f"  {entry}")
    return "\n".join(lines)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


SHORT_ID = 8
"""Characters of a record id shown in tables: its random tail, which every command taking a
record id accepts (``benchbook.domain.ids.SHORT_TAIL``)."""


def _short(value: Any) -> Any:
    return value[-SHORT_ID:] if isinstance(value, str) and len(value) == 26 else value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _labelled(data: dict[str, Any], labels: Any) -> dict[str, Any]:
    """``data`` with each reference value (an id ``labels``, the record's ``reference_labels``,
    knows) shown by its target's label, its natural name, or its short id when the target has
    none; a reference_list as its labels joined with ``, ``. The ids are a column choice:
    ``--columns carrier.id``."""
    if not isinstance(labels, dict) or not labels:
        return data

    def label(target: str) -> str:
        return str(labels.get(target) or _short(target))

    out = {}
    for name, value in data.items():
        if isinstance(value, str) and value in labels:
            value = label(value)
        elif isinstance(value, list) and value and all(isinstance(v, str) and v in labels for v in value):
            value = ", ".join(label(v) for v in value)
        out[name] = value
    return out


def _record_row(row: Any) -> Any:
    """A record (an object with a ``data`` object) as its identity plus its field values, a
    reference by its target's label (:func:`_labelled`); a history entry with its ``changes``
    as ``label: before → after`` text (field names, not ids). Record ids are shortened to their
    last :data:`SHORT_ID` characters."""
    if _is_record(row):
        derived = row.get("derived") if isinstance(row.get("derived"), dict) else {}
        return {"id": _short(row.get("id")), "schema_name": row["schema_name"],
                "natural_name": row.get("natural_name"), "parent": _short(row.get("parent_record_id")),
                **_labelled(row["data"], row.get("reference_labels")), **derived}
    if isinstance(row, dict) and isinstance(row.get("changes"), list) and "action" in row:
        out = {k: v for k, v in row.items() if k not in ("changes", "new_data", "old_data")}
        out["changes"] = changes_text(row["changes"])
        return out
    if isinstance(row, dict) and row.get("kind") == "entry" and isinstance(row.get("entry"), dict):
        entry = row["entry"]
        return {"id": row.get("id"), "kind": "entry", "timestamp": row.get("timestamp"),
                "action": entry.get("action"), "entity_type": entry.get("entity_type"),
                "entity_id": entry.get("entity_id"), "actor": entry.get("actor"),
                "changes": changes_text(entry.get("changes") or [])}
    return row


def _is_record(row: Any) -> bool:
    return isinstance(row, dict) and isinstance(row.get("data"), dict) and "schema_name" in row


def changes_text(changes: list[Any]) -> str:
    """History ``changes`` as ``label: before → after`` joined with ``; `` (the change's
    ``label``, else its field name; spec *Audit entry*)."""
    parts = []
    for change in changes:
        if not isinstance(change, dict):
            continue
        name = change.get("label") or change.get("field")
        before, after = change.get("before"), change.get("after")
        if change.get("deleted"):
            parts.append(f"{name}: {_cell(before)} (deleted)")
        else:
            parts.append(f"{name}: {_cell(before) or '∅'} → {_cell(after) or '∅'}")
    return "; ".join(parts)


def table_columns(rows: list[dict[str, Any]], chosen: list[str] | None, width: int,
                  flag: str = "--columns") -> tuple[list[str], dict[str, list[str]]]:
    """``(columns shown, {reason: columns left out})`` for ``rows``: ``chosen`` as given (a name
    no row has raises ``click.UsageError`` listing those there are), else the scalar columns
    that hold a value in some row, as many as ``width`` characters fit, in order."""
    seen: list[str] = []
    for row in rows:
        seen.extend(k for k in row if k not in seen)
    if chosen:
        unknown = [c for c in chosen if c not in seen]
        if unknown:
            raise click.UsageError(f"{flag}: no column {', '.join(unknown)}; the columns are {', '.join(seen)}")
        return chosen, {}
    left: dict[str, list[str]] = {}
    scalar = [c for c in seen if all(_scalar(r.get(c)) for r in rows)]
    left_nested = [c for c in seen if c not in scalar]
    if left_nested:
        left["lists or objects"] = left_nested
    shown = [c for c in scalar if any(r.get(c) is not None for r in rows)] or scalar
    empty = [c for c in scalar if c not in shown]
    if empty:
        left["empty in every row"] = empty
    fitted: list[str] = []
    used = 4
    for column in shown:
        need = max(len(column), min(12, max((len(_cell(r.get(column))) for r in rows), default=0))) + 3
        if fitted and used + need > width:
            left["no room"] = shown[len(fitted):]
            break
        fitted.append(column)
        used += need
    return fitted, left


def print_table(data: Any, columns: list[str] | None = None, columns_flag: str = "--columns") -> None:
    """Render JSON ``data`` as a rich table on stdout.

    A list of objects, or a paginated object ``{items: [...], ...}``, gives one row per item
    (records flattened to their values, history entries with their changes by field name);
    ``columns`` picks the columns, else the scalar columns with a value that fit the terminal,
    and a line under the table names every column left out and why, and how to choose
    (``columns_flag``: ``--columns``, or ``--table-columns`` where the operation has its own
    ``columns``); nothing is dropped silently. Record ids are shown by their last 8 characters,
    which every command taking a record id accepts. Any other object is a key/value table; a list of scalars one
    ``value`` column; a bare scalar is printed as is.
    """
    from rich.console import Console
    from rich.table import Table

    from benchbook.cli.pages import caption as page_caption

    width = _width()
    console = Console(file=sys.stdout, width=width, soft_wrap=False)
    caption = None
    rows = data
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        rows = data["items"]
        caption = page_caption(data, len(rows))
    if isinstance(rows, list):
        rows = [_record_row(r) for r in rows]
        table = Table(caption=caption, show_lines=False)
        notes: list[str] = []
        if rows and all(isinstance(r, dict) for r in rows):
            shown, left = table_columns(rows, columns, width, columns_flag)
            for column in shown:
                table.add_column(column, overflow="fold", min_width=min(len(column), 12))
            for row in rows:
                table.add_row(*(_cell(row.get(c)) for c in shown))
            for reason, names in left.items():
                notes.append(f"left out ({reason}): {', '.join(names)}")
            if left:
                notes.append(f"choose columns with {columns_flag} " + ",".join([*shown, *left.get("no room", [])][:4]) + ",…")
            if isinstance(data, (dict, list)) and any(_is_record(r) for r in (data.get("items") if isinstance(
                    data, dict) else data) or []) and ("id" in shown or "parent" in shown):
                notes.append(f"record ids are shown by their last {SHORT_ID} characters; commands take them as ids")
        else:
            table.add_column("value", overflow="fold")
            for row in rows:
                table.add_row(_cell(row))
        console.print(table)
        for note in notes:
            console.print(note, style="dim", highlight=False, soft_wrap=True)
    elif isinstance(data, dict):
        table = Table(show_header=True)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("value", overflow="fold")
        shown_data = data
        if isinstance(data.get("changes"), list):
            shown_data = _record_row(data)
        elif _is_record(data):  # its values first, then everything else the answer holds
            rest = {k: v for k, v in data.items() if k not in ("id", "schema_name", "natural_name",
                                                              "parent_record_id", "data", "derived",
                                                              "reference_labels")}
            shown_data = {**_record_row(data), **rest}
        for key, value in shown_data.items():
            if columns and key not in columns:
                continue
            table.add_row(str(key), _cell(value))
        console.print(table)
    else:
        click.echo(_cell(data))


def _width() -> int:
    import shutil

    return max(shutil.get_terminal_size((120, 24)).columns, 80)
