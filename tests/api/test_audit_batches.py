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


def test_events_feed_batches_are_one_event(api):
    make_schema(api, "s", [{"name": "v", "type": "string"}])
    make_collection(api, "c", ["s"])
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "wells.csv"})
    for v in ("alpha", "beta"):
        api.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"v": v}},
               headers={"X-Service-Batch": batch["id"]})
    api.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"v": "gamma"}})
    events = api.ok("GET", "/audit/events")
    assert events["total"] == 4  # schema create, collection create, the batch, the lone record
    newest = events["items"][0]
    assert newest["kind"] == "entry" and newest["entry"]["action"] == "create"
    assert events["items"][1]["kind"] == "batch" and events["items"][1]["count"] == 2
    found = api.ok("GET", "/audit/events", params={"q": "beta"})
    assert [(e["kind"], e["count"]) for e in found["items"]] == [("batch", 1)]
    assert api.ok("GET", "/audit/events", params={"q": "wells"})["items"][0]["id"] == batch["id"]
    oldest = api.ok("GET", "/audit/events", params={"sort": "timestamp:asc"})["items"][0]
    assert oldest["entry"]["entity_type"] == "schema"
    assert api.get("/audit/events", params={"filter": "{}"}).status_code == 422


def test_storage_and_reclaim(api):
    storage = api.ok("GET", "/audit/storage")
    assert storage["whole_entries"] == 0 and storage["converting"] is False
    sqlite = api.app.services.db.engine.dialect.name == "sqlite"
    make_schema(api, "note", [{"name": "text", "type": "string"}])
    make_collection(api, "bulky", ["note"])
    count, size = 200, 3000
    for n in range(count):
        api.ok("POST", "/collections/bulky/records", 201,
               json={"schema_name": "note", "data": {"text": f"{n:05d}" + "x" * size}})
    filled = api.ok("GET", "/audit/storage")
    # purging the collection drops its records (and their search rows) for good: the file keeps
    # their pages as free room (the history entries keep their own copy of the values)
    api.ok("DELETE", "/collections/bulky", 204)
    api.ok("DELETE", "/collections/bulky/purge", 204)
    assert api.get("/collections/bulky").status_code == 404
    emptied = api.ok("GET", "/audit/storage")
    assert emptied["whole_entries"] == 0 and emptied["converting"] is False
    if not sqlite:  # PostgreSQL manages its own space (spec: size_bytes, free_bytes nullable)
        assert [filled["size_bytes"], filled["free_bytes"], emptied["size_bytes"], emptied["free_bytes"]] == [None] * 4
        after = api.ok("POST", "/audit/storage/reclaim")
        assert after["size_bytes"] is None and after["free_bytes"] is None
        assert after["whole_entries"] == 0 and after["converting"] is False
        return
    assert emptied["size_bytes"] >= filled["size_bytes"] > count * size  # deleting does not shrink the file
    assert emptied["free_bytes"] - filled["free_bytes"] >= count * size, (filled, emptied)
    after = api.ok("POST", "/audit/storage/reclaim")
    assert after["free_bytes"] == 0
    assert after["size_bytes"] <= emptied["size_bytes"] - emptied["free_bytes"], (emptied, after)
    assert after["whole_entries"] == 0 and after["converting"] is False
    assert api.ok("GET", "/audit/storage") == after
    # the history is still there after the file was rewritten
    created = api.ok("GET", "/audit", params={"action": "create", "entity_type": "record", "limit": 1})
    assert created["total"] == count


def test_history_filter_tree(api):
    make_schema(api, "s", [{"name": "v", "type": "string"}])
    make_collection(api, "c", ["s"])
    rec = api.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"v": "x"}})
    api.ok("DELETE", f"/records/{rec['id']}", 204)
    fields = {f["name"]: f for f in api.ok("GET", "/audit/filter-fields")}
    assert "delete" in fields["action"]["choices"] and "gt" in fields["timestamp"]["operators"]
    tree = {"and": [{"field": "entity_type", "op": "eq", "value": "record"},
                    {"or": [{"field": "action", "op": "eq", "value": "delete"},
                            {"field": "collection", "op": "in", "value": ["nope"]}]}]}
    import json
    events = api.ok("GET", "/audit/events", params={"filter": json.dumps(tree)})
    assert [e["entry"]["action"] for e in events["items"]] == ["delete"]
    since = {"field": "timestamp", "op": "gt", "value": "2999-01-01T00:00:00"}
    assert api.ok("GET", "/audit/events", params={"filter": json.dumps(since)})["total"] == 0
    plan = api.ok("GET", "/audit/restore-all", params={"filter": json.dumps({"field": "schema", "op": "eq",
                                                                             "value": "s"})})
    assert plan["records"] == 1
    for bad in ({"field": "nope", "op": "eq", "value": "x"}, {"field": "action", "op": "gt", "value": "x"},
                {"and": []}, {"field": "action", "op": "in", "value": "delete"}):
        r = api.get("/audit/events", params={"filter": json.dumps(bad)})
        assert r.status_code == 422 and r.json()["errors"][0]["loc"][:2] == ["query", "filter"], r.text
    assert api.get("/audit/events", params={"filter": "{not json"}).status_code == 422
