"""Sending a generated command's request and showing the response.

Requests go in-process (the whole app over ``httpx.ASGITransport``, no server) unless
``--url`` names a running server. Responses: JSON pretty-printed (or a rich table with
``--table``), other bodies (CSV, file bytes) written raw to stdout or ``--output FILE``;
an HTTP error prints ``error <status>: <detail>`` (and any ``errors`` entries) to stderr and
exits with status 1.
"""
from __future__ import annotations

import asyncio
import json
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import httpx

LOCAL_BASE = "http://127.0.0.1"
TIMEOUT = httpx.Timeout(60.0, connect=10.0)


@dataclass
class Settings:
    """The global options every API command sees (``ctx.obj`` of the root group)."""

    project: str | None = None
    url: str | None = None
    table: bool = False


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



def run_request(settings: Settings, request: dict[str, Any], output_file: str | None = None) -> None:
    """Send ``request`` (``{method, url, params, json?, data?, files?}``; ``url`` starts with ``/api``)
    and show the response as described in the module docstring.

    Raises ``click.ClickException`` (exit 1) when the server cannot be reached and
    ``SystemExit(1)`` (via ``ctx.exit``) for an HTTP error status.
    """
    response = send(settings, request)
    show_response(response, table=settings.table, output_file=output_file)


def send(settings: Settings, request: dict[str, Any]) -> httpx.Response:
    """The response to ``request``, fully read: from ``settings.url`` or in-process.

    Raises ``click.ClickException`` when a ``--url`` server cannot be reached.
    """
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
                with httpx.Client(base_url=base, timeout=TIMEOUT) as client:
                    return client.request(**req)
            except httpx.HTTPError as exc:
                raise click.ClickException(f"cannot reach {settings.url}: {exc}") from exc
        return asyncio.run(_send_in_process(settings.project, req))


async def _send_in_process(project_dir: str | None, request: dict[str, Any]) -> httpx.Response:
    from benchbook.app import create_app
    from benchbook.config import Project

    app = create_app(Project.locate(project_dir))
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=LOCAL_BASE, timeout=TIMEOUT) as client:
            response = await client.request(**request)
            await response.aread()
            return response
    finally:
        services = getattr(app, "services", None)
        engine = getattr(getattr(services, "db", None), "engine", None)
        if engine is not None:
            engine.dispose()


def _is_json(response: httpx.Response) -> bool:
    media = str(response.headers.get("content-type", "")).split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def show_response(response: httpx.Response, *, table: bool = False, output_file: str | None = None) -> None:
    """Print ``response``: error to stderr + exit 1 for status >= 400; else JSON / table / raw bytes.

    Raises ``SystemExit(1)`` for an error status.
    """
    if response.status_code >= 400:
        click.echo(error_text(response), err=True)
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
    if table:
        print_table(data)
    else:
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def error_text(response: httpx.Response) -> str:
    """``error <status>: <detail>`` plus one ``  <loc>: <msg>`` line per ``errors`` entry."""
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
    lines = [f"error {response.status_code}: {detail if isinstance(detail, str) else json.dumps(detail)}{extra}"]
    for entry in entries:
        if isinstance(entry, dict):
            loc = ".".join(str(p) for p in entry.get("loc") or [])
            lines.append(f"  {loc}: {entry.get('msg', '')}" if loc else f"  {entry.get('msg', '')}")
        else:
            lines.append(f"  {entry}")
    return "\n".join(lines)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def _record_row(row: Any) -> Any:
    """A record (an object with a ``data`` object) as its identity plus its field values."""
    if not (isinstance(row, dict) and isinstance(row.get("data"), dict) and "schema_name" in row):
        return row
    return {"id": row.get("id"), "schema_name": row["schema_name"], "natural_name": row.get("natural_name"),
            **row["data"]}


def print_table(data: Any) -> None:
    """Render JSON ``data`` as a rich table on stdout.

    A list of objects, or a paginated object ``{items: [...], ...}``, gives one row per item with
    its scalar columns, leaving out columns empty in every row (the page keys go in the caption); any other object a key/value table; a
    list of scalars one ``value`` column; a bare scalar is printed as is.
    """
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stdout, width=_width(), soft_wrap=False)
    caption = None
    rows = data
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        rows = data["items"]
        caption = ", ".join(f"{k}: {_cell(v)}" for k, v in data.items() if k != "items" and _scalar(v)) or None
    if isinstance(rows, list):
        rows = [_record_row(r) for r in rows]
        table = Table(caption=caption, show_lines=False)
        if rows and all(isinstance(r, dict) for r in rows):
            columns: list[str] = []
            for row in rows:
                for key, value in row.items():
                    if key not in columns and _scalar(value):
                        columns.append(key)
            columns = [c for c in columns if all(_scalar(r.get(c)) for r in rows)
                       and any(r.get(c) is not None for r in rows)] or columns
            for column in columns:
                table.add_column(column, overflow="fold", min_width=min(len(column), 12))
            for row in rows:
                table.add_row(*(_cell(row.get(c)) for c in columns))
        else:
            table.add_column("value", overflow="fold")
            for row in rows:
                table.add_row(_cell(row))
        console.print(table)
    elif isinstance(data, dict):
        table = Table(show_header=True)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("value", overflow="fold")
        for key, value in data.items():
            table.add_row(str(key), _cell(value))
        console.print(table)
    else:
        click.echo(_cell(data))


def _width() -> int:
    import shutil

    return max(shutil.get_terminal_size((120, 24)).columns, 80)
