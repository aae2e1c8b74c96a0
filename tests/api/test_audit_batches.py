"""Client import batches: X-Service-Batch groups changes into one event with parts."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_schema


def test_import_batch_groups_changes(api):
    make_schema(api, "s", [{"name": "v", "type": "integer"}])
    make_collection(api, "c", ["s"])
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "plates.csv"})
    assert batch["kind"] == "import" and batch["label"] == "plates.csv"
    for v in range(3):
        api.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"v": v}},
               headers={"X-Service-Batch": batch["id"]})
    event = api.ok("GET", f"/audit/batches/{batch['id']}")
    assert event["kind"] == "batch" and event["count"] == 3 and event["batch"]["id"] == batch["id"]
    assert event["parts"] == [{"action": "create", "entity_type": "record", "count": 3}]
    entries = api.ok("GET", f"/audit/batches/{batch['id']}/entries", params={"limit": 2})
    assert entries["total"] == 3 and len(entries["items"]) == 2
    r = api.post("/collections/c/records", json={"schema_name": "s"}, headers={"X-Service-Batch": "nope"})
    assert r.status_code == 422
    assert api.get("/audit/batches/01ZZZZZZZZZZZZZZZZZZZZZZZZ").status_code == 404
    assert api.post("/audit/batches", json={"kind": "delete"}).status_code == 422


def test_server_batch_for_a_delete_with_children(api):
    make_schema(api, "a")
    make_schema(api, "b", parent="a")
    make_collection(api, "c", ["a", "b"])
    parent = api.ok("POST", "/collections/c/records", 201, json={"schema_name": "a"})
    api.ok("POST", "/collections/c/records", 201, json={"schema_name": "b", "parent_record_id": parent["id"]})
    api.ok("DELETE", f"/records/{parent['id']}", 204, params={"force": "true"})
    entry = api.ok("GET", f"/records/{parent['id']}/audit")["items"][0]
    event = api.ok("GET", f"/audit/batches/{entry['batch_id']}")
    assert event["batch"]["kind"] == "delete" and event["count"] == 2
