"""Schemas and fields: create, list, get, update, soft delete, restore, purge, keys, order."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema


def test_schema_lifecycle(api):
    created = make_schema(api, "sample", [{"name": "site", "type": "string", "label": "Site"}],
                          label="Sample", description="A water sample")
    assert created["fields"][0]["name"] == "site" and created["unique_keys"] == []
    assert [s["name"] for s in api.ok("GET", "/schemas")] == ["sample"]
    assert api.ok("GET", f"/schemas/{created['id']}")["name"] == "sample"
    updated = api.ok("PATCH", "/schemas/sample", json={"rename": "water", "label": ""})
    assert updated["name"] == "water" and updated["label"] is None
    assert api.get("/schemas/sample").status_code == 404
    api.ok("DELETE", "/schemas/water", 204)
    assert [s["name"] for s in api.ok("GET", "/schemas/deleted")] == ["water"]
    plan = api.ok("GET", "/schemas/water/restore-plan")
    assert plan["kind"] == "schema" and plan["can_restore"] is True
    assert api.ok("POST", "/schemas/water/restore")["deleted_at"] is None
    r = api.delete("/schemas/water/purge")  # a live schema is deleted first
    assert r.status_code == 409 and "is live" in r.json()["detail"]
    api.ok("DELETE", "/schemas/water", 204)
    api.ok("DELETE", "/schemas/water/purge", 204)
    assert api.get("/schemas/water/restore-plan").status_code == 404


def test_a_restore_blocked_by_a_deleted_parent_schema_is_422_and_a_taken_name_409(api):
    """DESIGN.md *Status codes*: blocked restores 422 (as for a record under a deleted parent),
    a name taken 409."""
    make_schema(api, "site")
    api.ok("POST", "/schemas", 201, json={"name": "plot", "parent": "site"})
    api.ok("DELETE", "/schemas/plot", 204)
    api.ok("DELETE", "/schemas/site", 204)
    plan = api.ok("GET", "/schemas/plot/restore-plan")
    assert plan["can_restore"] is False and plan["blocked_by"]["name"] == "site"
    r = api.post("/schemas/plot/restore")
    assert r.status_code == 422 and "restore it first" in r.json()["detail"]
    api.ok("POST", "/schemas/site/restore")
    api.ok("POST", "/schemas/plot/restore")
    api.ok("DELETE", "/schemas/plot", 204)
    make_schema(api, "plot")
    r = api.post(f"/schemas/{api.ok('GET', '/schemas/deleted')[0]['id']}/restore")
    assert r.status_code == 409 and "now named" in r.json()["detail"]


def test_schema_errors(api):
    make_schema(api, "a")
    assert api.post("/schemas", json={"name": "a"}).status_code == 409
    r = api.post("/schemas", json={"name": "b", "parent": "ghost"})  # the body names no schema
    assert r.status_code == 409 and r.json()["errors"][0]["loc"] == ["body", "parent"]
    r = api.post("/schemas", json={"name": "c", "fields": [{"name": "x", "type": "integer",
                                                            "restrictions": {"min": 5, "max": 1}}]})
    assert r.status_code == 422
    r = api.post("/schemas", json={"name": "d", "display_template": "{nope}", "fields": []})
    assert r.status_code == 409 and "nope" in r.json()["detail"]  # names no field
    r = api.post("/schemas", json={"name": "Bad Name"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "name"]


def test_schema_with_records_cannot_be_deleted(api):
    make_schema(api, "s", [{"name": "v", "type": "integer"}])
    make_collection(api, "c", ["s"])
    make_record(api, "c", "s", {"v": 1})
    r = api.delete("/schemas/s")
    assert r.status_code == 409 and "record" in r.json()["detail"]


def test_field_lifecycle_keeps_values(api):
    make_schema(api, "s", [{"name": "v", "type": "integer"}, {"name": "w", "type": "string"}])
    make_collection(api, "c", ["s"])
    rec = make_record(api, "c", "s", {"v": 7, "w": "x"})
    field = api.ok("POST", "/schemas/s/fields", 201, json={"name": "note", "type": "string", "default": "n/a"})
    assert field["default"] == "n/a"
    assert api.post("/schemas/s/fields", json={"name": "note", "type": "string"}).status_code == 409
    renamed = api.ok("PATCH", "/schemas/s/fields/v", json={"rename": "value", "label": "Value"})
    assert renamed["name"] == "value"
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["value"] == 7
    api.ok("DELETE", "/schemas/s/fields/value", 204)
    fetched = api.ok("GET", f"/records/{rec['id']}")
    assert "value" not in fetched["data"]
    assert fetched["deleted_fields"][0]["name"] == "value" and fetched["deleted_fields"][0]["value"] == 7
    plan = api.ok("GET", "/schemas/s/fields/value/restore-plan")
    assert plan["kind"] == "field" and plan["records"] == 1 and plan["can_restore"]
    api.ok("POST", "/schemas/s/fields/value/restore")
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["value"] == 7


def test_reorder_fields(api):
    s = make_schema(api, "s", [{"name": "a", "type": "string"}, {"name": "b", "type": "string"}])
    ids = [f["id"] for f in s["fields"]]
    out = api.ok("PUT", "/schemas/s/fields/reorder", json={"order": list(reversed(ids))})
    assert [f["name"] for f in out["fields"]] == ["b", "a"]
    assert api.put("/schemas/s/fields/reorder", json={"order": ["a"]}).status_code == 409  # b left out
    assert api.put("/schemas/s/fields/reorder", json={"order": ["a", ids[0]]}).status_code == 409  # a twice
    r = api.put("/schemas/s/fields/reorder", json={"order": ["a", "nope"]})
    assert r.status_code == 409 and r.json()["errors"][0]["loc"] == ["body", "order", 1]
    assert api.put("/schemas/s/fields/reorder", json={"order": ["a", "a"]}).status_code == 422  # the document says it


def test_unique_keys(api):
    make_schema(api, "site", [{"name": "code", "type": "string"}, {"name": "n", "type": "integer"}])
    make_collection(api, "c", ["site"])
    first = make_record(api, "c", "site", {"code": "A", "n": 1})
    make_record(api, "c", "site", {"code": "A", "n": 1})
    r = api.put("/schemas/site/unique-keys", json={"keys": [["code", "n"]]})
    assert r.status_code == 409  # existing records already break it
    api.ok("PATCH", f"/records/{first['id']}", json={"data": {"n": 2}})
    assert api.ok("PUT", "/schemas/site/unique-keys", json={"keys": [["code", "n"]]})["unique_keys"] == [["code", "n"]]
    entries = api.ok("GET", "/audit", params={"entity_type": "schema", "action": "update"})["total"]
    api.ok("PUT", "/schemas/site/unique-keys", json={"keys": [["code", "n"]]})  # the same keys again
    assert api.ok("GET", "/audit", params={"entity_type": "schema", "action": "update"})["total"] == entries == 1
    r = api.post("/collections/c/records", json={"schema_name": "site", "data": {"code": "A", "n": 2}})
    assert r.status_code == 409 and first["id"] in r.json()["detail"]
    make_record(api, "c", "site", {"code": "A"})  # blanks are exempt
    make_record(api, "c", "site", {"code": "A"})


def test_field_types_listed(api):
    types = {t["name"]: t for t in api.ok("GET", "/schemas/field-types")}
    assert set(types) == {"string", "integer", "float", "boolean", "date", "datetime", "url", "tags", "file",
                          "file_list", "reference", "reference_list"}
    assert "max_length" in types["string"]["restrictions"] and "gt" in types["integer"]["operators"]


def test_schema_audit_includes_own_fields(api):
    make_schema(api, "s", [{"name": "a", "type": "string"}])
    api.ok("POST", "/schemas/s/fields", 201, json={"name": "b", "type": "string"})
    page = api.ok("GET", "/schemas/s/audit")
    assert [(e["action"], e["entity_type"]) for e in page["items"]] == [("create", "field"), ("create", "schema")]


def test_purge_field_removes_kept_values(api):
    make_schema(api, "s", [{"name": "a", "type": "string"}, {"name": "b", "type": "integer"}])
    make_collection(api, "c", ["s"])
    rec = make_record(api, "c", "s", {"a": "x", "b": 5})
    assert api.delete("/schemas/s/fields/b/purge").status_code == 409
    api.ok("DELETE", "/schemas/s/fields/b", 204)
    api.ok("DELETE", "/schemas/s/fields/b/purge", 204)
    fetched = api.ok("GET", f"/records/{rec['id']}")
    assert fetched["deleted_fields"] == [] and fetched["data"] == {"a": "x"}
    entry = api.ok("GET", "/audit", params={"action": "purge", "entity_type": "field"})["items"][0]
    assert entry["old_data"]["values"] == {rec["id"]: 5}
    assert api.get("/schemas/s/fields/b/restore-plan").status_code == 404
