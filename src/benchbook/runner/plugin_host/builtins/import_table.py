"""``benchbook.import-table``: the rows of a CSV, TSV or Excel file become child records.

Input ``file``: a stored file (usually a file field of the run's record). Config ``schema``: the
child schema whose records are made, one per row, under the run's record; ``collection``
(default the record's); ``sheet`` (Excel: a sheet name, or its position counting from 1;
default the first sheet); ``delimiter`` (CSV: one character or ``"tab"``; default sniffed
among ``,`` ``;`` tab ``|``, and tab for ``.tsv``/``.tab`` files).

Reading (pandas): a file starting like a zip archive (or named ``.xlsx``/``.xlsm``) is read as
an Excel workbook with openpyxl; anything else as delimited text (UTF-8, with or without BOM,
else Windows-1252). The first non-blank row is the header; each header names a field of the
child schema, matched case-insensitively and ignoring surrounding spaces. Cells are trimmed;
blank cells give no value; blank rows are skipped without a word. Excel values are sent typed
for the field (whole numbers as integers, dates as ``YYYY-MM-DD``, date-times as ISO 8601);
text cells as they are — the domain coerces and validates them against the field types and
restrictions exactly as for any new record.

Problems (counted in output ``problems``, the first 20 in ``report`` with their row numbers,
the header being row 1 of a CSV file and sheet rows counting as Excel shows them): a column
matching no field, a second column for the same field, a headerless column holding values
(those columns are ignored); a row with more cells than the header, a row repeating an earlier
row's values for one of the schema's uniqueness keys, and a row the host refuses as invalid
(those rows are skipped, the others are created). Other refusals fail the step: a row that
clashes with an existing record's uniqueness key (kind ``conflict``), an unknown collection.
Fails with ``invalid_config`` when the schema is not a child schema of the record's, with
``invalid_input`` when no column matches a field or the file cannot be read, or when the file is
larger than ``max_bytes`` (default 512 MiB, at most 4 GiB: it is read whole into memory, so this
is checked before reading) or holds more than ``max_rows`` rows (default 1,000,000, at most
10,000,000), the same defaults as ``[limits] import_bytes`` and ``import_rows`` of
``benchbook import`` (docs/limits.md); nothing is created then.
"""
from __future__ import annotations

import csv
import io
import json
import math
import warnings
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import PurePath
from typing import Any

from benchbook.domain.imports.readers import sniff_delimiter
from benchbook.plugin import Context, Plugin, PluginError, PluginRpcError
from benchbook.runner.plugin_host.builtins._stored import Problems, StoredFile, fetch
from benchbook.settings import limits

REPORT_LIMIT = 20
"""Problems listed in ``report`` (all are counted)."""
DEFAULT_MAX_BYTES = limits.DEFAULT.import_bytes
"""As ``benchbook import`` reads files by default (``[limits] import_bytes``)."""
MAX_BYTES = 4096 * limits.MIB
DEFAULT_MAX_ROWS = limits.DEFAULT.import_rows
"""As ``benchbook import`` by default (``[limits] import_rows``)."""
MAX_ROWS = 10_000_000
EXCEL_EXTENSIONS = (".xlsx", ".xlsm")
ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0"
TEXT_ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")

plugin = Plugin(
    id="benchbook.import-table", name="Import table rows", category="records",
    description="Creates one child record of the configured schema under the run's record for each row of a "
                "CSV, TSV or Excel (.xlsx) file. Columns are matched to the schema's fields by name "
                "(case-insensitive); values are checked by the field types. Bad rows and unmatched columns are "
                "skipped and counted in 'problems'; 'report' lists the first 20 with their row numbers.",
    inputs={"file": {"type": "file", "required": True, "description": "the CSV, TSV or .xlsx file to import"}},
    outputs={"created": {"type": "integer", "required": True, "description": "records created"},
             "problems": {"type": "integer", "required": True,
                          "description": "rows skipped plus columns ignored"},
             "report": {"type": "json", "required": True,
                        "description": "the first 20 problems: [{row, column?, problem}] (row 1 = header)"}},
    config_schema={
        "type": "object",
        "properties": {
            "schema": {"type": "string", "minLength": 1,
                       "description": "the child schema of the records to create"},
            "collection": {"type": "string", "minLength": 1,
                           "description": "where to create them (default: the run's record's collection)"},
            "sheet": {"type": ["string", "integer"], "minimum": 1,
                      "description": "Excel: sheet name, or position (1 = first sheet; the default)"},
            "delimiter": {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 1},
                                    {"enum": ["tab", "\\t"]}],
                          "description": "CSV: the delimiter (default: sniffed)"},
            "max_bytes": {"type": "integer", "minimum": 1, "maximum": MAX_BYTES, "default": DEFAULT_MAX_BYTES,
                          "description": "largest file imported (it is read whole into memory)"},
            "max_rows": {"type": "integer", "minimum": 1, "maximum": MAX_ROWS, "default": DEFAULT_MAX_ROWS,
                         "description": "most rows imported (the header not counted)"},
        },
        "required": ["schema"],
        "additionalProperties": False,
    },
    capabilities=["get_context_record", "get_schema", "get_file", "create_record"],
)


@dataclass
class Table:
    """A file's rows as cells: ``header`` (row ``header_row``) and ``rows`` as (row number, cells)."""

    header: list[Any]
    header_row: int
    rows: list[tuple[int, list[Any]]]


# ---------------------------------------------------------------------------------- reading
def _blank(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if isinstance(value, str):
        return not value.strip()
    try:
        import pandas as pd
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _table(cells: list[list[Any]], first_row: int) -> Table:
    start = next((i for i, row in enumerate(cells) if not all(_blank(c) for c in row)), None)
    if start is None:
        raise PluginError("invalid_input", "the file holds no rows (not even a header)")
    header = list(cells[start])
    while header and _blank(header[-1]):
        header.pop()
    return Table(header, first_row + start,
                 [(first_row + i, list(row)) for i, row in enumerate(cells) if i > start])


def _decode(raw: bytes) -> str:
    for encoding in TEXT_ENCODINGS:
        try:
            return raw.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def _read_text(stored: StoredFile, config: dict[str, Any]) -> Table:
    import pandas as pd
    text = _decode(stored.read())
    sep = sniff_delimiter(text, tab=stored.filename.lower().endswith((".tsv", ".tab")),
                          given=config.get("delimiter"))
    try:
        width = max((len(row) for row in csv.reader(io.StringIO(text), delimiter=sep)), default=0)
        if width == 0:
            raise PluginError("invalid_input", f"{stored.filename} holds no rows (not even a header)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            frame = pd.read_csv(io.StringIO(text), sep=sep, header=None, names=list(range(width)), dtype=str,
                                keep_default_na=False, na_filter=False, skip_blank_lines=False)
    except (csv.Error, pd.errors.ParserError, ValueError) as exc:
        raise PluginError("invalid_input", f"{stored.filename} is not readable as delimited text "
                                           f"(delimiter {sep!r}): {exc}") from None
    return _table(frame.to_numpy(dtype=object).tolist(), first_row=1)


def _sheet_name(names: list[str], wanted: str | int | None, filename: str) -> str:
    if wanted is None:
        if not names:
            raise PluginError("invalid_input", f"{filename} has no sheets")
        return names[0]
    if isinstance(wanted, int):
        if wanted > len(names):
            raise PluginError("invalid_config", f"sheet {wanted}: {filename} has {len(names)} sheet(s) "
                                                f"({', '.join(names)})")
        return names[wanted - 1]
    if wanted not in names:
        raise PluginError("invalid_config", f"{filename} has no sheet {wanted!r} (sheets: {', '.join(names)})")
    return wanted


def _read_excel(stored: StoredFile, config: dict[str, Any]) -> Table:
    import pandas as pd
    try:
        import openpyxl  # noqa: F401  (pandas' engine for .xlsx)
    except ImportError:
        raise PluginError("plugin_error", "reading .xlsx files needs the openpyxl package; install it "
                                          "(pip install openpyxl) or save the sheet as CSV") from None
    with stored.open() as stream, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            book = pd.ExcelFile(stream, engine="openpyxl")
        except Exception as exc:  # noqa: BLE001 (openpyxl raises many kinds for a damaged workbook)
            raise PluginError("invalid_input", f"{stored.filename} is not a readable .xlsx workbook: "
                                               f"{type(exc).__name__}: {exc}") from None
        with book:
            name = _sheet_name([str(n) for n in book.sheet_names], config.get("sheet"), stored.filename)
            frame = book.parse(name, header=None, dtype=object)
    return _table(frame.to_numpy(dtype=object).tolist(), first_row=1)


def read_table(stored: StoredFile, config: dict[str, Any]) -> Table:
    """The rows of ``stored``: an Excel workbook or delimited text (see the module docstring)."""
    head = stored.head(8)
    suffix = PurePath(stored.filename).suffix.lower()
    if head.startswith(OLE_MAGIC) or suffix in (".xls", ".ods"):
        raise PluginError("invalid_input", f"{stored.filename}: only .xlsx workbooks can be read; save it as "
                                           ".xlsx or CSV")
    if head.startswith(ZIP_MAGIC) or suffix in EXCEL_EXTENSIONS:
        return _read_excel(stored, config)
    return _read_text(stored, config)


# ---------------------------------------------------------------------------------- values
def _whole(number: float) -> int | float:
    return int(number) if number.is_integer() else number


def cell_value(value: Any, field_type: str) -> Any:
    """A cell as sent for a field of ``field_type`` (None when blank): text trimmed, numbers
    and dates from a workbook typed for the field; the domain does the checking."""
    if _blank(value):
        return None
    import numpy as np
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return value if field_type == "boolean" else str(value).lower()
    if isinstance(value, (int, float)):
        if field_type in ("integer", "float", "boolean"):
            return _whole(float(value)) if isinstance(value, float) else value
        return str(_whole(float(value)) if isinstance(value, float) else value)
    if isinstance(value, datetime):
        if field_type == "date" or (field_type != "datetime" and value.time() == time()):
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    return str(value)


# ---------------------------------------------------------------------------------- the run
def _columns(table: Table, fields: dict[str, dict[str, Any]], schema: str,
             problems: Problems) -> dict[int, dict[str, Any]]:
    mapping: dict[int, dict[str, Any]] = {}
    taken: dict[str, str] = {}
    for index, head in enumerate(table.header):
        title = "" if _blank(head) else str(cell_value(head, "string"))
        if not title:
            if any(index < len(cells) and not _blank(cells[index]) for _, cells in table.rows):
                problems.add(row=table.header_row, column=f"#{index + 1}",
                             problem=f"column {index + 1} has values but no header; ignored")
            continue
        field = fields.get(title.strip().lower())
        if field is None:
            problems.add(row=table.header_row, column=title,
                         problem=f"column {title!r} matches no field of schema {schema!r}; ignored")
        elif field["name"] in taken:
            problems.add(row=table.header_row, column=title,
                         problem=f"column {title!r} is a second column for field {field['name']!r} "
                                 f"(first: {taken[field['name']]!r}); ignored")
        else:
            taken[field["name"]] = title
            mapping[index] = field
    return mapping


@plugin.run
def run(ctx: Context, inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """``{created, problems, report}`` (the module docstring gives the rules and the ``PluginError`` kinds):
    checks the schema, reads the file within its limits, maps its columns, then creates the rows."""
    record = ctx.get_context_record()
    collection = config.get("collection") or record["collection"]
    schema = _child_schema(ctx, record, config["schema"])
    fields = {f["name"].lower(): f for f in schema["fields"] if not f.get("deleted_at")}
    stored, table = _read_within_limits(ctx, inputs["file"], config)
    problems = Problems(REPORT_LIMIT)
    mapping = _columns(table, fields, schema["name"], problems)
    if not mapping:
        raise PluginError("invalid_input", f"no column of {stored.filename} matches a field of schema "
                                           f"{schema['name']!r} (columns: "
                                           f"{', '.join(str(h) for h in table.header) or 'none'}; fields: "
                                           f"{', '.join(f['name'] for f in fields.values())})")
    created = _create_rows(ctx, table, mapping, schema, collection, record["id"], problems)
    ctx.log(f"{stored.filename}: {created} {schema['name']} record(s) created, {problems.count} problem(s)")
    return {"created": created, "problems": problems.count, "report": problems.items}


def _child_schema(ctx: Context, record: dict[str, Any], name: str) -> dict[str, Any]:
    """The schema ``name`` (as ``ctx.get_schema`` gives it); ``PluginError("invalid_config")`` when it is
    not a child schema of ``record``'s."""
    schema = ctx.get_schema(name)
    if schema.get("parent") != record["schema_name"]:
        raise PluginError("invalid_config", f"schema {schema['name']!r} is not a child schema of "
                                            f"{record['schema_name']!r} (its parent: {schema.get('parent')}), so "
                                            "its records cannot go under this record")
    return schema


def _read_within_limits(ctx: Context, file: Any, config: dict[str, Any]) -> tuple[StoredFile, Table]:
    """The stored ``file`` and its table; ``PluginError("invalid_input")`` when the file is larger than
    ``config["max_bytes"]`` (checked before reading) or has more non-blank rows than ``config["max_rows"]``."""
    stored = fetch(ctx, file)
    if stored.size > config["max_bytes"]:
        raise PluginError("invalid_input", f"{stored.filename} is {stored.size:,} bytes, more than max_bytes "
                                           f"({config['max_bytes']:,}): it would be read whole into memory")
    table = read_table(stored, config)
    rows = sum(1 for _, cells in table.rows if not all(_blank(c) for c in cells))  # blank rows: skipped
    if rows > config["max_rows"]:
        raise PluginError("invalid_input", f"{stored.filename} has {rows:,} rows after its header, "
                                           f"more than max_rows ({config['max_rows']:,})")
    return stored, table


def _create_rows(ctx: Context, table: Table, mapping: dict[int, dict[str, Any]], schema: dict[str, Any],
                 collection: str, parent_id: Any, problems: Problems) -> int:
    """Creates one ``schema`` record per non-blank row of ``table`` in ``collection`` under record
    ``parent_id``; returns how many were created. Rows with extra cells, repeating an earlier row's uniqueness
    key or refused as ``invalid`` are skipped and added to ``problems``; any other refusal raises
    ``PluginError`` (its kind, ``row N: message``)."""
    keys = [key for key in schema.get("unique_keys") or [] if key]
    seen: dict[str, int] = {}
    created = 0
    for number, cells in table.rows:
        if all(_blank(c) for c in cells):
            continue
        extra = [c for c in cells[len(table.header):] if not _blank(c)]
        if extra:
            problems.add(row=number, problem=f"the row has {len(table.header) + len(extra)} or more cells, the "
                                             f"header {len(table.header)}; skipped")
            continue
        data = _row_data(cells, mapping)
        repeated = _repeated_key(keys, data, number, seen)
        if repeated:
            problems.add(row=number, problem=repeated)
            continue
        try:
            ctx.create_record(collection, schema["name"], data, parent_record_id=parent_id)
        except PluginRpcError as exc:
            if exc.kind != "invalid":
                raise PluginError(exc.kind, f"row {number}: {exc.message}", exc.retryable) from None
            problems.add(row=number, problem=exc.message)
            continue
        created += 1
    return created


def _row_data(cells: list[Any], mapping: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A row's record data: field name -> cell value (see ``cell_value``) for each mapped non-blank cell."""
    data: dict[str, Any] = {}
    for index, field in mapping.items():
        value = cell_value(cells[index], field["type"]) if index < len(cells) else None
        if value is not None:
            data[field["name"]] = value
    return data


def _repeated_key(keys: list[list[str]], data: dict[str, Any], number: int, seen: dict[str, int]) -> str | None:
    """A message when ``data`` repeats an earlier row's values for a uniqueness key (rows whose
    key has a blank are exempt, as in the domain), else None (the row's keys are remembered)."""
    markers = []
    for key in keys:
        values = [data.get(name) for name in key]
        if any(v is None for v in values):
            continue
        marker = json.dumps([key, values], default=str)
        if marker in seen:
            return (f"repeats row {seen[marker]}'s values for the uniqueness key ({', '.join(key)}); skipped")
        markers.append(marker)
    for marker in markers:
        seen[marker] = number
    return None
