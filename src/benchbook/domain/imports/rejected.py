"""The rejected-rows file of an import with ``skip_bad`` (issue 14 *Import* 4): the rows that
were not imported, as they were, plus ``_line`` (where the row was) and ``_problem`` (its first
problem). A text file's rows are written as CSV with its delimiter, a workbook's as CSV, JSON
and NDJSON rows as NDJSON. Importing the file again (once fixed) ignores the two columns.
"""
from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime, time
from pathlib import PurePath
from typing import Any

from benchbook.domain.imports.readers import Cells, Table, cell_at

EXTRA = ("_line", "_problem")


def _text(cell: Any) -> str:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, (datetime, date, time)):
        return cell.isoformat()
    if isinstance(cell, (list, dict)):
        return json.dumps(cell)
    return str(cell)


def _present(cells: Cells, names: dict[int, str]) -> dict[str, Any]:
    """``{column: cell}`` of the cells a row has, in column order (``names``: position → column)."""
    if isinstance(cells, dict):
        return {names[i]: cells[i] for i in sorted(cells) if i in names}
    return {name: cells[i] for i, name in sorted(names.items()) if i < len(cells)}


def rejected_name(source: str, table: Table) -> str:
    """The rejected file's name for input file ``source``: ``weather.rejected.csv`` for
    ``weather.csv`` (``.ndjson`` for JSON input); a rejected file's own rejects replace it."""
    stem = PurePath(source).stem.removesuffix(".rejected")
    return f"{stem}.rejected.{'ndjson' if table.format in ('json', 'ndjson') else 'csv'}"


def rejected_file(table: Table, rejected: list[tuple[int, Cells, str]]) -> bytes:
    """The rejected rows ``(number, cells, problem)`` of ``table`` as file content (UTF-8). A
    JSON file's rows keep the keys their objects had (a missing cell stays absent: the file is
    as sparse as the input); a CSV row has one cell per column."""
    index = {c: i for i, c in enumerate(table.columns)}
    columns = [c for c in table.columns if c not in EXTRA]
    if table.format in ("json", "ndjson"):
        names = {index[c]: c for c in columns}
        lines = [json.dumps({**_present(cells, names), "_line": number, "_problem": problem}, default=_text,
                            ensure_ascii=False)
                 for number, cells, problem in rejected]
        return ("\n".join(lines) + "\n").encode("utf-8")
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=table.delimiter or ",", lineterminator="\n")
    writer.writerow([*columns, *EXTRA])
    for number, cells, problem in rejected:
        writer.writerow([*(_text(cell_at(cells, index[c])) for c in columns), number, problem])
    return out.getvalue().encode("utf-8")
