"""Restore-all: plan counts, everything back parent-first, batch and q selection, blocked ones."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema, study_tree


def test_restore_all_brings_everything_back(api):
    ids = study_tree(api)
    ms = [make_record(api, "lab", "measurement", {"value": float(i)}, parent=ids["sample"]["id"]) for i in range(3)]
    make_schema(api, "spare")
    api.ok("DELETE", f"/records/{ms[0]['id']}", 204)
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    api.ok("DELETE", "/schemas/spare", 204)
    plan = api.ok("GET", "/audit/restore-all")
    assert plan["records"] == 5 and plan["schemas"] == 1 and plan["things"] == 6
    assert plan["restores"] == 5 and plan["blocked"] == 0 and plan["truncated"] is False
    result = api.ok("POST", "/audit/restore-all", json={})
    assert result == {"restored": 6, "records": 5, "blocked": 0}
    assert api.ok("GET", "/collections/lab")["record_count"] == 5
    assert api.ok("GET", "/schemas/spare")["deleted_at"] is None
    events = api.ok("GET", "/audit", params={"action": "restore"})["items"]
    assert len({e["batch_id"] for e in events}) == 1  # one event in history
    assert api.ok("GET", "/audit/restore-all")["things"] == 0


def test_restore_all_of_one_batch(api):
    ids = study_tree(api)
    lone = make_record(api, "lab", "study", {"title": "alone"})
    api.ok("DELETE", f"/records/{lone['id']}", 204)
    out = api.ok("DELETE", "/collections/lab/records", params={"schema": "sample", "force": "true"})
    plan = api.ok("GET", "/audit/restore-all", params={"batch": out["batch_id"]})
    assert plan["records"] == 1
    api.ok("POST", "/audit/restore-all", json={"batch": out["batch_id"]})
    assert api.ok("GET", f"/records/{ids['sample']['id']}")["deleted_at"] is None
    assert api.ok("GET", f"/records/{lone['id']}")["deleted_at"] is not None


def test_restore_all_by_text_and_blocked_children(api):
    ids = study_tree(api)
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    plan = api.ok("GET", "/audit/restore-all", params={"q": "North"})  # only the sample matches
    assert plan["records"] == 1 and plan["blocked"] == 1 and plan["restores"] == 0
    result = api.ok("POST", "/audit/restore-all", json={"q": "North"})
    assert result == {"restored": 0, "records": 0, "blocked": 1}
    assert api.ok("GET", f"/records/{ids['sample']['id']}")["deleted_at"] is not None


def test_restore_all_collections_first(api):
    make_schema(api, "s", [{"name": "v", "type": "integer"}])
    make_collection(api, "c", ["s"])
    recs = [make_record(api, "c", "s", {"v": i}) for i in range(3)]
    api.ok("DELETE", f"/records/{recs[0]['id']}", 204)
    api.ok("DELETE", "/collections/c", 204)
    plan = api.ok("GET", "/audit/restore-all")
    assert plan["collections"] == 1 and plan["records"] == 3 and plan["restores"] == 3
    result = api.ok("POST", "/audit/restore-all")
    assert result["records"] == 3 and result["blocked"] == 0
    assert api.ok("GET", "/collections/c")["record_count"] == 3
