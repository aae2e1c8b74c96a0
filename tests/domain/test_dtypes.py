"""Field types: restrictions, value coercion to the stored form, display (domain/dtypes.py)."""
from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchbook.domain.catalog.dtypes import (
    FIELD_TYPES,
    FieldType,
    FileMeta,
    ValueProblem,
    coerce_value,
    display_value,
    sort_key_sql_kind,
    validate_restrictions,
)
from benchbook.domain.errors import Invalid

SHA_A = "a" * 64
SHA_B = "0123456789abcdef" * 4
SHA_C = "c" * 64
FILES = {SHA_A: FileMeta("plot.PNG", 2_000), SHA_B: FileMeta("data.csv", 50), SHA_C: FileMeta("notes", 10)}


def lookup(sha: str) -> FileMeta | None:
    return FILES.get(sha)


def problem(type_: str, restrictions: dict[str, Any], value: Any, **kw: Any) -> ValueProblem:
    with pytest.raises(ValueProblem) as info:
        coerce_value(type_, restrictions, value, **kw)
    return info.value


def invalid(type_: str, restrictions: Any) -> Invalid:
    with pytest.raises(Invalid) as info:
        validate_restrictions(type_, restrictions)
    return info.value


# ------------------------------------------------------------------------------- field types

def test_field_types_names_and_shape() -> None:
    assert list(FIELD_TYPES) == ["string", "integer", "float", "boolean", "date", "datetime", "url", "tags",
                                 "file", "file_list", "reference", "reference_list"]
    for name, t in FIELD_TYPES.items():
        assert isinstance(t, FieldType) and t.name == name and t.label and t.description
        assert {"eq", "ne", "in", "is_null"} <= set(t.operators)
    with pytest.raises(AttributeError):
        FIELD_TYPES["string"].name = "x"  # type: ignore[misc]


@pytest.mark.parametrize(("type_", "restrictions"), [
    ("string", ("choices", "max_length")), ("integer", ("min", "max")), ("float", ("min", "max", "unit")),
    ("boolean", ()), ("date", ("min", "max")), ("datetime", ("timezone", "min", "max")), ("url", ()),
    ("tags", ("choices",)), ("file", ("accept", "max_size")), ("file_list", ("accept", "max_size")),
    ("reference", ("schema",)), ("reference_list", ("schema",)),
])
def test_field_type_restriction_keys(type_: str, restrictions: tuple[str, ...]) -> None:
    assert FIELD_TYPES[type_].restrictions == restrictions


@pytest.mark.parametrize("type_", list(FIELD_TYPES))
def test_field_type_operators(type_: str) -> None:
    ops = set(FIELD_TYPES[type_].operators)
    assert {"gt", "gte", "lt", "lte"} <= ops if type_ in ("string", "integer", "float", "date", "datetime") \
        else not ops & {"gt", "gte", "lt", "lte"}
    assert ("contains" in ops) == (type_ in ("string", "url", "tags", "reference_list", "file_list"))
    assert ops <= {"eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "is_null"}


@pytest.mark.parametrize(("type_", "kind"), [("integer", "number"), ("float", "number"), ("string", "text"),
                                             ("date", "text"), ("datetime", "text"), ("boolean", "text")])
def test_sort_key_sql_kind(type_: str, kind: str) -> None:
    assert sort_key_sql_kind(type_) == kind


# ---------------------------------------------------------------------- validate_restrictions

@pytest.mark.parametrize(("type_", "given", "expected"), [
    ("string", None, {}),
    ("string", {}, {}),
    ("string", {"choices": [" a", "b", "a"], "max_length": 3}, {"choices": ["a", "b"], "max_length": 3}),
    ("string", {"choices": ["abc", "d"], "max_length": 3}, {"choices": ["abc", "d"], "max_length": 3}),
    ("string", {"max_length": None}, {}),
    ("integer", {"min": -5, "max": 5}, {"min": -5, "max": 5}),
    ("integer", {"min": 2.0, "max": 2}, {"min": 2, "max": 2}),
    ("float", {"min": 0, "max": 1.5, "unit": " mg/L "}, {"min": 0, "max": 1.5, "unit": "mg/L"}),
    ("date", {"min": "2024-01-01", "max": "20241231"}, {"min": "2024-01-01", "max": "2024-12-31"}),
    ("datetime", {"min": "2024-01-01T00:00:00Z"}, {"min": "2024-01-01T00:00:00.000000Z"}),
    ("datetime", {"timezone": "Europe/Berlin", "min": "2024-01-01T00:00", "max": "2024-07-01"},
     {"timezone": "Europe/Berlin", "min": "2023-12-31T23:00:00.000000Z", "max": "2024-06-30T22:00:00.000000Z"}),
    ("datetime", {"min": "2024-01-01T00:00+05:00"}, {"min": "2023-12-31T19:00:00.000000Z"}),
    ("tags", {"choices": ["wet", "dry"]}, {"choices": ["wet", "dry"]}),
    ("file", {"accept": [".CSV", "image/*", "text/csv"], "max_size": 10},
     {"accept": [".csv", "image/*", "text/csv"], "max_size": 10}),
    ("file_list", {"accept": [".tar.gz"]}, {"accept": [".tar.gz"]}),
    ("reference", {"schema": " sample "}, {"schema": "sample"}),
    ("reference_list", {"schema": "site"}, {"schema": "site"}),
])
def test_validate_restrictions_normalises(type_: str, given: dict[str, Any] | None,
                                          expected: dict[str, Any]) -> None:
    assert validate_restrictions(type_, given) == expected


@pytest.mark.parametrize(("type_", "given", "problems"), [
    ("boolean", {"choices": ["x"]}, [("choices", "unknown_restriction")]),
    ("url", {"max_length": 3}, [("max_length", "unknown_restriction")]),
    ("integer", {"unit": "m"}, [("unit", "unknown_restriction")]),
    ("string", {"choices": []}, [("choices", "list_type")]),
    ("string", {"choices": "a,b"}, [("choices", "list_type")]),
    ("string", {"choices": ["a", 1]}, [("choices", "list_type")]),
    ("string", {"choices": ["a", " "]}, [("choices", "list_type")]),
    ("string", {"max_length": 0}, [("max_length", "greater_than_equal")]),
    ("string", {"max_length": "5"}, [("max_length", "int_type")]),
    ("string", {"max_length": True}, [("max_length", "int_type")]),
    ("string", {"choices": ["short", "toolong"], "max_length": 5}, [("choices", "too_long")]),
    ("integer", {"min": 1.5}, [("min", "int_type")]),
    ("integer", {"min": 5, "max": 2}, [("min", "min_greater_than_max")]),
    ("float", {"min": "1"}, [("min", "float_type")]),
    ("float", {"max": float("nan")}, [("max", "float_type")]),
    ("float", {"min": 2.5, "max": 2.4}, [("min", "min_greater_than_max")]),
    ("float", {"unit": ""}, [("unit", "string_type")]),
    ("date", {"min": "2024-13-01"}, [("min", "date_parsing")]),
    ("date", {"min": "2024-01-01T10:00"}, [("min", "date_parsing")]),
    ("date", {"max": 20240101}, [("max", "date_type")]),
    ("date", {"min": "2024-02-01", "max": "2024-01-31"}, [("min", "min_greater_than_max")]),
    ("datetime", {"timezone": "Mars/Olympus"}, [("timezone", "unknown_timezone")]),
    ("datetime", {"timezone": "Europe"}, [("timezone", "unknown_timezone")]),
    ("datetime", {"timezone": "../etc/passwd"}, [("timezone", "unknown_timezone")]),
    ("datetime", {"timezone": "localtime"}, [("timezone", "unknown_timezone")]),
    ("datetime", {"timezone": 1}, [("timezone", "string_type")]),
    ("datetime", {"min": "yesterday"}, [("min", "datetime_parsing")]),
    ("datetime", {"min": "2024-01-02T00:00Z", "max": "2024-01-01T23:00:00-00:30"}, [("min", "min_greater_than_max")]),
    ("file", {"accept": ["csv"]}, [("accept", "accept_parsing")]),
    ("file", {"accept": []}, [("accept", "list_type")]),
    ("file", {"max_size": -1}, [("max_size", "greater_than_equal")]),
    ("reference", {}, [("schema", "missing")]),
    ("reference_list", None, [("schema", "missing")]),
    ("reference", {"schema": ""}, [("schema", "string_type")]),
    # every problem is listed, in one error
    ("integer", {"min": "a", "max": None, "foo": 1, "bar": 2},
     [("foo", "unknown_restriction"), ("bar", "unknown_restriction"), ("min", "int_type")]),
    ("datetime", {"timezone": "Nowhere/City", "min": "x", "max": "2024"},
     [("timezone", "unknown_timezone"), ("min", "datetime_parsing"), ("max", "datetime_parsing")]),
    ("reference", {"schema": None, "choices": ["a"]}, [("choices", "unknown_restriction"), ("schema", "missing")]),
])
def test_validate_restrictions_errors(type_: str, given: Any, problems: list[tuple[str, str]]) -> None:
    exc = invalid(type_, given)
    assert exc.kind == "invalid"
    assert [(e["loc"], e["type"]) for e in exc.errors] == [(["body", "restrictions", k], t) for k, t in problems]
    assert all(e["msg"] and "input" in e and isinstance(e["ctx"], dict) for e in exc.errors)
    assert exc.body()["errors"] == exc.errors


def test_validate_restrictions_unknown_type_and_non_object() -> None:
    exc = invalid("decimal", {})
    assert exc.errors[0]["loc"] == ["body", "type"] and exc.errors[0]["type"] == "unknown_type"
    exc = invalid("string", ["choices"])
    assert exc.errors[0]["loc"] == ["body", "restrictions"] and exc.errors[0]["type"] == "dict_type"


def test_validate_restrictions_does_not_mutate_input() -> None:
    given = {"choices": [" a ", "a"]}
    validate_restrictions("tags", given)
    assert given == {"choices": [" a ", "a"]}


# ------------------------------------------------------------------------------ coerce_value

ACCEPTED: list[tuple[str, dict[str, Any], Any, Any]] = [
    ("string", {}, "hello", "hello"),
    ("string", {}, "  spaced  ", "  spaced  "),
    ("string", {}, " ", " "),
    ("string", {"max_length": 3}, "abc", "abc"),
    ("string", {"choices": ["a", "b"]}, "b", "b"),
    ("integer", {}, 12, 12),
    ("integer", {}, -3, -3),
    ("integer", {}, 3.0, 3),
    ("integer", {}, "12", 12),
    ("integer", {}, " 12 ", 12),
    ("integer", {}, "+7", 7),
    ("integer", {}, "-0", 0),
    ("integer", {}, "12.0", 12),
    ("integer", {}, "1e3", 1000),
    ("integer", {}, 10**30, 10**30),
    ("integer", {}, 2**1024 - 2**970 - 1, 2**1024 - 2**970 - 1),  # the largest a double holds
    ("integer", {}, -(2**1024 - 2**970 - 1), -(2**1024 - 2**970 - 1)),
    ("integer", {"min": 1, "max": 3}, 1, 1),
    ("integer", {"min": 1, "max": 3}, "3", 3),
    ("float", {}, 1.5, 1.5),
    ("float", {}, 2, 2.0),
    ("float", {}, "2.5", 2.5),
    ("float", {}, " -1e-3 ", -0.001),
    ("float", {}, ".5", 0.5),
    ("float", {}, "7", 7.0),
    ("float", {"min": 0, "max": 1}, 0, 0.0),
    ("float", {"min": 0, "max": 1}, 1.0, 1.0),
    ("boolean", {}, True, True),
    ("boolean", {}, False, False),
    ("boolean", {}, 1, True),
    ("boolean", {}, 0, False),
    *[("boolean", {}, s, True) for s in ("true", "TRUE", "True", "yes", "Y", "t", "1", " yes ")],
    *[("boolean", {}, s, False) for s in ("false", "FALSE", "no", "N", "f", "0")],
    ("date", {}, "2024-05-01", "2024-05-01"),
    ("date", {}, " 2024-05-01 ", "2024-05-01"),
    ("date", {}, "20240501", "2024-05-01"),
    ("date", {}, "2024-02-29", "2024-02-29"),
    ("date", {}, date(2024, 5, 1), "2024-05-01"),
    ("date", {"min": "2024-01-01", "max": "2024-12-31"}, "2024-12-31", "2024-12-31"),
    ("datetime", {}, "2024-05-01T10:00:00Z", "2024-05-01T10:00:00.000000Z"),
    ("datetime", {}, "2024-05-01T10:00:00.5+02:00", "2024-05-01T08:00:00.500000Z"),
    ("datetime", {}, "2024-05-01 10:00", "2024-05-01T10:00:00.000000Z"),
    ("datetime", {}, "2024-05-01", "2024-05-01T00:00:00.000000Z"),
    ("datetime", {}, "2024-05-01T23:30-05:00", "2024-05-02T04:30:00.000000Z"),
    ("datetime", {}, datetime(2024, 5, 1, 10, tzinfo=UTC), "2024-05-01T10:00:00.000000Z"),
    ("datetime", {}, "0999-01-01T00:00Z", "0999-01-01T00:00:00.000000Z"),
    ("datetime", {"min": "2024-01-01T00:00:00.000000Z"}, "2024-01-01T01:00+01:00", "2024-01-01T00:00:00.000000Z"),
    ("url", {}, "https://example.org/a?b=1#c", "https://example.org/a?b=1#c"),
    ("url", {}, " http://example.org ", "http://example.org"),
    ("url", {}, "HTTPS://Example.org", "HTTPS://Example.org"),
    ("url", {}, "ftp://files.example.org/x.csv", "ftp://files.example.org/x.csv"),
    ("url", {}, "ftps://files.example.org/x", "ftps://files.example.org/x"),
    ("url", {}, "s3://bucket/key/part", "s3://bucket/key/part"),
    ("url", {}, "file:///data/run1.csv", "file:///data/run1.csv"),
    ("url", {}, "http://[::1]:8080/", "http://[::1]:8080/"),
    ("tags", {}, ["a", "b"], ["a", "b"]),
    ("tags", {}, [" b", "a ", "b", "", "  "], ["b", "a"]),
    ("tags", {}, "wet, cold ,wet,,", ["wet", "cold"]),
    ("tags", {}, ("x",), ["x"]),
    ("tags", {"choices": ["wet", "dry"]}, ["dry"], ["dry"]),
    ("file", {}, SHA_A, SHA_A),
    ("file", {}, SHA_A.upper(), SHA_A),
    ("file", {"max_size": 2_000}, SHA_A, SHA_A),
    ("file", {"accept": [".png"]}, SHA_A, SHA_A),
    ("file", {"accept": ["image/*"]}, SHA_A, SHA_A),
    ("file", {"accept": ["image/png"]}, SHA_A, SHA_A),
    ("file", {"accept": ["text/csv", ".xlsx"]}, SHA_B, SHA_B),
    ("file", {"accept": [".csv", "image/*"]}, SHA_B, SHA_B),
    ("file_list", {}, [SHA_A, SHA_B, SHA_A], [SHA_A, SHA_B]),
    ("file_list", {}, f"{SHA_A}, {SHA_B}", [SHA_A, SHA_B]),
    ("file_list", {"accept": [".png", ".csv"]}, [SHA_B, SHA_A], [SHA_B, SHA_A]),
    ("reference", {"schema": "site"}, "01HX0000000000000000000000", "01HX0000000000000000000000"),
    ("reference", {}, " rec1 ", "rec1"),
    ("reference_list", {}, ["r1", "r2", "r1"], ["r1", "r2"]),
    ("reference_list", {}, "r1, r2", ["r1", "r2"]),
]


@pytest.mark.parametrize(("type_", "restrictions", "value", "stored"), ACCEPTED)
def test_coerce_accepts(type_: str, restrictions: dict[str, Any], value: Any, stored: Any) -> None:
    got = coerce_value(type_, restrictions, value, file_lookup=lookup)
    assert got == stored and type(got) is type(stored)
    # the stored form is accepted again unchanged (rules are re-checked on stored values)
    assert coerce_value(type_, restrictions, got, file_lookup=lookup) == stored


REJECTED: list[tuple[str, dict[str, Any], Any, str]] = [
    ("string", {}, 5, "string_type"),
    ("string", {}, 1.5, "string_type"),
    ("string", {}, True, "string_type"),
    ("string", {}, ["a"], "string_type"),
    ("string", {"max_length": 3}, "abcd", "too_long"),
    ("string", {"choices": ["a", "b"]}, "c", "not_in_choices"),
    ("string", {"choices": ["a", "b"]}, "A", "not_in_choices"),
    ("integer", {}, 3.5, "int_from_float"),
    ("integer", {}, "3.5", "int_from_float"),
    ("integer", {}, "abc", "int_parsing"),
    ("integer", {}, "1_000", "int_parsing"),
    ("integer", {}, "12 3", "int_parsing"),
    ("integer", {}, "0x10", "int_parsing"),
    ("integer", {}, "nan", "int_parsing"),
    ("integer", {}, True, "int_type"),
    ("integer", {}, False, "int_type"),
    ("integer", {}, [1], "int_type"),
    ("integer", {}, float("inf"), "finite_number"),
    ("integer", {}, "9" * 5000, "finite_number"),
    ("integer", {}, "9" * 4000, "finite_number"),
    ("integer", {}, 2**1024 - 2**970, "finite_number"),  # rounds to an infinite double
    ("integer", {}, -(2**1024 - 2**970), "finite_number"),
    ("integer", {}, str(2**1024 - 2**970), "finite_number"),
    ("integer", {"min": 1}, 0, "less_than_min"),
    ("integer", {"max": 3}, "4", "greater_than_max"),
    ("float", {}, True, "float_type"),
    ("float", {}, {"v": 1}, "float_type"),
    ("float", {}, "one", "float_parsing"),
    ("float", {}, "inf", "float_parsing"),
    ("float", {}, "NaN", "float_parsing"),
    ("float", {}, float("nan"), "finite_number"),
    ("float", {}, float("-inf"), "finite_number"),
    ("float", {}, "1e400", "finite_number"),
    ("float", {}, 10**400, "finite_number"),
    ("float", {"min": 0.5}, 0.4999, "less_than_min"),
    ("float", {"max": 0}, "0.1", "greater_than_max"),
    ("boolean", {}, "maybe", "bool_parsing"),
    ("boolean", {}, 2, "bool_parsing"),
    ("boolean", {}, 1.0, "bool_parsing"),
    ("boolean", {}, [], "bool_parsing"),
    ("date", {}, "2024-02-30", "date_parsing"),
    ("date", {}, "2024-05-01T10:00", "date_parsing"),
    ("date", {}, "2024-05-01T00:00:00Z", "date_parsing"),
    ("date", {}, "01/05/2024", "date_parsing"),
    ("date", {}, "2024-05", "date_parsing"),
    ("date", {}, 20240501, "date_type"),
    ("date", {}, datetime(2024, 5, 1), "date_type"),
    ("date", {"min": "2024-01-01"}, "2023-12-31", "less_than_min"),
    ("date", {"max": "2024-01-01"}, "2024-01-02", "greater_than_max"),
    ("datetime", {}, "not a time", "datetime_parsing"),
    ("datetime", {}, "2024-05-01T25:00", "datetime_parsing"),
    ("datetime", {}, "01/05/2024 10:00", "datetime_parsing"),
    ("datetime", {}, 1714557600, "datetime_type"),
    ("datetime", {}, "0001-01-01T00:00+01:00", "datetime_range"),
    ("datetime", {"min": "2024-01-01T00:00:00.000000Z"}, "2024-01-01T00:59:59+01:00", "less_than_min"),
    ("datetime", {"max": "2024-01-01T00:00:00.000000Z"}, "2024-01-01T00:00:00.000001Z", "greater_than_max"),
    ("url", {}, 42, "url_type"),
    ("url", {}, "example.org", "url_scheme"),
    ("url", {}, "javascript:alert(1)", "url_scheme"),
    ("url", {}, "mailto:a@example.org", "url_scheme"),
    ("url", {}, "doi:10.1000/182", "url_scheme"),
    ("url", {}, "http://", "url_parsing"),
    ("url", {}, "http:/path-only", "url_parsing"),
    ("url", {}, "https://exa mple.org", "url_parsing"),
    ("url", {}, "http://[::1", "url_parsing"),
    ("url", {}, "file://", "url_parsing"),
    ("url", {}, "https://example.org/a\x01b", "url_parsing"),  # control characters
    ("url", {}, "https://example.org/\x0e", "url_parsing"),
    ("tags", {}, 5, "list_type"),
    ("tags", {}, {"a": 1}, "list_type"),
    ("tags", {}, ["a", 1], "string_type"),
    ("tags", {}, ["a", None], "string_type"),
    ("tags", {"choices": ["wet", "dry"]}, ["wet", "damp"], "not_in_choices"),
    ("tags", {"choices": ["wet", "dry"]}, "dry, moist", "not_in_choices"),
    ("file", {}, "abc", "file_parsing"),
    ("file", {}, "g" * 64, "file_parsing"),
    ("file", {}, "a" * 63, "file_parsing"),
    ("file", {}, 123, "file_parsing"),
    ("file", {}, "b" * 64, "unknown_file"),
    ("file", {"max_size": 1_999}, SHA_A, "file_too_large"),
    ("file", {"accept": [".csv"]}, SHA_A, "file_not_accepted"),
    ("file", {"accept": ["text/*"]}, SHA_A, "file_not_accepted"),
    ("file", {"accept": ["image/jpeg"]}, SHA_A, "file_not_accepted"),
    ("file", {"accept": ["image/*", ".csv"]}, SHA_C, "file_not_accepted"),
    ("file_list", {}, [SHA_A, "b" * 64], "unknown_file"),
    ("file_list", {}, [SHA_A, 5], "string_type"),
    ("file_list", {"max_size": 100}, [SHA_B, SHA_A], "file_too_large"),
    ("reference", {}, 5, "reference_type"),
    ("reference", {}, ["r1"], "reference_type"),
    ("reference_list", {}, 5, "list_type"),
    ("reference_list", {}, ["r1", 2], "string_type"),
    ("nonsense", {}, "x", "unknown_type"),
]


@pytest.mark.parametrize(("type_", "restrictions", "value", "kind"), REJECTED)
def test_coerce_rejects(type_: str, restrictions: dict[str, Any], value: Any, kind: str) -> None:
    exc = problem(type_, restrictions, value, file_lookup=lookup)
    assert exc.type_ == kind
    assert str(exc) == exc.msg and exc.msg
    assert isinstance(exc.ctx, dict)


def test_single_file_is_a_one_item_file_list() -> None:
    assert coerce_value("file_list", {}, SHA_A, file_lookup=lookup) == [SHA_A]


@pytest.mark.parametrize("type_", list(FIELD_TYPES))
@pytest.mark.parametrize("value", [None, ""])
def test_blank_is_none(type_: str, value: Any) -> None:
    assert coerce_value(type_, {}, value, file_lookup=lookup) is None


@pytest.mark.parametrize("type_", [t for t in FIELD_TYPES if t != "string"])
def test_whitespace_is_blank_except_for_strings(type_: str) -> None:
    assert coerce_value(type_, {}, "  ") is None


@pytest.mark.parametrize(("type_", "value"), [("tags", []), ("tags", ", ,"), ("reference_list", [" "]),
                                              ("file_list", [])])
def test_empty_lists_are_none(type_: str, value: Any) -> None:
    assert coerce_value(type_, {}, value) is None


def test_blank_skips_restrictions() -> None:
    assert coerce_value("string", {"choices": ["a"]}, "") is None
    assert coerce_value("integer", {"min": 5}, None) is None


def test_files_without_lookup_are_checked_for_form_only() -> None:
    assert coerce_value("file", {"max_size": 1, "accept": [".x"]}, "b" * 64) == "b" * 64
    assert problem("file", {}, "zz").type_ == "file_parsing"


def test_bound_messages_carry_ctx() -> None:
    exc = problem("integer", {"min": 5}, 4)
    assert exc.ctx == {"min": 5} and "5" in exc.msg
    exc = problem("string", {"choices": ["a", "b"]}, "c")
    assert exc.ctx == {"choices": ["a", "b"]}


# ------------------------------------------------------------------------- datetime and zones

@pytest.mark.parametrize(("value", "field_tz", "coll_tz", "stored"), [
    # offset-less: field timezone over collection timezone over UTC
    ("2024-05-01T10:00", None, None, "2024-05-01T10:00:00.000000Z"),
    ("2024-05-01T10:00", None, "Europe/Berlin", "2024-05-01T08:00:00.000000Z"),
    ("2024-05-01T10:00", "America/New_York", "Europe/Berlin", "2024-05-01T14:00:00.000000Z"),
    ("2024-05-01T10:00", "Asia/Kolkata", None, "2024-05-01T04:30:00.000000Z"),
    ("2024-05-01", "Europe/Berlin", None, "2024-04-30T22:00:00.000000Z"),
    ("2024-05-01", None, "Pacific/Auckland", "2024-04-30T12:00:00.000000Z"),
    # explicit offsets win over every zone
    ("2024-05-01T10:00Z", "America/New_York", "Europe/Berlin", "2024-05-01T10:00:00.000000Z"),
    ("2024-05-01T10:00+09:00", "America/New_York", None, "2024-05-01T01:00:00.000000Z"),
    ("2024-05-01T10:00-00:00", None, "Europe/Berlin", "2024-05-01T10:00:00.000000Z"),
    # DST-aware: Berlin is +01:00 in winter, +02:00 in summer
    ("2024-01-15T12:00", "Europe/Berlin", None, "2024-01-15T11:00:00.000000Z"),
    ("2024-07-15T12:00", "Europe/Berlin", None, "2024-07-15T10:00:00.000000Z"),
    ("2024-03-31T01:59", "Europe/Berlin", None, "2024-03-31T00:59:00.000000Z"),
    ("2024-03-31T03:00", "Europe/Berlin", None, "2024-03-31T01:00:00.000000Z"),
    # a time in the spring gap is read with the offset before the change (zoneinfo, fold=0)
    ("2024-03-31T02:30", "Europe/Berlin", None, "2024-03-31T01:30:00.000000Z"),
    # ambiguous hour at the autumn change: the first (summer-time) reading (fold=0)
    ("2024-10-27T02:30", "Europe/Berlin", None, "2024-10-27T00:30:00.000000Z"),
    ("2024-10-27T02:30+01:00", "Europe/Berlin", None, "2024-10-27T01:30:00.000000Z"),
])
def test_datetime_zones(value: str, field_tz: str | None, coll_tz: str | None, stored: str) -> None:
    restrictions = {"timezone": field_tz} if field_tz else {}
    assert coerce_value("datetime", restrictions, value, tz=coll_tz) == stored


def test_naive_datetime_object_read_in_zone() -> None:
    got = coerce_value("datetime", {}, datetime(2024, 7, 1, 12), tz="Europe/Berlin")
    assert got == "2024-07-01T10:00:00.000000Z"


def test_datetime_unknown_collection_zone() -> None:
    assert problem("datetime", {}, "2024-05-01T10:00", tz="Nowhere/City").type_ == "unknown_timezone"


def test_datetime_bounds_are_instants() -> None:
    r = validate_restrictions("datetime", {"timezone": "Europe/Berlin", "min": "2024-07-01T00:00"})
    assert coerce_value("datetime", r, "2024-06-30T22:00Z") == "2024-06-30T22:00:00.000000Z"
    assert problem("datetime", r, "2024-06-30T23:59", tz="UTC").type_ == "less_than_min"
    assert problem("datetime", r, "2024-06-30T21:59:59.999999Z").type_ == "less_than_min"
    # unnormalised bounds are read the same way
    raw = {"timezone": "Europe/Berlin", "min": "2024-07-01T00:00"}
    assert problem("datetime", raw, "2024-06-30T21:59Z").type_ == "less_than_min"


@pytest.mark.parametrize(("stored", "field_tz", "coll_tz", "shown"), [
    ("2024-05-01T08:00:00.000000Z", None, None, "2024-05-01T08:00:00+00:00"),
    ("2024-05-01T08:00:00.000000Z", None, "Europe/Berlin", "2024-05-01T10:00:00+02:00"),
    ("2024-01-01T08:00:00.000000Z", None, "Europe/Berlin", "2024-01-01T09:00:00+01:00"),
    ("2024-05-01T08:00:00.000000Z", "America/New_York", "Europe/Berlin", "2024-05-01T04:00:00-04:00"),
    ("2024-05-01T08:00:00.250000Z", "Asia/Kolkata", None, "2024-05-01T13:30:00.250000+05:30"),
])
def test_display_datetime(stored: str, field_tz: str | None, coll_tz: str | None, shown: str) -> None:
    restrictions = {"timezone": field_tz} if field_tz else {}
    assert display_value("datetime", restrictions, stored, tz=coll_tz) == shown


@pytest.mark.parametrize(("type_", "stored"), [
    ("string", "x"), ("integer", 3), ("float", 2.5), ("boolean", False), ("date", "2024-05-01"),
    ("tags", ["a"]), ("file", SHA_A), ("reference_list", ["r1"]), ("datetime", None),
    ("datetime", "garbage"), ("datetime", 12),
])
def test_display_other_values_as_stored(type_: str, stored: Any) -> None:
    assert display_value(type_, {}, stored, tz="Europe/Berlin") == stored


def test_display_with_broken_zone_falls_back_to_utc() -> None:
    got = display_value("datetime", {"timezone": "Nowhere/City"}, "2024-05-01T08:00:00.000000Z")
    assert got == "2024-05-01T08:00:00+00:00"


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC"])
@pytest.mark.parametrize("local", ["2024-01-15T12:00:00", "2024-07-15T06:30:15.123456", "2024-03-31T03:30:00"])
def test_display_round_trip(zone: str, local: str) -> None:
    stored = coerce_value("datetime", {}, local, tz=zone)
    shown = display_value("datetime", {}, stored, tz=zone)
    assert isinstance(shown, str)
    assert datetime.fromisoformat(shown).replace(tzinfo=None) == datetime.fromisoformat(local)
    assert coerce_value("datetime", {}, shown, tz="Asia/Tokyo") == stored


# ------------------------------------------------------------------------------- properties

@given(st.integers(min_value=-(10**18), max_value=10**18))
def test_integer_round_trip(n: int) -> None:
    assert coerce_value("integer", {}, n) == n
    assert coerce_value("integer", {}, str(n)) == n
    assert coerce_value("integer", {}, f" {n} ") == n
    assert coerce_value("integer", {}, float(n)) == int(float(n))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_round_trip(x: float) -> None:
    assert coerce_value("float", {}, x) == x
    assert coerce_value("float", {}, repr(x)) == x


aware = st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31),
                     timezones=st.sampled_from([UTC, ZoneInfo("Europe/Berlin"), ZoneInfo("Asia/Kolkata"),
                                                timezone(timedelta(hours=-9, minutes=-30))]))


@given(st.lists(aware, min_size=2, max_size=8))
def test_datetime_stored_form_sorts_like_instants(values: list[datetime]) -> None:
    stored = [coerce_value("datetime", {}, v.isoformat()) for v in values]
    assert all(isinstance(s, str) and len(s) == 27 and s.endswith("Z") for s in stored)
    by_text = sorted(range(len(values)), key=lambda i: (stored[i], i))
    by_time = sorted(range(len(values)), key=lambda i: (values[i].astimezone(UTC), i))
    assert by_text == by_time


@given(aware, st.sampled_from([None, "Europe/Berlin", "America/Sao_Paulo"]))
def test_datetime_display_is_the_same_instant(value: datetime, zone: str | None) -> None:
    stored = coerce_value("datetime", {}, value)
    shown = display_value("datetime", {}, stored, tz=zone)
    # (compared in UTC: == between zones is always False for a time in a DST fold, PEP 495)
    assert isinstance(shown, str) and datetime.fromisoformat(shown).astimezone(UTC) == value.astimezone(UTC)


@given(st.lists(st.text(alphabet="abc ,", max_size=5), max_size=6))
def test_tags_are_clean_and_stable(raw: list[str]) -> None:
    tags = coerce_value("tags", {}, [t.replace(",", "") for t in raw])
    assert tags is None or isinstance(tags, list)
    assert len(set(tags or [])) == len(tags or []) and all(t == t.strip() and t for t in tags or [])
    assert coerce_value("tags", {}, tags) == tags
