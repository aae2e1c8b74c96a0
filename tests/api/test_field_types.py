"""Field types at the edges of their rules, as a client sees them over HTTP (domain/catalog/dtypes.py;
the rules' tables are in tests/domain/test_dtypes.py): the largest integer, control
characters in URLs, a choice exactly as long as ``max_length``."""
from __future__ import annotations

from typing import Any

import pytest

from tests.api.helpers import make_collection, make_record, make_schema


def _error(r: Any) -> dict[str, Any]:
    assert r.status_code == 422, r.text[:300]
    return r.json()["errors"][0]  # type: ignore[no-any-return]


LARGEST = 2 ** 1024 - 2 ** 970 - 1  # the largest integer a double holds (rounded to 1.7976931348623157e308)


def test_an_integer_field_holds_what_a_double_can_and_refuses_more_on_every_backend(api: Any) -> None:
    """Filters and sorts compare integers as doubles; PostgreSQL answered 500 for larger ones."""
    make_schema(api, "s", [{"name": "n", "type": "integer"}])
    make_collection(api, "c", ["s"])
    for value in (LARGEST, -LARGEST, str(LARGEST)):
        rec = make_record(api, "c", "s", {"n": value})
        assert float(api.ok("GET", f"/records/{rec['id']}")["data"]["n"]) == float(int(value))
    for value in (LARGEST + 1, -LARGEST - 1, 10 ** 400, str(LARGEST + 1), "9" * 4000, "9" * 4001):
        r = api.post("/collections/c/records", json={"schema_name": "s", "data": {"n": value}})
        error = _error(r)
        assert error["loc"] == ["body", "data", "n"] and error["type"] == "finite_number"
    assert api.ok("GET", "/collections/c/records", params={"sort": "n:desc"})["items"][0]["data"]["n"] == float(LARGEST)
    assert api.ok("GET", "/collections/c/records", params={"filter": '{"field": "n", "op": "gt", "value": 1e308}'}
                  )["total"] == 2


@pytest.mark.parametrize("control", ["\x01", "\x08", "\x0e", "\x1b"])
def test_a_url_with_a_control_character_is_refused(api: Any, control: str) -> None:
    make_schema(api, "s", [{"name": "link", "type": "url"}])
    make_collection(api, "c", ["s"])
    r = api.post("/collections/c/records",
                 json={"schema_name": "s", "data": {"link": f"https://example.org/a{control}b"}})
    error = _error(r)
    assert error["loc"] == ["body", "data", "link"] and error["type"] == "url_parsing"
    assert api.ok("GET", "/collections/c/records")["total"] == 0


def test_a_choice_exactly_max_length_long_is_allowed(api: Any) -> None:
    make_schema(api, "s", [{"name": "grade", "type": "string",
                            "restrictions": {"choices": ["abc", "de"], "max_length": 3}}])
    assert api.ok("GET", "/schemas/s")["fields"][0]["restrictions"] == {"choices": ["abc", "de"], "max_length": 3}
    r = api.post("/schemas/s/fields", json={"name": "other", "type": "string",
                                            "restrictions": {"choices": ["abcd"], "max_length": 3}})
    assert _error(r)["type"] == "too_long"
    make_collection(api, "c", ["s"])
    assert make_record(api, "c", "s", {"grade": "abc"})["data"]["grade"] == "abc"
