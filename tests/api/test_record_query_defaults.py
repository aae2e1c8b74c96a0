"""Issue 14 (items 8, 10, 14) through the API, so the CLI and HTTP cannot drift: ``sort``
without ``schema``, ``where`` on inherited fields, ``limit=0`` for just the total, and record
ids given by their random tail."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema, study_tree


def ids_of(page: dict[str, Any]) -> list[str]:
    return [item["id"] for item in page["items"]]


def measurements(api: Any) -> dict[str, Any]:
    tree = study_tree(api)
    south = make_record(api, "lab", "sample", {"site": "South", "taken_on": "2024-06-01"}, parent=tree["study"]["id"])
    values = {}
    for parent, value in ((tree["sample"], 2.0), (south, 1.0), (tree["sample"], 3.0)):
        values[value] = make_record(api, "lab", "measurement", {"value": value}, parent=parent["id"])
    return {**tree, "south": south, "m": values}


def test_sort_without_schema_uses_the_one_schema_that_has_the_field(api: Any) -> None:
    t = measurements(api)
    page = api.ok("GET", "/collections/lab/records", params={"sort": "value:desc"})
    m = t["m"]
    assert ids_of(page)[:3] == [m[3.0]["id"], m[2.0]["id"], m[1.0]["id"]]
    assert set(ids_of(page)[3:]) == {t["study"]["id"], t["sample"]["id"], t["south"]["id"]}  # no value: last


def test_sort_without_schema_reads_inherited_fields_and_base_columns(api: Any) -> None:
    t = measurements(api)
    page = api.ok("GET", "/collections/lab/records", params={"sort": ["site", "value"]})
    m = t["m"]
    # North: its measurements by value, then the sample (no value: last); South likewise; the study has no site
    assert ids_of(page) == [m[2.0]["id"], m[3.0]["id"], t["sample"]["id"], m[1.0]["id"], t["south"]["id"],
                            t["study"]["id"]]
    newest = api.ok("GET", "/collections/lab/records", params={"sort": "created_at:desc", "limit": 1})
    assert ids_of(newest) == [m[3.0]["id"]]


def test_sort_without_schema_refuses_a_field_of_different_kinds_or_none(api: Any) -> None:
    make_schema(api, "box", [{"name": "size", "type": "integer"}])
    make_schema(api, "bag", [{"name": "size", "type": "string"}])
    make_collection(api, "store", ["box", "bag"])
    make_record(api, "store", "box", {"size": 3})
    r = api.get("/collections/store/records", params={"sort": "size"})
    assert r.status_code == 409, r.text  # the stored schemas disagree on what size is
    assert r.json()["errors"][0]["loc"] == ["query", "sort", 0]
    assert "name the schema" in r.json()["detail"]
    assert api.get("/collections/store/records", params={"sort": "weight"}).status_code == 404
    assert api.ok("GET", "/collections/store/records", params={"sort": "size", "schema": "box"})["total"] == 1


def test_sort_without_schema_across_schemas_sharing_a_field(api: Any) -> None:
    make_schema(api, "box", [{"name": "size", "type": "integer"}])
    make_schema(api, "crate", [{"name": "size", "type": "integer"}])
    make_collection(api, "store", ["box", "crate"])
    made = [make_record(api, "store", schema, {"size": size})["id"]
            for schema, size in (("box", 5), ("crate", 1), ("box", 3), ("crate", 4))]
    page = api.ok("GET", "/collections/store/records", params={"sort": "size"})
    assert ids_of(page) == [made[1], made[2], made[3], made[0]]


def test_where_accepts_inherited_fields_like_filter(api: Any) -> None:
    t = measurements(api)
    m = t["m"]
    north = api.ok("GET", "/collections/lab/records", params={"where": "site=North"})
    assert set(ids_of(north)) == {t["sample"]["id"], m[2.0]["id"], m[3.0]["id"]}
    both = api.ok("GET", "/collections/lab/records", params={"schema": "measurement",
                                                             "where": ["site=North", "value=3"]})
    assert ids_of(both) == [m[3.0]["id"]]
    title = api.ok("GET", "/collections/lab/records", params={"schema": "measurement", "where": "title=Lake survey"})
    assert title["total"] == 3  # two levels up
    same = api.ok("GET", "/collections/lab/records", params={
        "schema": "measurement", "filter": '{"field": "site", "op": "eq", "value": "North"}'})
    assert set(ids_of(same)) == {m[2.0]["id"], m[3.0]["id"]}
    unknown = api.get("/collections/lab/records", params={"where": "nope=1"})
    assert unknown.status_code == 404 and unknown.json()["errors"][0]["loc"] == ["query", "where", 0]


def test_limit_zero_answers_only_the_total(api: Any) -> None:
    measurements(api)
    page = api.ok("GET", "/collections/lab/records", params={"limit": 0, "schema": "measurement"})
    assert page == {"items": [], "total": 3, "total_exact": True, "offset": 0, "limit": 0}


def test_a_record_id_resolves_by_its_random_tail(api: Any) -> None:
    t = measurements(api)
    target = t["m"][2.0]["id"]
    assert api.ok("GET", f"/records/{target[-8:]}")["id"] == target
    assert api.ok("GET", f"/records/{target[-8:].lower()}")["id"] == target
    kids = api.ok("GET", "/collections/lab/records", params={"parent_record_id": t["south"]["id"][-8:]})
    assert ids_of(kids) == [t["m"][1.0]["id"]]
    ambiguous = api.get(f"/records/{target[:4]}")  # made in the same second: same time prefix
    assert ambiguous.status_code == 422
    detail = ambiguous.json()["detail"]
    assert "ambiguous" in detail and "last 8 characters" in detail and target[:4] in detail
    assert api.get("/records/ZZZZZZZZ").status_code == 404
