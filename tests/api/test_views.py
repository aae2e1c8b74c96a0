"""Saved views (issue 16 item 2): CRUD, name uniqueness, every part checked as the record list
checks it, history entries of entity type ``view``, revert and delete/restore."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema, study_tree

REF_FIELDS = [{"name": "label", "type": "string"},
              {"name": "origin", "type": "reference", "restrictions": {"schema": "study"}}]


def view_body(**extra: Any) -> dict[str, Any]:
    return {"name": "north", "label": "North samples", "collection": "lab",
            "columns": ["site", "depth_m", "title", "natural_name"],
            "filter": {"and": [{"field": "site", "op": "eq", "value": "North"},
                               {"field": "title", "op": "contains", "value": "Lake", "schema": "study"}]},
            "sort": ["depth_m:desc", "study.title"], "search": "lake", "page_size": 25, **extra}


def view_entries(api: Any, **params: Any) -> list[dict[str, Any]]:
    return api.ok("GET", "/audit", params={"entity_type": "view", **params})["items"]  # type: ignore[no-any-return]


def test_create_read_list_update_delete(api):
    study_tree(api)
    made = api.ok("POST", "/schemas/sample/views", 201, json=view_body())
    assert made["schema"] == "sample" and made["collection"] == "lab" and made["deleted_at"] is None
    assert made["columns"] == ["site", "depth_m", "title", "natural_name"]
    assert made["filter"]["and"][1]["schema"] == "study" and made["sort"] == ["depth_m:desc", "study.title"]
    assert (made["search"], made["page_size"], made["label"]) == ("lake", 25, "North samples")
    assert api.ok("GET", "/schemas/sample/views/north") == made
    assert api.ok("GET", f"/schemas/sample/views/{made['id'].lower()}")["id"] == made["id"]
    everywhere = api.ok("POST", "/schemas/study/views", 201, json={"name": "all_studies"})
    assert everywhere["collection"] is None and everywhere["columns"] == [] and everywhere["filter"] is None
    assert [v["name"] for v in api.ok("GET", "/views")] == ["north", "all_studies"]  # by schema name
    assert [v["name"] for v in api.ok("GET", "/schemas/sample/views")] == ["north"]

    changed = api.ok("PATCH", "/schemas/sample/views/north",
                     json={"rename": "deep_north", "filter": None, "page_size": None, "label": "Deep"})
    assert (changed["name"], changed["filter"], changed["page_size"], changed["label"]) == ("deep_north", None,
                                                                                            None, "Deep")
    assert changed["sort"] == made["sort"] and changed["columns"] == made["columns"]  # absent: unchanged
    assert api.get("/schemas/sample/views/north").status_code == 404

    assert api.delete("/schemas/sample/views/deep_north").status_code == 204
    assert api.get("/schemas/sample/views/deep_north").status_code == 404
    assert [v["name"] for v in api.ok("GET", "/views")] == ["all_studies"]
    assert api.delete("/schemas/sample/views/deep_north").status_code == 404
    assert api.get("/schemas/nope/views").status_code == 404


def test_name_unique_among_live_views_of_a_schema(api):
    study_tree(api)
    api.ok("POST", "/schemas/sample/views", 201, json={"name": "mine"})
    taken = api.post("/schemas/sample/views", json={"name": "mine"})
    assert taken.status_code == 409 and "mine" in taken.json()["detail"]
    api.ok("POST", "/schemas/study/views", 201, json={"name": "mine"})  # another schema: fine
    api.ok("POST", "/schemas/sample/views", 201, json={"name": "other"})
    assert api.patch("/schemas/sample/views/other", json={"rename": "mine"}).status_code == 409
    api.ok("DELETE", "/schemas/sample/views/mine", 204)
    api.ok("POST", "/schemas/sample/views", 201, json={"name": "mine"})  # a deleted view's name is free


def test_bad_filter_names_the_leaf(api):
    study_tree(api)
    body = view_body(filter={"and": [{"field": "site", "op": "eq", "value": "North"},
                                     {"field": "depth_m", "op": "contains", "value": 3}]})
    bad = api.post("/schemas/sample/views", json=body)
    assert bad.status_code == 422, bad.text
    [error] = bad.json()["errors"]
    assert error["loc"] == ["body", "filter", "and", 1] and "depth_m" in error["msg"]
    unknown = api.post("/schemas/sample/views", json=view_body(filter={"or": [{"field": "nope", "op": "eq",
                                                                              "value": 1}]}))
    assert unknown.status_code == 409 and unknown.json()["errors"][0]["loc"] == ["body", "filter", "or", 0]
    assert "nope" in unknown.json()["detail"]
    # a schema-wide view is checked in each collection holding the schema, named in the message
    make_collection(api, "other", ["study"])
    wide = api.post("/schemas/study/views", json={"name": "w", "filter": {"field": "title", "op": "eq",
                                                                          "value": "x", "schema": "sample"}})
    assert wide.status_code == 409 and "'other'" in wide.json()["detail"]  # sample is not one of other's
    assert view_entries(api) == []  # nothing refused was saved or recorded


def test_unknown_column_sort_and_collection(api):
    study_tree(api)
    make_schema(api, "loose", [{"name": "x", "type": "string"}])
    make_collection(api, "elsewhere", ["loose"])
    assert api.post("/schemas/sample/views", json=view_body(columns=["site", "title", "site"])).status_code == 422
    bad = api.post("/schemas/sample/views", json=view_body(columns=["site", "nope"]))
    assert bad.status_code == 409  # the body names no such column
    assert [(e["loc"], e["type"]) for e in bad.json()["errors"]] == [(["body", "columns", 1], "unknown_column")]
    sort = api.post("/schemas/sample/views", json=view_body(sort=["site", "nope:desc"]))
    assert sort.status_code == 409 and sort.json()["errors"][0]["loc"] == ["body", "sort", 1]
    direction = api.post("/schemas/sample/views", json=view_body(sort=["site:up"]))
    assert direction.status_code == 422
    wrong = api.post("/schemas/sample/views", json=view_body(collection="elsewhere"))
    assert wrong.status_code == 409 and wrong.json()["errors"][0]["loc"] == ["body", "collection"]
    missing = api.post("/schemas/sample/views", json=view_body(collection="missing"))
    assert missing.status_code == 409 and missing.json()["errors"][0]["type"] == "unknown_collection"
    extra = api.post("/schemas/sample/views", json={"name": "x", "colour": "red"})
    assert extra.status_code == 422  # the document refuses unknown keys
    assert api.post("/schemas/sample/views", json={"name": "Bad Name"}).status_code == 422
    assert api.post("/schemas/sample/views", json={"name": "x", "page_size": 0}).status_code == 422
    assert api.post("/schemas/nope/views", json={"name": "x"}).status_code == 404
    api.ok("POST", "/schemas/sample/views", 201, json={"name": "ok"})
    assert api.patch("/schemas/sample/views/ok", json={"columns": ["nope"]}).status_code == 409
    assert api.ok("GET", "/schemas/sample/views/ok")["columns"] == []  # the refused change left nothing


def test_inherited_and_reference_columns(api):
    study_tree(api)
    make_schema(api, "note", REF_FIELDS)
    make_collection(api, "notes", ["note", "study"])
    made = api.ok("POST", "/schemas/note/views", 201,
                  json={"name": "with_origin", "columns": ["label", "origin.title", "origin.natural_name"],
                        "sort": ["label"]})
    assert made["columns"] == ["label", "origin.title", "origin.natural_name"]
    assert api.post("/schemas/note/views", json={"name": "b", "columns": ["origin.nope"]}).status_code == 409
    # inherited: measurement sees sample's and study's fields
    api.ok("POST", "/schemas/measurement/views", 201,
           json={"name": "inherited", "columns": ["value", "site", "title"], "sort": ["sample.depth_m:desc"]})


def test_history_entries_and_revert(api):
    study_tree(api)
    made = api.ok("POST", "/schemas/sample/views", 201, json=view_body())
    [create] = view_entries(api)
    assert (create["action"], create["entity_id"], create["new_data"]["name"]) == ("create", made["id"], "north")
    assert create["new_data"]["filter"] == made["filter"]
    api.ok("PATCH", "/schemas/sample/views/north", json={"sort": ["site"], "search": None, "label": "North samples"})
    update = view_entries(api)[0]
    assert update["action"] == "update"
    assert {c["field"]: (c["before"], c["after"]) for c in update["changes"]} == {
        "sort": (["depth_m:desc", "study.title"], ["site"]), "search": ("lake", None)}
    assert api.ok("GET", "/audit", params={"entity_id": made["id"]})["total"] == 2
    events = api.ok("GET", "/audit/events", params={"filter": '{"field": "entity_type", "op": "eq", "value": "view"}'})
    assert [e["entry"]["action"] for e in events["items"]] == ["update", "create"]
    api.ok("PATCH", "/schemas/sample/views/north", json={"label": "North samples"})  # no change, no entry
    assert len(view_entries(api)) == 2

    plan = api.ok("GET", f"/audit/{update['id']}/revert")
    assert plan["kind"] == "update" and plan["can_apply"] and {f["field"] for f in plan["fields"]} == {"sort", "search"}
    api.ok("POST", f"/audit/{update['id']}/revert", json={})
    back = api.ok("GET", "/schemas/sample/views/north")
    assert back["sort"] == made["sort"] and back["search"] == "lake"
    assert view_entries(api)[0]["action"] == "update"

    # reverting the create deletes it
    api.ok("POST", f"/audit/{create['id']}/revert", json={})
    assert api.get("/schemas/sample/views/north").status_code == 404
    assert view_entries(api, action="delete")[0]["old_data"]["columns"] == made["columns"]


def test_delete_and_restore_through_history(api):
    study_tree(api)
    made = api.ok("POST", "/schemas/sample/views", 201, json=view_body())
    api.ok("DELETE", "/schemas/sample/views/north", 204)
    [deleted] = view_entries(api, action="delete")
    assert deleted["old_data"]["filter"] == made["filter"] and deleted["new_data"] is None
    plan = api.ok("GET", f"/audit/{deleted['id']}/revert")
    assert plan["kind"] == "restore" and plan["can_apply"]
    result = api.ok("POST", f"/audit/{deleted['id']}/revert", json={})
    assert result["kind"] == "restore"
    restored = api.ok("GET", "/schemas/sample/views/north")
    assert {k: restored[k] for k in ("id", "columns", "filter", "sort")} == {
        k: made[k] for k in ("id", "columns", "filter", "sort")}
    assert view_entries(api)[0]["action"] == "restore"
    # restoring onto a taken name is refused
    api.ok("DELETE", "/schemas/sample/views/north", 204)
    again = view_entries(api, action="delete")[0]
    api.ok("POST", "/schemas/sample/views", 201, json={"name": "north"})
    refused = api.post(f"/audit/{again['id']}/revert", json={})
    assert refused.status_code == 409 and "north" in refused.json()["detail"]
    assert [v["id"] for v in api.ok("GET", "/schemas/sample/views")] != [made["id"]]


def test_views_of_a_deleted_schema_are_hidden(api):
    make_schema(api, "solo", [{"name": "x", "type": "string"}])
    api.ok("POST", "/schemas/solo/views", 201, json={"name": "v", "columns": ["x"], "sort": ["x:desc"],
                                                     "filter": {"field": "x", "op": "eq", "value": "a"}})
    # no collection holds the schema: checked against the schema alone
    assert api.post("/schemas/solo/views", json={"name": "w", "sort": ["y"]}).status_code == 409
    assert api.post("/schemas/solo/views", json={"name": "w", "filter": {"field": "y", "op": "eq",
                                                                         "value": 1}}).status_code == 409
    api.ok("DELETE", "/schemas/solo", 204)
    assert api.ok("GET", "/views") == []


def test_record_list_applies_a_view(api):
    tree = study_tree(api)
    for site, depth in (("North", 1.0), ("North", 7.5), ("South", 9.0)):
        make_record(api, "lab", "sample", {"site": site, "depth_m": depth}, parent=tree["study"]["id"])
    view = api.ok("POST", "/schemas/sample/views", 201,
                  json={"name": "north", "collection": "lab", "columns": ["site", "title", "natural_name"],
                        "filter": {"field": "site", "op": "eq", "value": "North"}, "sort": ["depth_m:desc"]})
    page = api.ok("GET", "/collections/lab/records", params={"view": view["id"]})
    assert [r["data"]["depth_m"] for r in page["items"]] == [7.5, 2.5, 1.0]
    assert {r["schema_name"] for r in page["items"]} == {"sample"}
    assert page["items"][0]["derived"] == {"title": "Lake survey"}  # only the derived column is asked for
    by_name = api.ok("GET", "/collections/lab/records", params={"view": "north", "schema": "sample",
                                                                  "sort": "depth_m:asc"})
    assert [r["data"]["depth_m"] for r in by_name["items"]] == [1.0, 2.5, 7.5]  # the request's sort wins
    searched = api.ok("GET", "/collections/lab/records", params={"view": "north", "schema": "sample",
                                                                   "filter": '{"field": "site", "op": "eq", "value": "South"}'})
    assert [r["data"]["site"] for r in searched["items"]] == ["South"]
    for params, type_, status in (({"view": "north"}, "unknown_view", 404),
                                  ({"view": "nope", "schema": "sample"}, "unknown_view", 404),
                                  ({"view": view["id"], "schema": "study"}, "view_schema", 409)):
        bad = api.get("/collections/lab/records", params=params)
        assert bad.status_code == status and bad.json()["errors"][0]["loc"] == ["query", "view"], params
        assert bad.json()["errors"][0]["type"] == type_
    make_collection(api, "lab2", ["study", "sample"])
    elsewhere = api.get("/collections/lab2/records", params={"view": view["id"]})
    assert elsewhere.status_code == 409 and elsewhere.json()["errors"][0]["type"] == "view_collection"
    api.ok("DELETE", "/schemas/sample/views/north", 204)
    assert api.get("/collections/lab/records", params={"view": view["id"]}).status_code == 404
