"""Sending a generated command's request: the global options every command sees
(:class:`Settings`), the request an :class:`~benchbook.cli.operation.Operation` makes, sent
in-process (the whole app over ``httpx.ASGITransport``, no server) or to the server ``--url``
names; the answer is shown by :mod:`benchbook.cli.output`.

httpx and the app are imported when a request is sent, not when the command tree is built
(``benchbook --help`` stays fast).
"""
from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Coroutine
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from benchbook.cli.operation import Operation
from benchbook.cli.output import show_response
from benchbook.cli.project import locate_project

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
