"""values.merge_new_rows (many new records checked column by column, dtypes.column_coercer) gives
for every row exactly what values.merge_values gives for it alone: the same stored dict, key
order included (it is the stored JSON text), and the same problems. Random rows over every field
type, with and without restrictions, good values, near misses and values over the limits."""
from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.lookup import SchemaMeta
from benchbook.domain.records.values import merge_new_rows, merge_values

SHA = "ab" * 32
FIELDS: list[tuple[str, str, dict[str, Any], bool, Any]] = [  # name, type, restrictions, required, default
    ("s", "string", {}, False, None),
    ("s_short", "string", {"max_length": 5, "choices": ["a", "bb", "ccc", "dddddd"]}, False, "a"),
    ("i", "integer", {}, False, None),
    ("i_bound", "integer", {"min": -5, "max": 50}, True, None),
    ("x", "float", {}, False, None),
    ("x_bound", "float", {"min": 0.5, "max": 1e6}, False, 2.5),
    ("b", "boolean", {}, False, None),
    ("d", "date", {}, False, None),
    ("d_bound", "date", {"min": "2020-01-01", "max": "2030-12-31"}, False, None),
    ("t", "datetime", {}, False, None),
    ("t_zone", "datetime", {"timezone": "Europe/Paris", "min": "2020-01-01T00:00:00"}, False, None),
    ("u", "url", {}, False, None),
    ("tags", "tags", {"choices": ["a", "b", "c"]}, False, None),
    ("free", "tags", {}, False, None),
    ("f", "file", {"max_size": 100}, False, None),
    ("ref", "reference", {"schema": "plot"}, False, None),
]
FILES = {SHA: dtypes.FileMeta(filename="a.csv", size=10), "cd" * 32: dtypes.FileMeta(filename="b.csv", size=1000)}


def meta() -> SchemaMeta:
    fields = [SimpleNamespace(id=f"F{i:025d}", name=name, type=type_, restrictions=r, required=req, default=default,
                              deleted_at=None, label=None)
              for i, (name, type_, r, req, default) in enumerate(FIELDS)]
    out = object.__new__(SchemaMeta)
    out._fill(SimpleNamespace(id="S" * 26, name="obs"), fields, None)  # type: ignore[arg-type]
    return out


TEXT = st.one_of(st.text(max_size=8), st.sampled_from(["a", "bb", "dddddd", " 12 ", "1e3", "2024-02-30", "x\x00",
                                                      "\ud800", "é", "true", "", "   ", "http://x.org/a"]))
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**20, max_value=10**20), st.integers(-10, 60),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 2e6), TEXT,
    st.sampled_from(["2024-05-01", "2019-12-31", "2024-05-01T10:00:00", "2024-05-01T10:00:00+02:00",
                     "2019-06-01T00:00:00Z", "2024-05-01 10:00", SHA, "CD" * 32, "ee" * 32, "a,b", "a, z"]),
    st.lists(st.sampled_from(["a", "b", "c", "z", "", " a ", "\x00"]), max_size=4),
    st.just(["a"] * 1001), st.just("y" * 100_001), st.just({"nested": 1}),
)
GOOD: dict[str, st.SearchStrategy[Any]] = {
    "s": st.text(min_size=1, max_size=6), "s_short": st.sampled_from(["a", "bb", "ccc"]),
    "i": st.integers(-10**6, 10**6), "i_bound": st.integers(-5, 50), "x": st.floats(-1e9, 1e9) | st.integers(-9, 9),
    "x_bound": st.floats(0.5, 1e6), "b": st.booleans(), "d": st.dates().map(str), "d_bound": st.just("2024-02-29"),
    "t": st.datetimes().map(lambda d: d.isoformat()), "t_zone": st.just("2024-05-01T10:00:00"),
    "u": st.just("https://example.org/x"), "tags": st.lists(st.sampled_from("abc"), max_size=3),
    "free": st.lists(st.text(min_size=1, max_size=4), max_size=3), "f": st.just(SHA), "ref": st.just("R" * 26),
}
"""Values that pass, so that most rows take the column-by-column path."""
MOSTLY_GOOD = st.fixed_dictionaries({}, optional={name: GOOD[name] | VALUES if name != "i_bound" else GOOD[name]
                                                  for name, *_ in FIELDS})
ROWS = st.lists(MOSTLY_GOOD | st.dictionaries(st.sampled_from([f[0] for f in FIELDS] + ["nope"]), VALUES,
                                              max_size=6), min_size=1, max_size=12)
COLLECTION = SimpleNamespace(id="C" * 26, timezone="America/New_York")


def lookup(sha: str) -> dtypes.FileMeta | None:
    return FILES.get(sha)


@given(rows=ROWS)
def test_column_by_column_equals_row_by_row(rows: list[dict[str, Any]]) -> None:
    m = meta()
    loc = ("body", "data")
    expected = [merge_values(m, COLLECTION, row, current=None, loc=loc, file_lookup=lookup)  # type: ignore[arg-type]
                for row in rows]
    got = merge_new_rows(m, COLLECTION, rows, loc=loc, file_lookup=lookup)  # type: ignore[arg-type]
    assert [json.dumps(list(s.items()), default=str) for s, _ in got] == \
           [json.dumps(list(s.items()), default=str) for s, _ in expected]
    assert [e for _, e in got] == [e for _, e in expected]


def test_a_record_over_its_length_limit_reads_as_alone() -> None:
    m = meta()
    over = {"free": [f"{k:04d}" + "w" * 2000 for k in range(600)], "i_bound": 1}  # 1.2 million characters
    under = {"free": ["a"] * 3, "i_bound": 1}
    got = merge_new_rows(m, COLLECTION, [under, over], loc=("d",), file_lookup=lookup)  # type: ignore[arg-type]
    assert got[0] == ({"F0000000000000000000000013": ["a"], "F0000000000000000000000003": 1,
                       "F0000000000000000000000001": "a", "F0000000000000000000000005": 2.5}, [])
    assert got[1] == merge_values(m, COLLECTION, over, current=None, loc=("d",), file_lookup=lookup)  # type: ignore[arg-type]
    assert [e["type"] for e in got[1][1]] == ["too_long"]


@pytest.mark.parametrize(("type_", "restrictions", "value"), [
    ("integer", {}, 7), ("integer", {"min": 1}, 0), ("float", {}, 3), ("float", {}, 2**60), ("float", {}, 1e309),
    pytest.param("integer", {}, 2**1024 - 2**970 - 1, id="integer-largest-double"),
    pytest.param("integer", {}, 2**1024 - 2**970, id="integer-past-double"),
    pytest.param("integer", {}, -(2**1024 - 2**970), id="integer-past-negative-double"),
    ("boolean", {}, True), ("boolean", {}, "yes"), ("string", {}, ""), ("string", {}, "  "),
    ("date", {"min": "not a date"}, "2024-01-01"), ("datetime", {"timezone": "Nowhere/Else"}, "2024-01-01"),
    ("datetime", {}, "  "), ("date", {}, []), ("nonsense", {}, 1),
])
def test_column_coercer_answers_as_coerce_value(type_: str, restrictions: dict[str, Any], value: Any) -> None:
    def outcome(call: Any) -> Any:
        try:
            return ("ok", call())
        except dtypes.ValueProblem as exc:
            return ("problem", exc.msg, exc.type_)
    coerce = dtypes.column_coercer(type_, restrictions, tz="Europe/Paris")
    assert outcome(lambda: coerce(value)) == outcome(
        lambda: dtypes.coerce_value(type_, restrictions, value, tz="Europe/Paris"))


NUMERIC_TEXT = st.one_of(
    st.from_regex(r"\s?[+-]?([0-9]{1,25}\.?[0-9]{0,20}|\.[0-9]{1,5})([eE][+-]?[0-9]{1,4})?\s?", fullmatch=True),
    st.sampled_from(["-0", "+0", "-0.0", "0e0", "1_000", "inf", "nan", "1e400", "-1e400", "9" * 4001, "9" * 400,
                     " ", "", "0x10", "١٢", "1.5.2", "--1"]),
    st.text(max_size=8),
)


@given(value=NUMERIC_TEXT, type_=st.sampled_from(["float", "integer"]))
@example(value="-0", type_="float")
@example(value=" -0 ", type_="integer")
@example(value="9" * 4001, type_="integer")
@example(value="9" * 400, type_="integer")
@example(value="9" * 4001, type_="float")
@example(value="1e400", type_="float")
@example(value="12", type_="float")
def test_numeric_text_reads_as_coerce_value_reads_it(value: str, type_: str) -> None:
    """A file's cells are text: the number fields' short ways through them answer (value and its
    type, or problem) exactly as ``coerce_value``, ``-0`` and integers of every length included."""
    def outcome(call: Any) -> Any:
        try:
            got = call()
            return ("ok", type(got).__name__, repr(got))
        except dtypes.ValueProblem as exc:
            return ("problem", exc.msg, exc.type_)
    coerce = dtypes.column_coercer(type_, {})
    assert outcome(lambda: coerce(value)) == outcome(lambda: dtypes.coerce_value(type_, {}, value))
