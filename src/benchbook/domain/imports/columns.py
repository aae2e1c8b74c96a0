"""Columns and cells: which columns are special, which field a column names, and a cell as the
value to give that field.

Special columns (``benchbook import --help`` lists them; docs/import.md):

- ``schema_name``: the row's schema (then the import needs no schema of its own);
- ``parent_record_id``: the parent record's id (or unique prefix), or the ``id`` of an earlier
  row of the same file, so that an export re-imports with its nesting;
- ``parent``: the parent record named by its id, its natural name, or its value of a
  one-field uniqueness key of the parent schema;
- ``id``, ``natural_name``: not stored (a new record gets a new id; the name is recomputed);
- ``_line``, ``_problem``: what a rejected-rows file adds; not stored.

Any other column names a field: by its name, else case-insensitively, else by the field name a
header becomes (``"Alcohol %"`` → ``alcohol``), else by the field's label, case-insensitively.
"""
from __future__ import annotations

from datetime import date, datetime
from typing import Any

from benchbook.domain.imports.dates import DateRules, to_date, to_datetime
from benchbook.domain.imports.infer import field_name
from benchbook.persistence.tables import Field

SPECIAL_COLUMNS = ("id", "schema_name", "parent_record_id", "parent", "natural_name", "_line", "_problem")
NOT_STORED = ("id", "natural_name", "_line", "_problem")


def blank(cell: Any) -> bool:
    """True for an empty cell: None, an empty or all-blank string, an empty list."""
    return cell is None or cell == [] or (isinstance(cell, str) and not cell.strip())


def match_columns(columns: list[str], fields: list[Field], skip: set[str]) -> dict[str, Field]:
    """``{column: field}`` for the columns of ``columns`` (not in ``skip``) that name one of
    ``fields`` (see the module docstring); each field is named by at most one column, the
    first."""
    by_name = {f.name: f for f in fields}
    by_fold = {f.name.casefold(): f for f in fields}
    by_label = {(f.label or "").casefold(): f for f in fields if f.label}
    out: dict[str, Field] = {}
    used: set[str] = set()
    for column in columns:
        if column in skip or not column:
            continue
        found = (by_name.get(column) or by_fold.get(column.casefold()) or by_name.get(field_name(column))
                 or by_label.get(column.casefold()))
        if found is not None and found.id not in used:
            out[column] = found
            used.add(found.id)
    return out


def cell_value(field: Field, cell: Any, rules: DateRules) -> Any:
    """What to give ``field`` for a non-blank ``cell``: dates and datetimes read by
    :mod:`.dates` (a datetime as ISO 8601 text, without an offset unless the cell had one, so
    that the field's or collection's zone applies), numbers from Excel or JSON as text for
    text fields, anything else as it is (the field type's own rules coerce it). Raises
    ``ValueProblem`` for an unreadable date."""
    if field.type == "date":
        return to_date(cell, rules).isoformat()
    if field.type == "datetime":
        return to_datetime(cell, rules).isoformat()
    if field.type in ("string", "url", "reference", "file"):
        if isinstance(cell, bool):
            return "true" if cell else "false"
        if isinstance(cell, float) and cell.is_integer():
            return str(int(cell))
        if isinstance(cell, (int, float)):
            return str(cell)
        if isinstance(cell, datetime):
            return cell.isoformat(sep=" ") if cell.time() != datetime.min.time() else cell.date().isoformat()
        if isinstance(cell, date):
            return cell.isoformat()
    return cell

