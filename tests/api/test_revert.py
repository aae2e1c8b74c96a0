"""Reverting history entries: updates, creates, deletes, reverts of reverts, conflicts, force."""
from __future__ import annotations

import pytest

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
    r = api.post(f"/audit/{entry['id']}/revert", json={})
    assert r.status_code == 409 and "pass force=true" in r.json()["detail"]
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
    assert "restore" in plan["blocked"] and "deleted" in plan["blocked"], plan["blocked"]
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
    assert plan["kind"] is None and not plan["can_apply"]
    assert plan["blocked"] == "it has been purged for good; nothing can bring it back"
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


def entry_of(api, entity_type, entity_id, action):
    items = api.ok("GET", "/audit", params={"entity_type": entity_type, "entity_id": entity_id,
                                            "action": action})["items"]
    return items[0]


def _thing(api, kind):
    """Make one ``kind`` (collection ``c``, schema ``t``, field ``t.x``, view ``t.v``): (entity type,
    id, a function telling whether it is live)."""
    make_schema(api, "t", [{"name": "w", "type": "string"}])
    if kind == "collection":
        cid = make_collection(api, "c", ["t"])["id"]
        return "dataset", cid, lambda: api.get(f"/collections/{cid}").status_code == 200
    if kind == "schema":
        sid = make_schema(api, "u")["id"]
        return "schema", sid, lambda: api.get("/schemas/u").status_code == 200 and \
            api.ok("GET", "/schemas/u")["deleted_at"] is None
    if kind == "field":
        fid = api.ok("POST", "/schemas/t/fields", 201, json={"name": "x", "type": "integer"})["id"]
        return "field", fid, lambda: "x" in [f["name"] for f in api.ok("GET", "/schemas/t")["fields"]]
    vid = api.ok("POST", "/schemas/t/views", 201, json={"name": "v", "columns": ["w"]})["id"]
    return "view", vid, lambda: api.get("/schemas/t/views/v").status_code == 200


@pytest.mark.parametrize("kind", ["collection", "schema", "field", "view"])
def test_reverting_a_create_deletes_the_thing_and_reverting_that_delete_brings_it_back(api, kind):
    entity_type, thing_id, live = _thing(api, kind)
    create = entry_of(api, entity_type, thing_id, "create")
    plan = api.ok("GET", f"/audit/{create['id']}/revert")
    assert (plan["entity_type"], plan["entity_id"], plan["kind"], plan["can_apply"]) == (
        entity_type, thing_id, "delete", True)
    out = api.ok("POST", f"/audit/{create['id']}/revert")
    assert (out["kind"], out["entity_id"], out["applied"]) == ("delete", thing_id, [])
    assert not live()
    delete = entry_of(api, entity_type, thing_id, "delete")
    assert api.ok("GET", f"/audit/{delete['id']}/revert")["can_apply"] is True
    out = api.ok("POST", f"/audit/{delete['id']}/revert")
    assert (out["kind"], out["entity_id"], out["applied"]) == ("restore", thing_id, [])
    assert live()
    plan = api.ok("GET", f"/audit/{delete['id']}/revert")
    assert plan["can_apply"] is False and plan["blocked"] == f"the {entity_type} is live already"


def test_a_plan_row_names_the_fields_label_and_type_and_what_already_holds_the_old_value(api):
    make_schema(api, "s", [{"name": "a", "label": "Alpha", "type": "string"}, {"name": "b", "type": "integer"}])
    make_collection(api, "c", ["s"])
    rec = make_record(api, "c", "s", {"a": "one", "b": 1})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "two", "b": 2}})
    entry = latest(api, rec["id"])
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"a": "one", "b": 3}})  # a back by hand, b edited
    plan = api.ok("GET", f"/audit/{entry['id']}/revert")
    assert (plan["entity_type"], plan["entity_id"], plan["has_conflicts"]) == ("record", rec["id"], True)
    assert plan["fields"] == [
        {"field": "a", "label": "Alpha", "dtype": "string", "current": "one", "target": "one",
         "status": "unchanged", "reason": "already holds the old value"},
        {"field": "b", "label": "b", "dtype": "integer", "current": 3, "target": 1,
         "status": "conflict", "reason": "edited since this change"}]
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"b": 1}})
    plan = api.ok("GET", f"/audit/{entry['id']}/revert")
    assert plan["can_apply"] is False and plan["blocked"] == (
        "nothing to put back: every field already holds its old value or cannot change")
    r = api.post(f"/audit/{entry['id']}/revert")
    assert r.status_code == 422 and "nothing to put back" in r.json()["detail"]


def test_attribute_rows_say_what_was_put_back_by_hand_and_what_was_edited_since(api):
    make_schema(api, "s", label="Old", description="first")
    api.ok("PATCH", "/schemas/s", json={"label": "New", "description": "second"})
    entry = api.ok("GET", "/schemas/s/audit")["items"][0]
    api.ok("PATCH", "/schemas/s", json={"label": "Old", "description": "third"})
    plan = api.ok("GET", f"/audit/{entry['id']}/revert")
    rows = {f["field"]: f for f in plan["fields"]}
    assert {k: (r["label"], r["current"], r["target"], r["status"], r["reason"]) for k, r in rows.items()} == {
        "label": ("label", "Old", "Old", "unchanged", "already holds the old value"),
        "description": ("description", "third", "first", "conflict", "edited since this change")}
    only = api.ok("GET", f"/audit/{entry['id']}/revert", params={"fields": "description"})
    assert [f["field"] for f in only["fields"]] == ["description"]
    api.ok("POST", f"/audit/{entry['id']}/revert", json={"force": True})
    assert api.ok("GET", "/schemas/s")["description"] == "first"


def test_reverting_unique_keys_field_order_and_a_field_edit_puts_each_back(api):
    make_schema(api, "s", [{"name": "a", "type": "string"}, {"name": "b", "type": "string"}])
    ids = [f["id"] for f in api.ok("GET", "/schemas/s")["fields"]]
    api.ok("PUT", "/schemas/s/unique-keys", json={"keys": [["a"]]})
    api.ok("PUT", "/schemas/s/unique-keys", json={"keys": [["a", "b"]]})
    api.ok("POST", f"/audit/{api.ok('GET', '/schemas/s/audit')['items'][0]['id']}/revert")
    assert api.ok("GET", "/schemas/s")["unique_keys"] == [["a"]]  # back to the keys before
    keys = [e for e in api.ok("GET", "/schemas/s/audit")["items"] if e["action"] == "update"][-1]
    api.ok("PUT", "/schemas/s/fields/reorder", json={"order": list(reversed(ids))})
    order = api.ok("GET", "/schemas/s/audit")["items"][0]
    api.ok("PATCH", "/schemas/s/fields/a", json={"label": "Aye", "required": True})
    field_edit = entry_of(api, "field", ids[0], "update")
    api.ok("POST", f"/audit/{keys['id']}/revert")
    assert api.ok("GET", "/schemas/s")["unique_keys"] == []
    api.ok("POST", f"/audit/{order['id']}/revert")
    assert [f["id"] for f in api.ok("GET", "/schemas/s")["fields"]] == ids
    api.ok("POST", f"/audit/{field_edit['id']}/revert")
    a = api.ok("GET", "/schemas/s")["fields"][0]
    assert (a["label"], a["required"]) == (None, False)


def test_reverting_a_view_edit_puts_its_columns_back(api):
    make_schema(api, "s", [{"name": "a", "type": "string"}, {"name": "b", "type": "string"}])
    vid = api.ok("POST", "/schemas/s/views", 201, json={"name": "v", "columns": ["a"]})["id"]
    api.ok("PATCH", "/schemas/s/views/v", json={"columns": ["a", "b"]})
    edit = entry_of(api, "view", vid, "update")
    plan = api.ok("GET", f"/audit/{edit['id']}/revert")
    assert [(f["field"], f["current"], f["target"], f["status"]) for f in plan["fields"]] == [
        ("columns", ["a", "b"], ["a"], "revert")]
    api.ok("POST", f"/audit/{edit['id']}/revert")
    assert api.ok("GET", "/schemas/s/views/v")["columns"] == ["a"]
