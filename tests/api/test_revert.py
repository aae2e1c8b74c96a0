"""Reverting history entries: updates, creates, deletes, reverts of reverts, conflicts, force."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema, study_tree


def latest(api, rid):
    return api.ok("GET", f"/records/{rid}/audit")["items"][0]


def setup(api):
    make_schema(api, "s", [{"name": "a", "type": "string"}, {"name": "b", "type": "integer"}])
    make_collection(api, "c", ["s"])
    return make_record(api, "c", "s", {"a": "one", "b": 1})


def test_revert_an_update_puts_fields_back(api):
    rec = setup(api)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two", "b": 2}})
    entry = latest(api, rec["id"])
    plan = api.ok("GET", f"/audit/{entry['id']}/revert")
    assert plan["kind"] == "update" and plan["can_apply"] and not plan["has_conflicts"]
    assert {f["field"]: (f["status"], f["target"]) for f in plan["fields"]} == {"a": ("revert", "one"),
                                                                               "b": ("revert", 1)}
    only_a = api.ok("GET", f"/audit/{entry['id']}/revert", params={"fields": "a"})
    assert [f["field"] for f in only_a["fields"]] == ["a"]
    result = api.ok("POST", f"/audit/{entry['id']}/revert", json={})
    assert result["kind"] == "update" and sorted(result["applied"]) == ["a", "b"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"a": "one", "b": 1}
    # the revert is recorded and can itself be reverted
    assert latest(api, rec["id"])["id"] == result["audit_id"]
    api.ok("POST", f"/audit/{result['audit_id']}/revert")
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"a": "two", "b": 2}


def test_conflicts_need_force(api):
    rec = setup(api)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two"}})
    entry = latest(api, rec["id"])
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "three"}})
    plan = api.ok("GET", f"/audit/{entry['id']}/revert")
    assert plan["has_conflicts"] and plan["fields"][0]["status"] == "conflict"
    assert plan["fields"][0]["current"] == "three"
    assert api.post(f"/audit/{entry['id']}/revert", json={}).status_code == 409
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["a"] == "three"
    api.ok("POST", f"/audit/{entry['id']}/revert", json={"force": True})
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["a"] == "one"


def test_conflicting_field_is_left_alone_while_others_revert(api):
    rec = setup(api)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two", "b": 2}})
    entry = latest(api, rec["id"])
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"b": 3}})
    result = api.ok("POST", f"/audit/{entry['id']}/revert")
    assert result["applied"] == ["a"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"a": "one", "b": 3}


def test_revert_create_deletes_and_revert_delete_restores(api):
    rec = setup(api)
    create = latest(api, rec["id"])
    assert api.ok("GET", f"/audit/{create['id']}/revert")["kind"] == "delete"
    out = api.ok("POST", f"/audit/{create['id']}/revert")
    assert out["kind"] == "delete" and api.ok("GET", f"/records/{rec['id']}")["deleted_at"]
    delete_entry = latest(api, rec["id"])
    assert delete_entry["action"] == "delete"
    plan = api.ok("GET", f"/audit/{delete_entry['id']}/revert")
    assert plan["kind"] == "restore" and plan["can_apply"]
    api.ok("POST", f"/audit/{delete_entry['id']}/revert")
    assert api.ok("GET", f"/records/{rec['id']}")["deleted_at"] is None
    # reverting the delete again is blocked: the record is live
    assert api.post(f"/audit/{delete_entry['id']}/revert").status_code == 422


def test_revert_blocked_by_deleted_parent(api):
    ids = study_tree(api)
    sid = ids["sample"]["id"]
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    delete_entry = latest(api, sid)
    plan = api.ok("GET", f"/audit/{delete_entry['id']}/revert")
    assert plan["can_apply"] is False and plan["blocker"]["id"] == ids["study"]["id"]
    assert api.post(f"/audit/{delete_entry['id']}/revert").status_code == 422


def test_revert_of_a_create_with_children_needs_force(api):
    ids = study_tree(api)
    create = api.ok("GET", f"/records/{ids['study']['id']}/audit")["items"][-1]
    assert api.post(f"/audit/{create['id']}/revert").status_code == 409
    api.ok("POST", f"/audit/{create['id']}/revert", json={"force": True})
    assert api.ok("GET", f"/records/{ids['sample']['id']}")["deleted_at"]


def test_purged_cannot_be_reverted_and_unknown_entry(api):
    rec = setup(api)
    api.ok("DELETE", f"/records/{rec['id']}", 204)
    api.ok("DELETE", f"/records/{rec['id']}/purge", 204)
    purge = api.ok("GET", "/audit", params={"action": "purge"})["items"][0]
    plan = api.ok("GET", f"/audit/{purge['id']}/revert")
    assert plan["kind"] is None and plan["blocked"] and not plan["can_apply"]
    assert api.get("/audit/01ZZZZZZZZZZZZZZZZZZZZZZZZ/revert").status_code == 404


def test_revert_schema_and_collection_changes(api):
    make_schema(api, "s", label="Old")
    api.ok("PATCH", "/schemas/s", json={"label": "New", "rename": "t"})
    entry = api.ok("GET", "/schemas/t/audit")["items"][0]
    api.ok("POST", f"/audit/{entry['id']}/revert")
    schema = api.ok("GET", "/schemas/s")
    assert schema["label"] == "Old"
    make_collection(api, "c", [], timezone="UTC")
    api.ok("PATCH", "/collections/c", json={"timezone": "Asia/Tokyo", "description": "d"})
    entry = api.ok("GET", "/collections/c/audit")["items"][0]
    api.ok("POST", f"/audit/{entry['id']}/revert")
    c = api.ok("GET", "/collections/c")
    assert c["timezone"] == "UTC" and c["description"] is None


def test_an_audit_id_in_lowercase_is_the_same_entry(api):
    rec = setup(api)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two"}})
    entry = latest(api, rec["id"])
    lower = entry["id"].lower()
    assert lower != entry["id"]
    assert api.ok("GET", f"/audit/{lower}/revert")["audit_id"] == entry["id"]
    api.ok("POST", f"/audit/{lower}/revert")
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["a"] == "one"


def test_fields_to_revert_may_be_named_by_their_field_id(api):
    rec = setup(api)
    ids = {f["name"]: f["id"] for f in api.ok("GET", "/schemas/s")["fields"]}
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two", "b": 2}})
    entry = latest(api, rec["id"])
    plan = api.ok("GET", f"/audit/{entry['id']}/revert", params={"fields": ids["b"]})
    assert [(f["field"], f["target"]) for f in plan["fields"]] == [("b", 1)]
    result = api.ok("POST", f"/audit/{entry['id']}/revert", json={"fields": [ids["b"]]})
    assert result["applied"] == ["b"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"a": "two", "b": 1}


def test_a_field_deleted_since_cannot_be_put_back_and_the_others_are(api):
    rec = setup(api)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two", "b": 2}})
    entry = latest(api, rec["id"])
    api.ok("DELETE", "/schemas/s/fields/b", 204)
    plan = api.ok("GET", f"/audit/{entry['id']}/revert")
    status = {f["field"]: (f["status"], f["reason"]) for f in plan["fields"]}
    assert status == {"a": ("revert", None), "b": ("cannot", "the field has been deleted since")}
    assert plan["can_apply"]
    result = api.ok("POST", f"/audit/{entry['id']}/revert")
    assert result["applied"] == ["a"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"a": "one"}


def test_reverting_an_update_of_a_deleted_record_waits_for_its_restore(api):
    rec = setup(api)
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two"}})
    update = latest(api, rec["id"])
    api.ok("DELETE", f"/records/{rec['id']}", 204)
    plan = api.ok("GET", f"/audit/{update['id']}/revert")
    assert plan["kind"] == "update" and plan["can_apply"] is False and plan["fields"] == []
    assert plan["blocked"] == "the record is deleted; restore it first"
    assert plan["blocker"] == {"kind": "record", "id": rec["id"]}
    assert api.post(f"/audit/{update['id']}/revert").status_code == 422
    after = api.ok("GET", f"/records/{rec['id']}")
    assert after["deleted_at"] and after["data"]["a"] == "two"


def test_reverting_the_create_of_a_deleted_record_cannot_apply(api):
    rec = setup(api)
    create = latest(api, rec["id"])
    api.ok("DELETE", f"/records/{rec['id']}", 204)
    plan = api.ok("GET", f"/audit/{create['id']}/revert")
    assert plan["kind"] == "delete" and plan["can_apply"] is False
    assert plan["blocked"] == "the record is already deleted"
    assert api.post(f"/audit/{create['id']}/revert").status_code == 422


def test_reverting_a_move_puts_the_record_back_under_its_old_parent(api):
    ids = study_tree(api)
    sid, first = ids["sample"]["id"], ids["study"]["id"]
    second = make_record(api, "lab", "study", {"title": "River survey"})["id"]
    api.ok("PATCH", f"/records/{sid}", json={"parent_record_id": second})
    move = latest(api, sid)
    plan = api.ok("GET", f"/audit/{move['id']}/revert")
    assert [(f["field"], f["status"], f["target"]) for f in plan["fields"]] == [("parent_record_id", "revert", first)]
    api.ok("POST", f"/audit/{move['id']}/revert")
    assert api.ok("GET", f"/records/{sid}")["parent_record_id"] == first


def test_reverting_the_setting_of_a_display_template_clears_it_again(api):
    make_schema(api, "s", [{"name": "title", "type": "string"}])
    api.ok("PATCH", "/schemas/s", json={"display_template": "{title}"})
    entry = api.ok("GET", "/schemas/s/audit")["items"][0]
    api.ok("POST", f"/audit/{entry['id']}/revert")
    assert api.ok("GET", "/schemas/s")["display_template"] is None


def test_reverting_the_setting_of_a_collection_timezone_clears_it_again(api):
    make_collection(api, "c", [])
    assert api.ok("GET", "/collections/c")["timezone"] is None
    api.ok("PATCH", "/collections/c", json={"timezone": "Asia/Tokyo"})
    entry = api.ok("GET", "/collections/c/audit")["items"][0]
    api.ok("POST", f"/audit/{entry['id']}/revert")
    assert api.ok("GET", "/collections/c")["timezone"] is None
