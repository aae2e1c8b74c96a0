"""Field types: their restrictions, how given values become stored (JSON) values and how stored
values are shown (OpenAPI ``GET /schemas/field-types``, ``FieldResponse``; docs/decisions.md *Datetimes*).

Pure (no database). Restriction problems raise ``Invalid`` listing all of them at loc
``["body", "restrictions", key]``; value problems raise ``ValueProblem`` (the first one), which
the records layer turns into error entries with its own loc.

Stored forms: string, url, reference ``str``; integer ``int``; float ``float``; boolean ``bool``;
date ``"YYYY-MM-DD"``; datetime UTC ``"YYYY-MM-DDTHH:MM:SS.ffffffZ"`` (text order = time order);
tags, reference_list ``list[str]``; file the lowercase sha256 hex; file_list ``list`` of them.
Coercing a stored value again gives it back unchanged.
"""
from __future__ import annotations

import math
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, tzinfo
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from benchbook.domain.errors import Invalid, error_entry

URL_SCHEMES = ("http", "https", "ftp", "ftps", "s3", "file")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_INT = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_INT_DIGITS = 4000
"""The longest integer text read as an int (``int()`` refuses more than 4,300 digits)."""
_INT_BOUND = 2 ** 1024 - 2 ** 970
"""Integers from here on (either sign) round to an infinite double: an integer field refuses
them, since filters and sorts compare its values as doubles (PostgreSQL cannot even cast them)."""
_ACCEPT = re.compile(r"(\.[^./\\\s]+)+|[a-z0-9!#$&^_.+-]+/([a-z0-9!#$&^_.+-]+|\*)")
_BOOL_WORDS = {"true": True, "t": True, "yes": True, "y": True, "1": True,
               "false": False, "f": False, "no": False, "n": False, "0": False}
_MIME = mimetypes.MimeTypes()  # built-in table only (no /etc/mime.types): same answers everywhere
R = dict[str, Any]


class ValueProblem(Invalid, ValueError):
    """A value that cannot be stored for its field type or breaks a restriction (a ``ValueError``
    too, as the parsers it wraps raise).

    ``msg`` (also ``str(exc)``) is the human message; ``type_`` the machine type (``"int_parsing"``,
    ``"too_long"``, ``"not_in_choices"``, ``"less_than_min"``, ``"date_parsing"``,
    ``"unknown_file"``, …); ``ctx`` optional details such as ``{"min": 3}``.
    """

    def __init__(self, msg: str, type_: str, ctx: dict[str, Any] | None = None) -> None:
        super().__init__(msg)
        self.msg, self.type_, self.ctx = msg, type_, ctx or {}


@dataclass(frozen=True)
class FileMeta:
    """What value checks need of an uploaded file: its ``filename`` and ``size`` in bytes."""

    filename: str
    size: int


@dataclass(frozen=True)
class FieldType:
    """A field type as the API lists it (FieldTypeResponse): ``restrictions`` are the keys it
    accepts, ``operators`` the filter operators that apply to it."""

    name: str
    label: str
    description: str
    restrictions: tuple[str, ...]
    operators: tuple[str, ...]


Lookup = Callable[[str], "FileMeta | None"]


# ------------------------------------------------------------------------------------ helpers

def _zone(name: Any) -> tzinfo:
    """tzinfo of IANA zone ``name`` (None/"" → UTC); ValueProblem("unknown_timezone") otherwise."""
    if not name:
        return UTC
    try:
        if not isinstance(name, str) or name in ("localtime", "posixrules"):
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueProblem(f"unknown timezone {name!r}", "unknown_timezone") from None


def _instant(value: Any, zone: tzinfo) -> datetime:
    """``value`` (ISO 8601 str, datetime or date) as an aware UTC datetime, reading offset-less
    input in ``zone``. ValueProblem: datetime_type, datetime_parsing, datetime_range."""
    if isinstance(value, datetime):
        d = value
    elif isinstance(value, date):
        d = datetime.combine(value, time())
    elif isinstance(value, str):
        try:
            d = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueProblem(f"{value!r} is not an ISO 8601 datetime", "datetime_parsing") from None
    else:
        raise ValueProblem("expected an ISO 8601 datetime string", "datetime_type")
    if d.utcoffset() is None:
        d = d.replace(tzinfo=zone)
    try:
        return d.astimezone(UTC)
    except OverflowError:
        raise ValueProblem(f"{value!r} is out of range", "datetime_range") from None


def _dt_text(d: datetime) -> str:
    """Aware ``d`` in the stored form ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC, always 6 digits)."""
    return d.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _date(value: Any) -> date:
    """``value`` ("YYYY-MM-DD" or a date) as a date. ValueProblem: date_type, date_parsing."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueProblem("expected a date string YYYY-MM-DD", "date_type")
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise ValueProblem(f"{value!r} is not a date YYYY-MM-DD (without time)", "date_parsing") from None


def _bounds(value: Any, lo: Any, hi: Any) -> None:
    """ValueProblem (less_than_min / greater_than_max) unless lo ≤ value ≤ hi (None: open)."""
    if lo is not None and value < lo:
        raise ValueProblem(f"{value} is less than the minimum {lo}", "less_than_min", {"min": lo})
    if hi is not None and value > hi:
        raise ValueProblem(f"{value} is greater than the maximum {hi}", "greater_than_max", {"max": hi})


def _number(value: Any, kind: str) -> int | float:
    """A finite int/float from a number or numeric string, bools refused. ValueProblem:
    {kind}_type, {kind}_parsing, finite_number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueProblem(f"expected {'an integer' if kind == 'int' else 'a number'}", f"{kind}_type")
    if isinstance(value, str):
        text = value.strip()
        if not _NUMBER.fullmatch(text):
            raise ValueProblem(f"{text!r} is not a number", f"{kind}_parsing")
        # int() refuses more than 4300 digits; such numbers become inf, refused below
        value = int(text) if _INT.fullmatch(text) and len(text) <= _INT_DIGITS else float(text)
    n: int | float = value
    if isinstance(n, float) and not math.isfinite(n):
        raise ValueProblem(f"{value!r} is not a finite number", "finite_number")
    return n


def _items(value: Any) -> list[str]:
    """Items of a list value (list/tuple of str, or comma-separated str from CSV): trimmed,
    blanks dropped, duplicates removed keeping first order. ValueProblem: list_type, string_type."""
    raw = value.split(",") if isinstance(value, str) else value
    if not isinstance(raw, (list, tuple)):
        raise ValueProblem("expected a list of strings", "list_type")
    out: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, str):
            raise ValueProblem(f"item {i} is not a string", "string_type", {"index": i})
        if item.strip() and item.strip() not in out:
            out.append(item.strip())
    return out


def _choices(values: list[str], choices: list[str] | None) -> list[str]:
    """``values`` if all are among ``choices`` (when set), else ValueProblem("not_in_choices")."""
    bad = [v for v in values if choices is not None and v not in choices]
    if bad:
        raise ValueProblem(f"{', '.join(map(repr, bad))} not among the choices {choices}", "not_in_choices",
                           {"choices": choices})
    return values


def _accepted(filename: str, accept: list[str]) -> bool:
    """Whether ``filename`` matches an ``accept`` entry: ".ext" (case-insensitive) or a MIME
    pattern ("image/png", "image/*") against the type guessed from the name."""
    name = filename.lower()
    mime = (_MIME.guess_type(name, strict=False)[0] or "").lower()
    for pattern in (p.lower() for p in accept):
        if pattern.startswith(".") and name.endswith(pattern):
            return True
        if mime and (pattern == mime or (pattern.endswith("/*") and mime.split("/")[0] == pattern[:-2])):
            return True
    return False


def _file(value: Any, r: R, lookup: Lookup | None) -> str:
    """One sha256, checked with ``lookup`` (uploaded?) against ``max_size`` and ``accept``."""
    sha = value.strip().lower() if isinstance(value, str) else ""
    if not _SHA256.fullmatch(sha):
        raise ValueProblem(f"{value!r} is not a file sha256 (64 hex digits)", "file_parsing")
    meta = lookup(sha) if lookup else None
    if lookup and meta is None:
        raise ValueProblem(f"no uploaded file {sha}", "unknown_file")
    if meta and r.get("max_size") is not None and meta.size > r["max_size"]:
        raise ValueProblem(f"{meta.filename} has {meta.size} bytes, more than {r['max_size']}",
                           "file_too_large", {"max_size": r["max_size"]})
    if meta and r.get("accept") and not _accepted(meta.filename, r["accept"]):
        raise ValueProblem(f"{meta.filename} is not one of {', '.join(r['accept'])}", "file_not_accepted",
                           {"accept": r["accept"]})
    return sha


# ------------------------------------------------------------------- coercers, by field type
# Each takes (value (not blank), restrictions, tz, file_lookup) and returns the stored form.

def _c_string(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> str:
    if not isinstance(value, str):
        raise ValueProblem("expected a string", "string_type")
    if r.get("max_length") is not None and len(value) > r["max_length"]:
        raise ValueProblem(f"longer than {r['max_length']} characters", "too_long",
                           {"max_length": r["max_length"]})
    return _choices([value], r.get("choices"))[0]


def _c_integer(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> int:
    n = _number(value, "int")
    if isinstance(n, float) and not n.is_integer():
        raise ValueProblem(f"{value!r} is not a whole number", "int_from_float")
    if not -_INT_BOUND < n < _INT_BOUND:
        raise ValueProblem(f"{value!r} is too large (an integer field holds values a double can: up to about "
                           "1.8e308 either way)", "finite_number")
    _bounds(int(n), r.get("min"), r.get("max"))
    return int(n)


def _c_float(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> float:
    try:
        n = float(_number(value, "float"))
    except OverflowError:
        raise ValueProblem(f"{value!r} is too large", "finite_number") from None
    _bounds(n, r.get("min"), r.get("max"))
    return n


def _c_boolean(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[value.strip().lower()]
    raise ValueProblem(f"{value!r} is not a boolean (true/false, yes/no, 1/0)", "bool_parsing")


def _c_date(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> str:
    text = _date(value).isoformat()
    lo, hi = (_date(r[k]).isoformat() if r.get(k) else None for k in ("min", "max"))
    _bounds(text, lo, hi)  # ISO dates (4-digit years) sort like the days
    return text


def _c_datetime(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> str:
    text = _dt_text(_instant(value, _zone(r.get("timezone") or tz)))
    field_zone = _zone(r.get("timezone"))
    lo, hi = (_dt_text(_instant(r[k], field_zone)) if r.get(k) else None for k in ("min", "max"))
    _bounds(text, lo, hi)  # the stored form sorts like the instants
    return text


def _c_url(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> str:
    if not isinstance(value, str):
        raise ValueProblem("expected a URL string", "url_type")
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        raise ValueProblem(f"{value!r} is not a URL", "url_parsing") from None
    if parts.scheme.lower() not in URL_SCHEMES:
        raise ValueProblem(f"URL scheme must be one of {', '.join(URL_SCHEMES)}", "url_scheme",
                           {"schemes": list(URL_SCHEMES)})
    has_place = parts.netloc or (parts.scheme.lower() == "file" and parts.path)
    if not has_place or any(c.isspace() or ord(c) < 32 for c in text):
        raise ValueProblem(f"{value!r} is not a URL", "url_parsing")
    return text


def _c_reference(value: Any, r: R, tz: str | None, lookup: Lookup | None) -> str:
    if not isinstance(value, str):
        raise ValueProblem("expected a record id string", "reference_type")
    return value.strip()


_COERCE: dict[str, Callable[[Any, R, str | None, Lookup | None], Any]] = {
    "string": _c_string, "integer": _c_integer, "float": _c_float, "boolean": _c_boolean, "date": _c_date,
    "datetime": _c_datetime, "url": _c_url, "reference": _c_reference,
    "tags": lambda v, r, tz, lk: _choices(_items(v), r.get("choices")) or None,
    "file": lambda v, r, tz, lk: _file(v, r, lk),
    "file_list": lambda v, r, tz, lk: list(dict.fromkeys(_file(i, r, lk) for i in _items(v))) or None,
    "reference_list": lambda v, r, tz, lk: _items(v) or None,
}


# ------------------------------------------------------------------------------- restrictions
# Each check takes (given value, restrictions normalised so far) and returns the normalised value
# or raises ValueProblem; keys are checked in table order (datetime ``timezone`` before min/max).

def _r_list(value: Any, out: R) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueProblem("must be a non-empty list of non-empty strings", "list_type")
    return list(dict.fromkeys(v.strip() for v in value))


def _r_accept(value: Any, out: R) -> list[str]:
    items = list(dict.fromkeys(v.lower() for v in _r_list(value, out)))
    bad = [v for v in items if not _ACCEPT.fullmatch(v)]
    if bad:
        raise ValueProblem(f"{', '.join(bad)}: expected extensions like '.csv' or MIME types like 'image/*'",
                           "accept_parsing", {"bad": bad})
    return items


def _r_int(value: Any, out: R, least: int | None = None) -> int:
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole:
        raise ValueProblem("must be an integer", "int_type")
    if least is not None and value < least:
        raise ValueProblem(f"must be at least {least}", "greater_than_equal", {"ge": least})
    return int(value)


def _r_number(value: Any, out: R) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueProblem("must be a finite number", "float_type")
    return value


def _r_text(value: Any, out: R) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueProblem("must be a non-empty string", "string_type")
    return value.strip()


def _r_zone(value: Any, out: R) -> str:
    name = _r_text(value, out)
    _zone(name)
    return name


def _r_size(value: Any, out: R) -> int:
    return _r_int(value, out, least=1)


def _r_day(value: Any, out: R) -> str:
    return _date(value).isoformat()


def _r_instant(value: Any, out: R) -> str:
    return _dt_text(_instant(value, _zone(out.get("timezone"))))


_RULES: dict[str, dict[str, Callable[[Any, R], Any]]] = {
    "string": {"choices": _r_list, "max_length": _r_size},
    "integer": {"min": _r_int, "max": _r_int},
    "float": {"min": _r_number, "max": _r_number, "unit": _r_text},
    "boolean": {},
    "date": {"min": _r_day, "max": _r_day},
    "datetime": {"timezone": _r_zone, "min": _r_instant, "max": _r_instant},
    "url": {},
    "tags": {"choices": _r_list},
    "file": {"accept": _r_accept, "max_size": _r_size},
    "file_list": {"accept": _r_accept, "max_size": _r_size},
    "reference": {"schema": _r_text},
    "reference_list": {"schema": _r_text},
}


# --------------------------------------------------------------------------------- public API

def validate_restrictions(type_: str, restrictions: dict[str, Any] | None) -> dict[str, Any]:
    """Check and normalise the ``restrictions`` of a field of type ``type_``.

    Returns a new dict of the set keys (a key given as None is dropped), normalised: strings
    trimmed; ``choices``/``accept`` de-duplicated (``accept`` lowercased); integral float bounds
    of integers as ints; date bounds ``YYYY-MM-DD``; datetime bounds in the stored UTC form
    (offset-less ones read in the ``timezone`` restriction, else UTC).

    Raises ``Invalid`` listing every problem, each at loc ``["body", "restrictions", key]``:
    unknown key for the type, wrong value type, ``min`` > ``max``, unknown timezone, a choice
    longer than ``max_length``, a reference type without ``schema``. An unknown type is reported
    at ``["body", "type"]``, restrictions that are not an object at ``["body", "restrictions"]``.
    """
    given = _restrictions_object(type_, restrictions)
    out, errors = _apply_rules(type_, given)
    errors += _combination_problems(type_, given, out)
    if errors:
        raise Invalid(f"invalid restrictions for {type_} field: {'; '.join(e['msg'] for e in errors)}", errors)
    return out


def _restrictions_object(type_: str, restrictions: dict[str, Any] | None) -> dict[str, Any]:
    """``restrictions`` ({} for None) once ``type_`` is known to have rules. Raises ``Invalid`` at
    ``["body", "type"]`` for an unknown type, at ``["body", "restrictions"]`` for a value that is not an object."""
    if type_ not in _RULES:
        msg = f"unknown field type {type_!r}"
        raise Invalid(msg, [error_entry(["body", "type"], msg, "unknown_type", type_, {"types": list(_RULES)})])
    given = {} if restrictions is None else restrictions
    if not isinstance(given, dict):
        raise Invalid("restrictions must be an object",
                      [error_entry(["body", "restrictions"], "must be an object", "dict_type", restrictions)])
    return given


def _restriction_problem(given: dict[str, Any], key: str, msg: str, kind: str,
                         ctx: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error entry of restriction ``key`` (loc ``["body", "restrictions", key]``, input its given value)."""
    return error_entry(["body", "restrictions", key], f"{key}: {msg}", kind, given.get(key), ctx)


def _apply_rules(type_: str, given: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(normalised restrictions, problems)``: a problem for each key ``type_`` has no rule for (in the order
    given), then each set key through its rule (in the rules' order; a rule may read the keys before it)."""
    rules = _RULES[type_]
    errors: list[dict[str, Any]] = []
    out: dict[str, Any] = {}
    for key in given:
        if key not in rules:
            errors.append(_restriction_problem(
                given, key, f"not a restriction of {type_} fields (allowed: {', '.join(rules) or 'none'})",
                "unknown_restriction", {"allowed": list(rules)}))
    for key, check in rules.items():
        if given.get(key) is not None:
            try:
                out[key] = check(given[key], out)
            except ValueProblem as exc:
                errors.append(_restriction_problem(given, key, exc.msg, exc.type_, exc.ctx))
    return out, errors


def _combination_problems(type_: str, given: dict[str, Any], out: dict[str, Any]) -> list[dict[str, Any]]:
    """Problems of the normalised restrictions ``out`` taken together: ``min`` greater than ``max``, choices
    longer than ``max_length``, a reference type without ``schema``."""
    errors: list[dict[str, Any]] = []
    if out.get("min") is not None and out.get("max") is not None and out["min"] > out["max"]:
        errors.append(_restriction_problem(given, "min", f"{out['min']} is greater than max {out['max']}",
                                           "min_greater_than_max", {"max": out["max"]}))
    too_long = [c for c in out.get("choices", []) if len(c) > out.get("max_length", len(c))]
    if too_long:
        errors.append(_restriction_problem(given, "choices",
                                           f"{', '.join(too_long)} longer than max_length {out['max_length']}",
                                           "too_long", {"max_length": out["max_length"]}))
    if "schema" in _RULES[type_] and "schema" not in out and given.get("schema") is None:
        errors.append(_restriction_problem(given, "schema", f"{type_} fields need the target schema", "missing"))
    return errors


def coerce_value(type_: str, restrictions: dict[str, Any] | None, value: object, *, tz: str | None = None,
                 file_lookup: Callable[[str], FileMeta | None] | None = None) -> object:
    """The stored (JSON) form of ``value`` for a field of ``type_`` with (normalised)
    ``restrictions`` — see the module docstring — or None for a blank value (None, "", only
    whitespace for non-string types, a list that is empty once trimmed).

    Accepted input: string a str; integer an int, integral float or integer string; float a
    number or numeric string (finite); boolean a bool, 0/1 or true/false/yes/no/t/f/y/n/1/0;
    date "YYYY-MM-DD"; datetime ISO 8601 (a date alone is midnight), offset-less input read in
    the field's ``timezone`` restriction, else ``tz`` (the collection's IANA zone), else UTC;
    url an http(s)/ftp(s)/s3/file URL; tags, file_list, reference_list a list of str or a
    comma-separated str; file a sha256 hex, which ``file_lookup(sha256)`` (if given) must know
    as an upload; reference a record id (existence is checked elsewhere).

    Raises ``ValueProblem`` for the first problem (wrong form, unknown file, broken restriction).
    """
    if value is None or value == "" or (type_ != "string" and isinstance(value, str) and not value.strip()):
        return None
    coerce = _COERCE.get(type_)
    if coerce is None:
        raise ValueProblem(f"unknown field type {type_!r}", "unknown_type")
    return coerce(value, restrictions or {}, tz, file_lookup)


def column_coercer(type_: str, restrictions: dict[str, Any] | None, *, tz: str | None = None,
                   file_lookup: Callable[[str], FileMeta | None] | None = None) -> Callable[[object], object]:
    """:func:`coerce_value` with everything but the value bound, for coercing a whole column of
    one field: for every value the function returns, or raises, exactly what ``coerce_value``
    would. What ``coerce_value`` recomputes per value (the datetime zones, the min/max bounds of
    dates and datetimes) is worked out once; an int for an integer field, a float or int for a
    float field, a bool for a boolean field and a str for a plain string field skip the
    dispatch. Restrictions that cannot be worked out (never stored: fields are checked on
    write) leave every value to ``coerce_value``, which then raises per value as before."""
    r = restrictions or {}
    coerce = _COERCE.get(type_)

    def generic(value: object) -> object:
        return coerce_value(type_, r, value, tz=tz, file_lookup=file_lookup)

    if coerce is None:
        return generic
    lo, hi = r.get("min"), r.get("max")
    if type_ in ("date", "datetime"):
        try:
            if type_ == "date":
                lo, hi = (_date(b).isoformat() if b else None for b in (lo, hi))
                zone: tzinfo = UTC
            else:
                field_zone = _zone(r.get("timezone"))
                lo, hi = (_dt_text(_instant(b, field_zone)) if b else None for b in (lo, hi))
                zone = _zone(r.get("timezone") or tz)
        except ValueProblem:
            return generic

        def dated(value: object) -> object:
            if value is None or value == "" or (isinstance(value, str) and not value.strip()):
                return None
            text = _date(value).isoformat() if type_ == "date" else _dt_text(_instant(value, zone))
            _bounds(text, lo, hi)
            return text
        return dated
    if type_ == "float" and lo is None and hi is None:
        def number(value: object) -> object:
            if type(value) is float and math.isfinite(value):
                return value
            if type(value) is str:  # a file's cell: what _number reads, without its steps
                return _float_text(value, generic)
            return float(value) if type(value) is int and abs(value) < 2 ** 53 else generic(value)
        return number
    quick = {"integer": int, "boolean": bool, "string": str}.get(type_)
    if quick is not None and lo is None and hi is None and r.get("choices") is None and r.get("max_length") is None:
        def typed(value: object) -> object:
            if type(value) is quick and value != "" and (
                    quick is not int or (isinstance(value, int) and -_INT_BOUND < value < _INT_BOUND)):
                return value
            if quick is int and type(value) is str:
                text = value.strip()
                if _INT.fullmatch(text) and len(text) <= _INT_DIGITS and -_INT_BOUND < (n := int(text)) < _INT_BOUND:
                    return n
            return generic(value)
        return typed
    return generic


def _float_text(value: str, generic: Callable[[object], object]) -> object:
    """A float field's value from numeric text, as :func:`coerce_value` reads it: a finite
    number by :data:`_NUMBER`'s grammar (an integer's text read as ``float(int(text))``, the same
    double but for ``-0``, which is ``0.0``); anything else (blank, not a number, too large) goes
    to ``generic`` for its answer or its problem."""
    text = value.strip()
    if _NUMBER.fullmatch(text):
        n = float(text)
        if math.isfinite(n):
            return 0.0 if n == 0.0 and _INT.fullmatch(text) else n
    return generic(value)


def display_value(type_: str, restrictions: dict[str, Any] | None, stored: object, *,
                  tz: str | None = None) -> object:
    """What API responses show for a ``stored`` value: a datetime as ISO 8601 with its offset in
    the field's ``timezone`` restriction, else ``tz``, else UTC (``+00:00``), e.g.
    ``"2024-05-01T10:00:00+02:00"``; anything else (or unreadable) as stored. Never raises."""
    if type_ != "datetime" or not isinstance(stored, str):
        return stored
    try:
        zone = _zone((restrictions or {}).get("timezone") or tz)
    except ValueProblem:
        zone = UTC
    try:
        return _instant(stored, UTC).astimezone(zone).isoformat()
    except (ValueProblem, OverflowError):
        return stored


def sort_key_sql_kind(type_: str) -> str:
    """How SQL should cast a stored value to sort it: "number" for integer/float, else "text"."""
    return "number" if type_ in ("integer", "float") else "text"


OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "is_null")


def _ops(*extra: str) -> tuple[str, ...]:
    return tuple(op for op in OPERATORS if op in {"eq", "ne", "in", "is_null", *extra})


_ORDERED = ("gt", "gte", "lt", "lte")
REFERENCE_TYPES = ("reference", "reference_list")
"""Field types whose values name records (``restrictions.schema`` is the target)."""

_TYPES = (  # name, label, description, extra operators
    ("string", "Text", "A string.", (*_ORDERED, "contains")),
    ("integer", "Integer", "A whole number.", _ORDERED),
    ("float", "Number", "A finite number, optionally with a unit.", _ORDERED),
    ("boolean", "Yes/no", "true or false.", ()),
    ("date", "Date", 'A calendar day "YYYY-MM-DD".', _ORDERED),
    ("datetime", "Date and time", ("An ISO 8601 instant; offset-less input is read in the field's timezone,"
                                   " else the collection's, else UTC, and shown in that zone."), _ORDERED),
    ("url", "Link", f"An absolute URL ({', '.join(URL_SCHEMES)}).", ("contains",)),
    ("tags", "Tags", "A list of distinct strings.", ("contains",)),
    ("file", "File", "The sha256 of an uploaded file (POST /files).", ()),
    ("file_list", "Files", "A list of sha256 of uploaded files.", ("contains",)),
    ("reference", "Reference", "The id of a record of the target schema.", ()),
    ("reference_list", "References", "A list of ids of records of the target schema.", ("contains",)),
)
#: Every field type by name, in the API's order.
FIELD_TYPES: dict[str, FieldType] = {
    name: FieldType(name, label, description, tuple(_RULES[name]), _ops(*extra))
    for name, label, description, extra in _TYPES
}
