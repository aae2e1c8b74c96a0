"""Collections: every operation of the spec's Collections table with its rules."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema, study_tree


def test_create_list_get_collection(api):
    make_schema(api, "site", [{"name": "name", "type": "string"}])
    created = make_collection(api, "field", ["site"], description="Field work", timezone="Europe/Berlin")
    assert created["name"] == "field" and created["schemas"] == ["site"]
    assert created["scope"] == "local" and created["timezone"] == "Europe/Berlin"
    assert created["record_count"] == 0 and created["deleted_at"] is None
    assert [c["name"] for c in api.ok("GET", "/collections")] == ["field"]
    assert api.ok("GET", "/collections/field")["id"] == created["id"]
    assert api.ok("GET", f"/collections/{created['id']}")["name"] == "field"


def test_create_collection_errors(api):
    make_collection(api, "dup", [])
    r = api.post("/collections", json={"name": "dup"})
    assert r.status_code == 409 and "already exists" in r.json()["detail"]
    r = api.post("/collections", json={"name": "x", "schemas": ["nope"]})  # the body names no schema
    assert r.status_code == 409 and r.json()["errors"][0]["loc"] == ["body", "schemas", 0]
    for zone in ("Mars/Olympus", "localtime"):  # the form of a name, but no IANA zone (localtime is the system's)
        r = api.post("/collections", json={"name": "x", "timezone": zone})
        assert r.status_code == 422 and "timezone" in r.json()["detail"]
    r = api.post("/collections", json={"name": "x", "timezone": "Europe Berlin"})  # the document's pattern
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "timezone"]
    r = api.post("/collections", json={"name": "x", "bogus": 1, "scope": "galactic"})
    body = r.json()
    assert r.status_code == 422 and body["detail"] == "Request validation failed"
    assert len(body["errors"]) == 2 and all({"loc", "msg", "type"} <= set(e) for e in body["errors"])
    assert api.get("/collections/ghost").status_code == 404


def test_child_schema_needs_its_parent_listed(api):
    make_schema(api, "study")
    make_schema(api, "sample", parent="study")
    r = api.post("/collections", json={"name": "c", "schemas": ["sample"]})  # the schema tree refuses it
    assert r.status_code == 409 and "study" in r.json()["detail"]
    assert make_collection(api, "c", ["study", "sample"])["schemas"] == ["study", "sample"]


def test_update_collection_rules(api):
    study_tree(api)
    r = api.patch("/collections/lab", json={"schemas": ["study"]})
    assert r.status_code == 409 and "sample" in r.json()["detail"]
    updated = api.ok("PATCH", "/collections/lab", json={"description": "d", "timezone": "Asia/Tokyo",
                                                         "rename": "lab2"})
    assert updated["name"] == "lab2" and updated["timezone"] == "Asia/Tokyo" and updated["description"] == "d"
    assert api.ok("PATCH", "/collections/lab2", json={"timezone": ""})["timezone"] is None
    assert api.ok("PATCH", "/collections/lab2", json={"timezone": None, "description": None})["description"] == "d"
    make_collection(api, "other", [])
    assert api.patch("/collections/lab2", json={"rename": "other"}).status_code == 409


def test_global_collection_cannot_become_local_while_referenced(api):
    make_schema(api, "species", [{"name": "name", "type": "string"}])
    make_schema(api, "obs", [{"name": "of", "type": "reference", "restrictions": {"schema": "species"}}])
    make_collection(api, "taxa", ["species"], scope="global")
    make_collection(api, "survey", ["obs"])
    fox = make_record(api, "taxa", "species", {"name": "fox"})
    make_record(api, "survey", "obs", {"of": fox["id"]})
    r = api.patch("/collections/taxa", json={"scope": "local"})
    assert r.status_code == 409 and "reference" in r.json()["detail"]


def test_delete_restore_purge_collection(api):
    ids = study_tree(api)
    lone = make_record(api, "lab", "study", {"title": "Deleted on its own"})
    api.ok("DELETE", f"/records/{lone['id']}", 204)
    assert api.ok("GET", "/collections/lab")["record_count"] == 2
    api.ok("DELETE", "/collections/lab", 204)
    assert api.get("/collections/lab").status_code == 404
    deleted = api.ok("GET", "/collections/deleted")
    assert [c["name"] for c in deleted] == ["lab"] and deleted[0]["deleted_at"]
    plan = api.ok("GET", "/collections/lab/restore-plan")
    assert plan["kind"] == "collection" and plan["records"] == 2 and plan["can_restore"] is True
    restored = api.ok("POST", "/collections/lab/restore")
    assert restored["record_count"] == 2 and restored["deleted_at"] is None
    assert api.ok("GET", f"/records/{ids['sample']['id']}")["deleted_at"] is None
    assert api.ok("GET", f"/records/{lone['id']}")["deleted_at"] is not None  # stays deleted
    assert api.delete("/collections/lab/purge").status_code == 409  # live: delete first
    api.ok("DELETE", "/collections/lab", 204)
    api.ok("DELETE", "/collections/lab/purge", 204)
    assert api.get(f"/records/{ids['study']['id']}").status_code == 404
    assert api.ok("GET", "/collections/deleted") == []
    purges = api.ok("GET", "/audit", params={"action": "purge", "entity_type": "record"})
    assert purges["total"] == 3 and any(c["before"] == "North" for e in purges["items"] for c in e["changes"])


def test_record_counts_by_schema(api):
    ids = study_tree(api)
    make_record(api, "lab", "measurement", {"value": 1.5}, parent=ids["sample"]["id"])
    counts = api.ok("GET", "/collections/lab/record-counts")
    assert counts == {"counts": {"study": 1, "sample": 1, "measurement": 1}, "total": 3}
    counts = api.ok("GET", "/collections/lab/record-counts", params={"parent_record_id": ids["study"]["id"]})
    assert counts["counts"]["sample"] == 1 and counts["total"] == 1


def test_collection_audit(api):
    make_collection(api, "c", [])
    api.ok("PATCH", "/collections/c", json={"description": "new"})
    page = api.ok("GET", "/collections/c/audit")
    assert [e["action"] for e in page["items"]] == ["update", "create"]
    change = page["items"][0]["changes"][0]
    assert change["field"] == "description" and change["after"] == "new"


def test_every_bad_parameter_is_listed_with_its_place(api):
    r = api.get("/collections/anything/records", params={"limit": "many", "offset": "-1", "bogus": "1"})
    assert r.status_code == 422
    errors = {tuple(e["loc"]): e for e in r.json()["errors"]}
    assert set(errors) == {("query", "bogus"), ("query", "limit"), ("query", "offset")}
    assert errors[("query", "limit")]["input"] == "many" and errors[("query", "limit")]["type"] == "type"
    assert "unknown query parameter" in errors[("query", "bogus")]["msg"]


def test_names_the_api_s_own_paths_use_are_refused(api):
    """A collection or schema named ``deleted`` could not be reached (``GET /collections/deleted``
    lists the deleted ones), so the name is refused on create and on rename, in the envelope."""
    for path, body in (("/collections", {"name": "deleted"}), ("/schemas", {"name": "deleted"})):
        answer = api.post(path, json=body)
        assert answer.status_code == 422 and answer.json()["errors"][0]["loc"][-1] == "name", answer.text
    api.ok("POST", "/schemas", 201, json={"name": "sample"})
    api.ok("POST", "/collections", 201, json={"name": "lab", "schemas": ["sample"]})
    assert api.patch("/collections/lab", json={"rename": "deleted"}).status_code == 422
    assert api.patch("/schemas/sample", json={"rename": "deleted"}).status_code == 422
    assert api.ok("GET", "/collections/lab")["name"] == "lab"
