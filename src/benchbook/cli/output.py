"""Showing a command's response: JSON pretty-printed (or a rich table with ``--table``), other
bodies (CSV, file bytes) written raw to stdout or ``--output FILE``; an HTTP error prints
``error <status>: <detail>`` (and any ``errors`` entries, each naming the parameter as the CLI
spells it: ``--parent-record-id``, ``RECORD_ID``) to stderr and exits with status 1. ``--limit 0``
(or ``--count``) on a paginated list prints only its ``total``. History entries show record
values keyed by field label, not field id (:func:`readable_history`).

rich is imported when a table is printed, not when the command tree is built.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from benchbook.cli.spelling import cli_spelling

if TYPE_CHECKING:
    import httpx

    from benchbook.cli.operation import Operation


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
    keyed by field id in the API: OpenAPI ``RecordResponse``) keyed by the field's label from the entry's own
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
    ``label``, else its field name; OpenAPI ``AuditLogResponse``)."""
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
    return _automatic_columns(rows, seen, width)


def _automatic_columns(rows: list[dict[str, Any]], seen: list[str],
                       width: int) -> tuple[list[str], dict[str, list[str]]]:
    """:func:`table_columns` when no columns are chosen: of ``seen`` (every row's keys, in order), the scalar
    columns holding a value in some row (all scalar ones when none does) that fit ``width``, and the others
    by reason (``lists or objects``, ``empty in every row``, ``no room``; reasons with none left out)."""
    scalar = [c for c in seen if all(_scalar(r.get(c)) for r in rows)]
    shown = [c for c in scalar if any(r.get(c) is not None for r in rows)] or scalar
    left = {"lists or objects": [c for c in seen if c not in scalar],
            "empty in every row": [c for c in scalar if c not in shown]}
    fitted = _fitted(rows, shown, width)
    left["no room"] = shown[len(fitted):]
    return fitted, {reason: names for reason, names in left.items() if names}


def _fitted(rows: list[dict[str, Any]], columns: list[str], width: int) -> list[str]:
    """The first of ``columns`` that fit in ``width`` characters (at least one), each as wide as
    its name or its longest cell up to 12 characters, plus its borders."""
    fitted: list[str] = []
    used = 4
    for column in columns:
        need = max(len(column), min(12, max((len(_cell(r.get(column))) for r in rows), default=0))) + 3
        if fitted and used + need > width:
            break
        fitted.append(column)
        used += need
    return fitted


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

    width = _width()
    console = Console(file=sys.stdout, width=width, soft_wrap=False)
    if isinstance(data, list) or (isinstance(data, dict) and isinstance(data.get("items"), list)):
        table, notes = _rows_table(data, columns, columns_flag, width)
        console.print(table)
        for note in notes:
            console.print(note, style="dim", highlight=False, soft_wrap=True)
    elif isinstance(data, dict):
        console.print(_object_table(data, columns))
    else:
        click.echo(_cell(data))


def _rows_table(data: Any, columns: list[str] | None, columns_flag: str, width: int) -> tuple[Any, list[str]]:
    """The table of a list (or a page's ``items``) and the notes printed under it."""
    from rich.table import Table

    from benchbook.cli.pages import caption as page_caption

    items = data["items"] if isinstance(data, dict) else data
    rows = [_record_row(r) for r in items]
    table = Table(caption=page_caption(data, len(rows)) if isinstance(data, dict) else None, show_lines=False)
    if not rows or not all(isinstance(r, dict) for r in rows):
        table.add_column("value", overflow="fold")
        for row in rows:
            table.add_row(_cell(row))
        return table, []
    shown, left = table_columns(rows, columns, width, columns_flag)
    for column in shown:
        table.add_column(column, overflow="fold", min_width=min(len(column), 12))
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in shown))
    notes = [f"left out ({reason}): {', '.join(names)}" for reason, names in left.items()]
    if left:
        notes.append(f"choose columns with {columns_flag} " + ",".join([*shown, *left.get("no room", [])][:4]) + ",…")
    if any(_is_record(r) for r in items) and ("id" in shown or "parent" in shown):
        notes.append(f"record ids are shown by their last {SHORT_ID} characters; commands take them as ids")
    return table, notes


_RECORD_PARTS = ("id", "schema_name", "natural_name", "parent_record_id", "data", "derived", "reference_labels")
"""What a record's own row in a key/value table already shows (:func:`_record_row`)."""


def _object_table(data: dict[str, Any], columns: list[str] | None) -> Any:
    """A key/value table of one object: a history entry with its changes by field name, a record
    with its values first, then everything else the answer holds; ``columns`` keeps only those keys."""
    from rich.table import Table

    table = Table(show_header=True)
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    shown = data
    if isinstance(data.get("changes"), list):
        shown = _record_row(data)
    elif _is_record(data):
        shown = {**_record_row(data), **{k: v for k, v in data.items() if k not in _RECORD_PARTS}}
    for key, value in shown.items():
        if columns and key not in columns:
            continue
        table.add_row(str(key), _cell(value))
    return table


def _width() -> int:
    import shutil

    return max(shutil.get_terminal_size((120, 24)).columns, 80)
