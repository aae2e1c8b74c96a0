"""Inferring a schema from a file's columns (issue 14 *Import* 2, ``--create-schema``).

Each column becomes a field named after its header (:func:`field_name`: lower case, runs of
other characters as ``_``, at most 63 characters, ``f_`` before a leading digit; the header is
kept as the label when it differs). Its type is the narrowest that every non-blank value of the
column fits, tried in this order: ``boolean`` (true/false, yes/no, t/f, y/n, any case; 0/1 are
numbers), ``integer`` (also whole numbers written with a decimal point, ``517.0``, as pandas
writes an integer column with gaps, and whole floats of Excel and JSON), ``float``, ``date``,
``datetime`` (the forms of :mod:`.dates`), else ``string``. Cells that mark a missing value
(:data:`MISSING`: ``NA``, ``N/A``, ``NaN``, ``null``, ``None``, ``#N/A``, any case) do not count
when other values give the column a type other than ``string``; the import then reads them as
blank in fields of types other than text (:func:`missing_marker`). A string column of few distinct values, each repeated (at most
:data:`CHOICES_MAX` values, at most a quarter as many as the column has values), gets them as
``choices``. Values from Excel cells and JSON keep their types, which count as they are.
No field is made required: a later file may leave cells blank. The first of the first three
columns whose values are all there and all different (a date, a name, a code) becomes the
schema's ``display_template`` (:func:`display_template`), so records get natural names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from benchbook.domain.imports.dates import DateRules, text_kind

CHOICES_MAX = 12
CHOICE_LENGTH = 40
_INT = re.compile(r"[+-]?\d+")
_WHOLE = re.compile(r"[+-]?\d+\.0*")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_BOOLS = {"true", "false", "yes", "no", "t", "f", "y", "n"}
MISSING = frozenset({"na", "n/a", "nan", "null", "none", "#n/a"})
"""Cells (compared in lower case, trimmed) that R, pandas and spreadsheets write for a missing value."""
TEXT_TYPES = ("string", "url", "tags")
"""Field types in which a :data:`MISSING` marker is a value like any other."""


def missing_marker(cell: Any, field_type: str) -> bool:
    """True when ``cell`` is a :data:`MISSING` marker and ``field_type`` is not a text type
    (:data:`TEXT_TYPES`): the import reads it as a blank cell."""
    return isinstance(cell, str) and field_type not in TEXT_TYPES and cell.strip().lower() in MISSING


@dataclass
class InferredField:
    """A field proposed for ``column``: ``name``, ``label`` (None when the header is the name),
    ``type`` and ``restrictions`` (``choices`` for few-valued string columns)."""

    column: str
    name: str
    type: str
    label: str | None = None
    restrictions: dict[str, Any] = field(default_factory=dict)
    unique: bool = False
    """Every row has a value and no two are equal (a natural name candidate)."""
    reference: str | None = None
    """The schema whose records every value names (``infer_refs.propose_references``)."""

    def body(self) -> dict[str, Any]:
        """The FieldCreate body of this field."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.label:
            out["label"] = self.label
        if self.restrictions:
            out["restrictions"] = self.restrictions
        return out


def field_name(header: str) -> str:
    """The field name for a column header: ``"Alcalinity of ash"`` → ``alcalinity_of_ash``,
    ``"2nd try"`` → ``f_2nd_try``, ``""`` → ``column``."""
    name = re.sub(r"[^a-z0-9]+", "_", header.strip().lower()).strip("_") or "column"
    if name[0].isdigit():
        name = "f_" + name
    return name[:63].rstrip("_")


def _kind(value: Any, rules: DateRules) -> str:
    """The narrowest type ``value`` (not blank) fits."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() and abs(value) < 2 ** 53 else "float"
    if isinstance(value, datetime):
        return "date" if value.time() == time() and value.tzinfo is None else "datetime"
    if isinstance(value, date):
        return "date"
    if not isinstance(value, str):
        return "string"
    text = value.strip()
    if text.lower() in _BOOLS:
        return "boolean"
    if _INT.fullmatch(text) or (_WHOLE.fullmatch(text) and len(text) < 17):
        return "integer"
    if _FLOAT.fullmatch(text):
        return "float"
    return text_kind(text, rules) or "string"



def _column_type(kinds: set[str]) -> str:
    if not kinds:
        return "string"
    if len(kinds) == 1:
        return next(iter(kinds))
    if kinds <= {"integer", "float"}:
        return "float"
    if kinds <= {"date", "datetime"}:
        return "datetime"
    return "string"


def infer_fields(columns: list[str], values: dict[str, list[Any]], rules: DateRules,
                 rows: int) -> list[InferredField]:
    """One :class:`InferredField` per column of ``columns``, from ``values[column]`` (the
    column's non-blank cells) of a file of ``rows`` rows: its type (:func:`_typed_cells`), a
    name made unique with ``_2``, ``_3``… suffixes (:func:`_unique_name`), whether it is
    :attr:`~InferredField.unique`, and a string column's ``choices`` (:func:`_choices`)."""
    out: list[InferredField] = []
    taken: set[str] = set()
    for column in columns:
        kind, cells = _typed_cells(values.get(column, []), rules)
        name = _unique_name(column, taken)
        inferred = InferredField(column, name, kind, column if column != name else None)
        inferred.unique = bool(cells) and len(cells) == rows and len({str(v) for v in cells}) == len(cells)
        if kind == "string" and (choices := _choices(cells)):
            inferred.restrictions["choices"] = choices
        out.append(inferred)
    return out


def _typed_cells(cells: list[Any], rules: DateRules) -> tuple[str, list[Any]]:
    """``(type, cells that count)`` of a column's non-blank ``cells``, its day-month order
    decided by ``rules.for_column``: the narrowest type all cells fit; when that is ``string``
    only because of :data:`MISSING` markers, the type the other cells fit, with those cells."""
    column_rules = rules.for_column(cells)
    kind = _column_type({_kind(v, column_rules) for v in cells})
    known = [v for v in cells if not missing_marker(v, "")]
    if kind == "string" and known and len(known) < len(cells):
        typed = _column_type({_kind(v, column_rules) for v in known})
        if typed != "string":
            return typed, known
    return kind, cells


def _unique_name(column: str, taken: set[str]) -> str:
    """:func:`field_name` of ``column``, suffixed ``_2``, ``_3``… (the base cut to 60
    characters) until it is not in ``taken``; added to ``taken``."""
    base = name = field_name(column)
    n = 1
    while name in taken:
        n += 1
        name = f"{base[:60]}_{n}"
    taken.add(name)
    return name


def _choices(cells: list[Any]) -> list[str] | None:
    """The sorted distinct values (as trimmed text) of a string column's ``cells`` when they
    are few and repeated (2 to :data:`CHOICES_MAX` of them, at most a quarter as many as the
    cells, none longer than :data:`CHOICE_LENGTH`); None otherwise."""
    distinct = list(dict.fromkeys(str(v).strip() for v in cells))
    if (2 <= len(distinct) <= CHOICES_MAX and len(distinct) * 4 <= len(cells)
            and all(len(d) <= CHOICE_LENGTH for d in distinct)):
        return sorted(distinct)
    return None


def display_template(fields: list[InferredField]) -> str | None:
    """``"{name}"`` of the first of the first three fields that is :attr:`~InferredField.unique`
    and a string, integer, date or datetime; else None."""
    for f in fields[:3]:
        if f.unique and f.type in ("string", "integer", "date", "datetime"):
            return "{" + f.name + "}"
    return None
