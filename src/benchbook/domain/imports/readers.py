"""Reading a file into a :class:`Table`: CSV, TSV, Excel (``.xlsx``), JSON (an array of
objects) and NDJSON (one object a line). Issue 14 *Import* 1.

The format comes from ``fmt`` when given, else the file name's extension, else the content (a
zip archive is a workbook, ``[`` starts JSON, ``{`` NDJSON, anything else delimited text).

- **Text** is decoded as UTF-8 (with or without BOM) when it is valid UTF-8, else in the
  encoding charset-normalizer finds most likely (a Windows-1252 or Latin-1 export, say), unless
  ``encoding`` names one. The delimiter is ``delimiter`` when given, tab for ``.tsv``/``.tab``,
  else sniffed (:class:`csv.Sniffer`) among ``,`` ``;`` tab ``|`` on the first lines. Cells
  are strings, trimmed; the first non-blank row is the header; blank rows are skipped.
- **Excel**: the first sheet, or ``sheet`` (a name, or a position counting from 1), read with
  openpyxl (values, not formulas). Cells keep their types (numbers, booleans, datetimes).
- **JSON/NDJSON**: every item must be an object; the columns are the keys in the order first
  seen. Values keep their JSON types.

Rows are sparse: a row's cells are a list in column order that stops at its last cell (a
text or workbook row; never padded to the header's width) or, for JSON and NDJSON, a dict from
column position to value holding the object's keys only; read them with :func:`cell_at`. A
missing cell is absent and reads as None.

Row numbers are where a user finds the row: the line a row starts on in a text or JSON file
(header = line 1), the sheet's row number in a workbook. Raises ``Invalid`` for a file that
cannot be read as its format, that holds no header, or that is past the limits
(:func:`benchbook.settings.limits.current`, docs/limits.md): more than ``import_bytes`` bytes (a file is
read whole), more than ``import_rows`` rows (an import checks every row before it writes any,
so its checked rows wait in memory: about 0.7 KB each for a few columns), more than
``import_columns`` columns, or more cells than its size allows (:mod:`.budget`). Raises
``Abandoned`` when the requester goes while it reads (:func:`benchbook.domain.abandon.check`).
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, TypeAlias

from benchbook.domain import collector
from benchbook.domain.errors import Invalid
from benchbook.domain.imports.budget import Budget
from benchbook.domain.imports.workbook import sheet_rows
from benchbook.settings import limits

FORMATS = ("csv", "tsv", "xlsx", "json", "ndjson")
SNIFF_LINES = 50
DELIMITERS = ",;\t|"
_EXTENSIONS = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv", ".xlsx": "xlsx", ".xlsm": "xlsx",
               ".json": "json", ".ndjson": "ndjson", ".jsonl": "ndjson"}


Cells: TypeAlias = list[Any] | dict[int, Any]
"""A row's cells: a list in column order, as long as the row (at most the header's width), or a
dict from column position to cell (JSON, NDJSON). Read with :func:`cell_at`."""


def cell_at(cells: Cells, position: int) -> Any:
    """The cell of column ``position`` (from 0) of a row's ``cells``; None where the row has
    none (it is shorter, or its object lacks the key)."""
    if isinstance(cells, dict):
        return cells.get(position)
    return cells[position] if position < len(cells) else None


@dataclass
class Table:
    """A file's rows: ``columns`` (the header, in file order) and ``rows`` as ``(number, cells)``,
    :data:`Cells` sparse (read them with :func:`cell_at`); ``unit`` says what the numbers count
    (``"line"`` or ``"row"``). ``format``, ``encoding`` and ``delimiter`` say how it was read;
    ``problems`` are ``(number, message, cells)`` for rows that could not be read as rows (more
    cells than the header: their cells are kept up to the header's width), which are not in
    ``rows``."""

    name: str
    format: str
    columns: list[str]
    rows: list[tuple[int, Cells]]
    unit: str = "line"
    encoding: str | None = None
    delimiter: str | None = None
    problems: list[tuple[int, str, Cells]] = field(default_factory=list)

    def release_cells(self, start: int, stop: int) -> None:
        """Drop the cells of rows ``start`` to ``stop`` (positions in :attr:`rows`, stop not
        included), keeping their numbers (and so the count of rows): an import that has checked
        them and will not need them again frees them as it goes (about 500 bytes a row of six
        columns). Their cells are then one shared empty list, never to be filled."""
        self.rows[start:stop] = [(number, _RELEASED) for number, _ in self.rows[start:stop]]


_RELEASED: Cells = []
"""The cells of every row of a table whose cells were released (:meth:`Table.release_cells`)."""


def check_size(size: int, filename: str) -> None:
    """Raise ``Invalid`` when a file of ``size`` bytes is past the ``import_bytes`` limit (the
    command line asks before it reads the file; :func:`read_table` asks again)."""
    most = limits.current().import_bytes
    if size > most:
        raise Invalid(f"{PurePath(filename).name or 'the file'} is {size:,} bytes; files of at most {most:,} bytes "
                      "are imported ([limits] import_bytes in benchbook.toml: a file is read whole into memory). "
                      "Split it, or raise the limit")


def detect_format(data: bytes, filename: str, fmt: str | None = None) -> str:
    """``fmt`` if given (one of :data:`FORMATS`), else from the extension, else the content."""
    if fmt:
        if fmt not in FORMATS:
            raise Invalid(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
        return fmt
    by_name = _EXTENSIONS.get(PurePath(filename).suffix.lower())
    if by_name:
        return by_name
    if data.startswith(b"PK\x03\x04"):
        return "xlsx"
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    return "json" if head.startswith(b"[") else "ndjson" if head.startswith(b"{") else "csv"


@collector.paused()
def read_table(data: bytes, filename: str, *, fmt: str | None = None, delimiter: str | None = None,
               sheet: str | None = None, encoding: str | None = None) -> Table:
    """The :class:`Table` in ``data`` (the whole file), named ``filename``; see the module
    docstring for the options. Raises ``Invalid`` (unreadable or damaged, no header, unknown
    sheet, past a limit) and ``Abandoned`` (the requester has gone)."""
    check_size(len(data), filename)
    kind = detect_format(data, filename, fmt)
    name = PurePath(filename).name or "import"
    budget = Budget(name, len(data))
    if kind == "xlsx":
        return _read_xlsx(data, name, sheet, budget)
    text, used = decode(data, encoding)
    if kind == "json":
        return _objects_table(name, "json", used, _json_items(text, name, budget), budget)
    if kind == "ndjson":
        return _objects_table(name, "ndjson", used, _ndjson_items(text, name, budget), budget)
    sep = sniff_delimiter(text, tab=kind == "tsv", given=delimiter)
    return _read_delimited(text, name, "tsv" if sep == "\t" else "csv", sep, used, budget)


def decode(data: bytes, encoding: str | None = None) -> tuple[str, str]:
    """``(text, encoding used)``: ``encoding`` if given, else UTF-8 (BOM dropped) when valid,
    else charset-normalizer's best guess. Raises ``Invalid`` when nothing decodes it."""
    if encoding:
        try:
            return data.decode(encoding), encoding
        except (LookupError, UnicodeDecodeError) as exc:
            raise Invalid(f"cannot read the file as {encoding}: {exc}") from None
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:1_000_000]).best()
    if best is None or best.encoding is None:
        raise Invalid("cannot tell the file's text encoding; name it with --encoding") from None
    try:
        return data.decode(best.encoding), best.encoding
    except UnicodeDecodeError:
        raise Invalid(f"the file is not valid {best.encoding}; name its encoding with --encoding") from None


def sniff_delimiter(text: str, *, tab: bool = False, given: str | None = None) -> str:
    """The delimiter of delimited ``text``: ``given`` when set (``tab`` or ``\\t`` meaning a tab),
    a tab for a TSV file (``tab``), else what :class:`csv.Sniffer` finds among :data:`DELIMITERS`
    in the first :data:`SNIFF_LINES` non-blank lines (if the header holds it), else the one the
    header holds most of, else a comma. Shared with the ``import-table`` built-in plugin."""
    if given:
        return "\t" if given in ("tab", "\\t") else given
    if tab:
        return "\t"
    lines = [line for line in text.splitlines()[:SNIFF_LINES] if line.strip()]
    first = lines[0] if lines else ""
    try:
        found = csv.Sniffer().sniff("\n".join(lines), delimiters=DELIMITERS).delimiter
        if found in first:
            return found
    except csv.Error:
        pass
    counts = {d: first.count(d) for d in DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _blank_row(cells: Sequence[Any]) -> bool:
    return all(c is None or (isinstance(c, str) and not c.strip()) for c in cells)


def _header(cells: Sequence[Any]) -> list[str]:
    names = [("" if c is None else str(c)).strip() for c in cells]
    while names and not names[-1]:
        names.pop()
    return names


def _read_delimited(text: str, name: str, kind: str, sep: str, used: str, budget: Budget) -> Table:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep)
    table: Table | None = None
    start = 1
    try:
        for cells in reader:
            budget.tick()
            number, start = start, reader.line_num + 1
            if _blank_row(cells):
                continue
            if table is None:
                columns = _header(cells)
                budget.check_columns(len(columns))
                table = Table(name, kind, columns, [], "line", used, sep)
                continue
            width = len(table.columns)
            count = len(table.rows) + len(table.problems) + 1
            budget.check_rows(count)
            budget.check_cells(count * width)
            if len(cells) > width and any(c.strip() for c in cells[width:]):
                table.problems.append((number, f"the row has {len(cells)} cells, the header {width}",
                                       [c.strip() for c in cells[:width]]))
                continue
            table.rows.append((number, [c.strip() for c in cells[:width]]))
    except csv.Error as exc:
        raise Invalid(f"{name}: line {reader.line_num}: {exc}") from None
    if table is None or not table.columns:
        raise Invalid(f"{name} holds no rows (not even a header)")
    return table


def _read_xlsx(data: bytes, name: str, sheet: str | None, budget: Budget) -> Table:
    """The workbook's rows (:mod:`.workbook`). Every row read counts: as a row (a row numbered
    ``n`` is ``n - 1`` rows: the header's and all above it, blank or not, but one) and as cells
    (the header's width, or the row's own when wider)."""
    table: Table | None = None
    spanned = 0
    with sheet_rows(data, name, sheet) as rows:
        for number, values in rows:
            budget.tick()
            width = len(table.columns) if table is not None else 0
            budget.check_rows(number - 1)
            spanned += max(width, len(values))
            budget.check_cells(spanned)
            if _blank_row(values):
                continue
            if table is None:
                columns = _header(values)
                budget.check_columns(len(columns))
                table = Table(name, "xlsx", columns, [], "row")
                continue
            cells = [v.strip() if isinstance(v, str) else v for v in values[:width]]
            if len(values) > width and not _blank_row(values[width:]):
                message = f"the row has cells right of the header's last column (column {width + 1} on)"
                table.problems.append((number, message, cells))
                continue
            table.rows.append((number, cells))
    if table is None or not table.columns:
        raise Invalid(f"{name} holds no rows (not even a header)")
    return table


def _objects_table(name: str, kind: str, used: str, items: Iterator[tuple[int, Any]], budget: Budget) -> Table:
    """The table of a JSON or NDJSON file's ``items`` ``(line, object)``: the columns are the
    keys in the order first seen, each row a dict from column position to value (the object's
    keys only). Columns and cells are checked as they grow: the file is refused at the key that
    passes ``import_columns``."""
    columns: dict[str, int] = {}
    rows: list[tuple[int, Cells]] = []
    for number, item in items:
        if not isinstance(item, dict):
            raise Invalid(f"{name}: line {number}: expected an object, got {type(item).__name__}")
        cells: dict[int, Any] = {}
        for key, value in item.items():
            position = columns.get(key)
            if position is None:
                position = columns[key] = len(columns)
                budget.check_columns(len(columns), "distinct keys")
            cells[position] = value
        rows.append((number, cells))
        budget.check_cells(len(rows) * len(columns))
    if not columns:
        raise Invalid(f"{name} holds no objects with keys")
    return Table(name, kind, list(columns), rows, "line", used)


def _json_items(text: str, name: str, budget: Budget) -> Iterator[tuple[int, Any]]:
    """``(line, item)`` of a JSON array, each decoded as it is reached."""
    decoder = json.JSONDecoder()
    pos, line, counted, count = _skip(text, 0), 1, 0, 0
    if not text.startswith("[", pos):
        raise Invalid(f"{name}: a JSON file must hold an array of objects")
    pos = _skip(text, pos + 1)
    try:
        while not text.startswith("]", pos):
            budget.tick()
            count += 1
            budget.check_rows(count)
            line += text.count("\n", counted, pos)
            counted = pos
            item, pos = decoder.raw_decode(text, pos)
            yield line, item
            pos = _skip(text, pos)
            if text.startswith(",", pos):
                pos = _skip(text, pos + 1)
            elif not text.startswith("]", pos):
                raise json.JSONDecodeError("expected ',' or ']'", text, pos)
    except json.JSONDecodeError as exc:
        raise Invalid(f"{name}: line {exc.lineno}: not valid JSON ({exc.msg})") from None


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n\ufeff":
        pos += 1
    return pos


def _ndjson_items(text: str, name: str, budget: Budget) -> Iterator[tuple[int, Any]]:
    """``(line, item)`` of an NDJSON file's non-blank lines, each decoded as it is reached."""
    count = 0
    for number, raw in enumerate(text.splitlines(), 1):
        budget.tick()
        if raw.strip():
            count += 1
            budget.check_rows(count)
            try:
                item = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise Invalid(f"{name}: line {number}: not valid JSON ({exc.msg})") from None
            yield number, item
