"""Dates and datetimes in the forms real files hold (issue 14 *Import* 3), turned into
``date`` and ``datetime`` values that :func:`benchbook.domain.catalog.dtypes.coerce_value` then
stores: a datetime without an offset is read there in the field's ``timezone`` restriction,
else the collection's timezone, else UTC (docs/decisions.md *Datetimes*), exactly as one
given through the API.

Understood, with an optional time ``HH:MM[:SS[.ffffff]]`` (``T`` or a space before it, an
optional ``AM``/``PM`` after it) and an optional offset (``Z``, ``+02:00``, ``+0200``):

- ISO 8601: ``2012-01-31``, ``20120131``, week dates ``2012-W05-2``/``2012W052`` (``2012-W05``
  is that week's Monday);
- year first with ``/`` or ``.``: ``2012/01/31``, ``2012.1.31``;
- day and month first with ``/``, ``.`` or ``-``, four-digit year: ``31/01/2012``,
  ``01/31/2012``, ``31.01.2012``. Which of the first two numbers is the day is decided per
  column (:meth:`DateRules.for_column`): ``dayfirst`` when given; else day first when a value
  of the column has a first number over 12 or uses dots, month first otherwise (the US order,
  as spreadsheet programs and pandas read it);
- ``date_format`` (a :func:`datetime.strptime` format such as ``%d %b %Y``): values of that
  form; the unambiguous ISO and year-first forms are still understood beside it, the
  day-month forms are not (they must match the format);
- Excel serial day numbers (days since 1899-12-30, a fraction being the time of day) given as
  numbers (an Excel cell, a JSON number), or as text of five digits (10000–99999, years 1927 to
  2173, so that a year or a small count is never read as a day).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta
from typing import Any

from benchbook.domain.catalog.dtypes import ValueProblem

_TIME = r"(?:[T ]\s*(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,6})\d*)?)?" \
        r"\s*(?P<ampm>[AaPp][Mm])?\s*(?P<off>Z|[+-]\d{2}:?\d{2})?)?"
_YMD = re.compile(r"(?P<y>\d{4})[/.](?P<m>\d{1,2})[/.](?P<d>\d{1,2})" + _TIME)
_NNY = re.compile(r"(?P<a>\d{1,2})(?P<sep>[/.-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4})" + _TIME)
_SERIAL_TEXT = re.compile(r"\d{5}(\.\d+)?")
_EXCEL_EPOCH = datetime(1899, 12, 30)
_SERIAL_MAX = 2_958_465  # 9999-12-31


@dataclass(frozen=True)
class DateRules:
    """How to read day-month dates: ``dayfirst`` (None: decide per column) and ``date_format``
    (a strptime format tried first)."""

    dayfirst: bool | None = None
    date_format: str | None = None

    def for_column(self, values: Iterable[Any]) -> DateRules:
        """These rules with ``dayfirst`` decided for a column holding ``values`` (see the
        module docstring)."""
        if self.dayfirst is not None:
            return self
        for value in values:
            m = _NNY.fullmatch(value.strip()) if isinstance(value, str) else None
            if m and (int(m["a"]) > 12 or m["sep"] == "."):
                return replace(self, dayfirst=True)
        return replace(self, dayfirst=False)


def _offset(text: str | None) -> str:
    if not text:
        return ""
    if text == "Z":
        return "+00:00"
    return text if ":" in text else f"{text[:3]}:{text[3:]}"


def _assemble(y: int, mo: int, d: int, m: re.Match[str]) -> datetime:
    """The datetime of a matched form (ValueError when a number is out of range)."""
    if m["h"] is None:
        return datetime(y, mo, d)
    hour = int(m["h"])
    if m["ampm"]:
        if not 1 <= hour <= 12:
            raise ValueError("hour")
        hour = hour % 12 + (12 if m["ampm"].lower() == "pm" else 0)
    micro = int((m["f"] or "0").ljust(6, "0"))
    moment = datetime(y, mo, d, hour, int(m["mi"]), int(m["s"] or 0), micro)
    off = _offset(m["off"])
    return datetime.fromisoformat(moment.isoformat() + off) if off else moment


def _serial(value: float) -> datetime:
    if not 1 <= value <= _SERIAL_MAX:
        raise ValueError("serial out of range")
    days = value if value >= 61 else value + 1  # Excel counts a 1900-02-29 that never was
    return _EXCEL_EPOCH + timedelta(days=days)


def parse_moment(value: Any, rules: DateRules) -> datetime | date | None:
    """``value`` as a ``date`` (no time given) or ``datetime`` (naive, or aware when it has an
    offset), or None when it is in none of the understood forms (module docstring): text is
    read by :func:`_text_moment`, anything else by :func:`_cell_moment`. Raises nothing."""
    if isinstance(value, str):
        return _text_moment(value.strip(), rules)
    return _cell_moment(value)


def _cell_moment(value: Any) -> datetime | date | None:
    """A cell that is not text: a ``date``/``datetime`` as it is, a number (not a bool) as an
    Excel serial day number when in range; None otherwise."""
    if isinstance(value, (datetime, date)):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return _serial(float(value))
    except (ValueError, OverflowError):
        return None


def _text_moment(text: str, rules: DateRules) -> datetime | date | None:
    """Stripped ``text`` read in the first form that fits: ``rules.date_format``, then the ISO
    forms (:func:`_iso_moment`), then year-first, day-month and serial text
    (:func:`_written_moment`); None when none does or a number is out of range."""
    if rules.date_format:
        try:
            return datetime.strptime(text, rules.date_format)
        except ValueError:
            pass
    moment = _iso_moment(text)
    if moment is not None:
        return moment
    try:
        return _written_moment(text, rules)
    except (ValueError, OverflowError):
        return None


def _iso_moment(text: str) -> datetime | date | None:
    """``text`` as an ISO 8601 date (also basic and week dates) or, longer and year first with
    ``-``, an ISO datetime (a space for the ``T``); None when it is neither."""
    try:
        if "-" in text[:5] or "W" in text[:6] or (len(text) == 8 and text.isdigit()):
            return date.fromisoformat(text)
    except ValueError:
        pass
    try:
        if len(text) > 10 and text[4] == "-":
            return datetime.fromisoformat(text.replace(" ", "T", 1))
    except ValueError:
        pass
    return None


def _written_moment(text: str, rules: DateRules) -> datetime | None:
    """``text`` in a year-first (``2012/01/31``) or day-month form (``31/01/2012``; not with a
    ``date_format``: the day is first per ``rules.dayfirst``, else when dots separate), or as
    serial text (five digits); None when in none. Raises ``ValueError``/``OverflowError`` when a
    number is out of range."""
    if m := _YMD.fullmatch(text):
        return _assemble(int(m["y"]), int(m["m"]), int(m["d"]), m)
    if (m := _NNY.fullmatch(text)) and not rules.date_format:
        first, second = int(m["a"]), int(m["b"])
        dayfirst = rules.dayfirst if rules.dayfirst is not None else m["sep"] == "."
        day, month = (first, second) if dayfirst else (second, first)
        return _assemble(int(m["y"]), month, day, m)
    if _SERIAL_TEXT.fullmatch(text):
        return _serial(float(text))
    return None


def _unreadable(value: Any, what: str, rules: DateRules, kind: str) -> ValueProblem:
    fmt = f" (nor of the date format {rules.date_format!r})" if rules.date_format else ""
    return ValueProblem(f"{value!r} is not a {what}{fmt}", kind)


def to_date(value: Any, rules: DateRules) -> date:
    """``value`` as a calendar day; a datetime at midnight counts as its day. Raises
    ``ValueProblem`` (``date_parsing``) for anything else."""
    moment = parse_moment(value, rules)
    if moment is None:
        raise _unreadable(value, "date", rules, "date_parsing")
    if isinstance(moment, datetime):
        if moment.time() != time() or moment.utcoffset():
            raise ValueProblem(f"{value!r} has a time of day; the field holds dates", "date_parsing")
        return moment.date()
    return moment


def to_datetime(value: Any, rules: DateRules) -> datetime:
    """``value`` as a datetime (a date alone is its midnight; naive unless an offset was
    given). Raises ``ValueProblem`` (``datetime_parsing``)."""
    moment = parse_moment(value, rules)
    if moment is None:
        raise _unreadable(value, "date and time", rules, "datetime_parsing")
    return moment if isinstance(moment, datetime) else datetime.combine(moment, time())


def text_kind(text: str, rules: DateRules) -> str | None:
    """For schema inference: ``"date"`` or ``"datetime"`` when the text is in one of the forms
    (bare numbers, Excel serials included, are never dates here), else None."""
    if not text or text.replace(".", "", 1).lstrip("+-").isdigit():
        return None
    moment = parse_moment(text, rules)
    if moment is None:
        return None
    if isinstance(moment, datetime) and (moment.time() != time() or moment.tzinfo is not None
                                         or any(c in text for c in ":")):
        return "datetime"
    return "date"


def day_month_values(values: Iterable[Any]) -> str | None:
    """The first value of the day-month forms (``01/02/2012``) among ``values``, or None."""
    for value in values:
        if isinstance(value, str) and _NNY.fullmatch(value.strip()):
            return value.strip()
    return None
