"""References by key (issue 35 item 1): a reference typed as a record id, a unique id prefix or
suffix, the target's uniqueness key value or its natural name resolves to the id, within what
the field may reach; ambiguous and unknown values are 422 entries naming field and value. On
both backends (the ``api`` fixture)."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def airline_world(api: Any) -> dict[str, Any]:
    """airline (key ``code``, named by ``name``), plane (named by ``tailnum``, no key), flight
    with a reference to each and a reference_list of airlines; collections ``nyc`` (local) and
    ``ref`` (global, holding an airline), ``other`` (local, holding an airline)."""
    make_schema(api, "airline", [{"name": "code", "type": "string"}, {"name": "name", "type": "string"}],
                display_template="{name}")
    api.ok("PUT", "/schemas/airline/unique-keys", json={"keys": [["code"]]})
    make_schema(api, "plane", [{"name": "tailnum", "type": "string"}, {"name": "seats", "type": "integer"}],
                display_template="{tailnum}")
    make_schema(api, "flight", [
        {"name": "number", "type": "integer"},
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "plane", "type": "reference", "restrictions": {"schema": "plane"}},
        {"name": "partners", "type": "reference_list", "restrictions": {"schema": "airline"}}])
    make_collection(api, "nyc", ["airline", "plane", "flight"])
    make_collection(api, "ref", ["airline"], scope="global")
    make_collection(api, "other", ["airline"])
    out = {
        "UA": make_record(api, "nyc", "airline", {"code": "UA", "name": "United Air Lines Inc."}),
        "AA": make_record(api, "nyc", "airline", {"code": "AA", "name": "American Airlines Inc."}),
        "B6": make_record(api, "ref", "airline", {"code": "B6", "name": "JetBlue Airways"}),
        "DL": make_record(api, "other", "airline", {"code": "DL", "name": "Delta Air Lines Inc."}),
        "N14228": make_record(api, "nyc", "plane", {"tailnum": "N14228", "seats": 149}),
    }
    return out


def flight(api: Any, data: dict[str, Any], status: int = 201) -> Any:
    return api.ok("POST", "/collections/nyc/records", status, json={"schema_name": "flight", "data": data})


def test_a_reference_resolves_by_key_name_prefix_suffix_and_id(api: Any) -> None:
    w = airline_world(api)
    ua, aa, b6, plane = w["UA"]["id"], w["AA"]["id"], w["B6"]["id"], w["N14228"]["id"]
    made = flight(api, {"number": 1545, "carrier": "UA", "plane": "N14228", "partners": ["AA", "JetBlue Airways"]})
    assert (made["data"]["carrier"], made["data"]["plane"], made["data"]["partners"]) == (ua, plane, [aa, b6])
    assert flight(api, {"carrier": "American Airlines Inc."})["data"]["carrier"] == aa  # natural name
    assert flight(api, {"carrier": ua[-8:]})["data"]["carrier"] == ua  # the short id (suffix)
    assert flight(api, {"carrier": ua[:20].lower()})["data"]["carrier"] == ua  # a prefix, any case
    assert flight(api, {"carrier": ua})["data"]["carrier"] == ua
    assert flight(api, {"carrier": " B6 "})["data"]["carrier"] == b6  # a global collection is in reach
    edited = api.ok("PATCH", f"/records/{made['id']}", json={"data": {"carrier": "AA", "partners": "UA,AA"}})
    assert (edited["data"]["carrier"], edited["data"]["partners"]) == (aa, [ua, aa])


def test_unknown_out_of_reach_and_ambiguous_keys_are_422_naming_field_and_value(api: Any) -> None:
    w = airline_world(api)
    body = flight(api, {"carrier": "ZZ", "partners": ["UA", "DL"]}, 422)
    entries = {(e["loc"][-1], e["type"], e["input"]) for e in body["errors"]}
    assert entries == {("carrier", "reference_unknown", "ZZ"), ("partners", "reference_unknown", "DL")}
    assert "carrier: no 'airline' record within reach has code, natural name or id 'ZZ'" in body["detail"]
    make_record(api, "ref", "airline", {"code": "UX", "name": "United Air Lines Inc."})  # the same name as UA
    body = flight(api, {"carrier": "United Air Lines Inc."}, 422)
    [entry] = body["errors"]
    assert (entry["loc"], entry["type"], entry["input"]) == (
        ["body", "data", "carrier"], "reference_ambiguous", "United Air Lines Inc.")
    assert entry["msg"].startswith("carrier: 2 'airline' records within reach have the natural name")
    assert flight(api, {"carrier": "UA"})["data"]["carrier"] == w["UA"]["id"]  # the key still tells them apart
    body = flight(api, {"plane": w["UA"]["id"]}, 422)  # a whole id of another schema: the rules as before
    assert body["errors"][0]["type"] == "reference" and "is a 'airline', not a 'plane'" in body["errors"][0]["msg"]


def test_where_on_a_reference_takes_a_key(api: Any) -> None:
    airline_world(api)
    flight(api, {"number": 1, "carrier": "UA", "partners": ["AA"]})
    flight(api, {"number": 2, "carrier": "AA", "partners": ["UA", "AA"]})
    listed = api.ok("GET", "/collections/nyc/records", params={"schema": "flight", "where": "carrier=UA"})
    assert [r["data"]["number"] for r in listed["items"]] == [1]
    listed = api.ok("GET", "/collections/nyc/records", params={"schema": "flight", "where": "partners=UA"})
    assert [r["data"]["number"] for r in listed["items"]] == [2]
    body = api.ok("GET", "/collections/nyc/records", 422, params={"schema": "flight", "where": "carrier=ZZ"})
    assert body["errors"][0]["loc"] == ["query", "where", 0] and body["errors"][0]["type"] == "reference_unknown"
