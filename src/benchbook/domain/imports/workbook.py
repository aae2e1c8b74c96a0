"""A workbook's rows as a file hands them, for :func:`.readers.read_table` (issue 14 *Import* 1;
issue 33 findings 2 and 4: workbooks that are small files but huge sheets, and damaged ones).

Read with openpyxl (read-only, values not formulas), which parses every part of the workbook
with defusedxml (a dependency: openpyxl uses it when installed), so no XML entity is ever
expanded: a part that declares one is refused. Three things a workbook says are not trusted:

- its declared ``<dimension>`` (a 1.6 KB file may claim ``A1:XFD1048576``): it is reset, so each
  row is as wide as its own last cell and the rows stop at the last one there is;
- its parts' packed size: they may unpack to at most :data:`UNPACK_RATIO` times the file's
  size, or :data:`UNPACK_FLOOR`, whichever is more (a few KB of deflate can unpack to gigabytes
  of shared strings, which openpyxl holds whole);
- its well-formedness: a damaged file (not a zip archive, a missing or malformed part, an
  entity) is an ``Invalid`` (422) naming the file, whatever openpyxl raises on it.
"""
from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchbook.domain.errors import Invalid

UNPACK_RATIO = 100
"""How many times its size a workbook's parts may unpack to (measured: 4 to 24 times for sheets
of numbers, dates or repeated words; deflate can reach 1,032)."""
UNPACK_FLOOR = 16 * 1024 * 1024
"""What any workbook's parts may unpack to, whatever its size."""


# zipfile, the XML parsers and openpyxl are imported when a workbook is read: a command that
# imports a CSV file does not load them (tests/test_startup.py).

def _damaged_errors() -> tuple[type[BaseException], ...]:
    import zipfile
    import zlib
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException
    from openpyxl.utils.exceptions import InvalidFileException

    # LookupError: a missing part (KeyError) or a style or string index past its table
    # (IndexError); ValueError: a malformed value, a forbidden entity (DefusedXmlException);
    # EOFError, zlib.error, NotImplementedError: a truncated or oddly packed member.
    return (InvalidFileException, zipfile.BadZipFile, ParseError, DefusedXmlException, LookupError, ValueError,
            TypeError, OSError, EOFError, zlib.error, NotImplementedError)


def damaged(name: str, exc: BaseException) -> Invalid:
    """The 422 for workbook ``name`` that openpyxl or zipfile could not read: ``exc``, or the
    error it wraps (openpyxl wraps what went wrong while opening in a ``ValueError``)."""
    from xml.etree.ElementTree import ParseError

    from defusedxml import DefusedXmlException

    while exc.__cause__ is not None and not isinstance(exc, (DefusedXmlException, ParseError)):
        exc = exc.__cause__
    if isinstance(exc, DefusedXmlException):
        why = "a part of it declares XML entities or a DTD, which are refused (none is ever expanded)"
    elif isinstance(exc, ParseError):
        why = f"a part of it is not well-formed XML ({exc})"
    else:
        why = str(exc) or type(exc).__name__
    return Invalid(f"{name} cannot be read as an Excel workbook (.xlsx): {why}")


def check_unpacked(data: bytes, name: str) -> None:
    """Raise ``Invalid`` when workbook ``data``'s parts unpack (as its zip directory says, which
    zipfile holds each part to) to more than its size allows (module docstring)."""
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(info.file_size for info in archive.infolist())
    most = max(UNPACK_FLOOR, UNPACK_RATIO * len(data))
    if unpacked > most:
        raise Invalid(f"{name} unpacks to {unpacked:,} bytes, more than a workbook of {len(data):,} bytes may "
                      f"({most:,}: {UNPACK_RATIO} times its size, or {UNPACK_FLOOR:,} bytes): it is damaged or "
                      "made to exhaust memory. If its data is real, save it as CSV and import that")


@contextmanager
def sheet_rows(data: bytes, name: str, sheet: str | None) -> Iterator[Iterator[tuple[int, tuple[Any, ...]]]]:
    """The rows of workbook ``data`` (named ``name``) as ``(sheet row number, values)``, for the
    ``with`` block: the first sheet, or ``sheet`` (a name, or a position counting from 1). Rows
    the sheet does not hold come empty; a row's values reach its own last cell, whatever the
    declared dimension. Raises ``Invalid``: damaged (when opened or while read), unpacking
    past its size, no such sheet."""
    errors = _damaged_errors()
    try:
        check_unpacked(data, name)
        import openpyxl

        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except errors as exc:
        raise damaged(name, exc) from None
    try:
        try:
            ws = _sheet(book, name, sheet)
            ws.reset_dimensions()
            rows = ws.iter_rows(values_only=True)
        except errors as exc:
            raise damaged(name, exc) from None
        yield _guarded(rows, name, errors)
    finally:
        book.close()


def _sheet(book: Any, name: str, sheet: str | None) -> Any:
    if not book.worksheets:
        raise Invalid(f"{name} holds no worksheet")
    if sheet is None:
        return book.worksheets[0]
    if sheet in book.sheetnames:
        found = book[sheet]
        if found not in book.worksheets:
            raise Invalid(f"{name}: sheet {sheet!r} is a chart, not a worksheet")
        return found
    if sheet.isdigit() and 1 <= int(sheet) <= len(book.worksheets):
        return book.worksheets[int(sheet) - 1]
    raise Invalid(f"{name} has no sheet {sheet!r} (sheets: {', '.join(book.sheetnames)})")


def _guarded(rows: Iterator[Any], name: str,
             errors: tuple[type[BaseException], ...]) -> Iterator[tuple[int, tuple[Any, ...]]]:
    number = 0
    while True:
        try:
            values = next(rows)
        except StopIteration:
            return
        except errors as exc:
            raise damaged(name, exc) from None
        number += 1
        yield number, values
