"""Restoring and purging records: every row of the spec's soft-delete state table for records."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema, study_tree


def tree(api):
    ids = study_tree(api)
    m1 = make_record(api, "lab", "measurement", {"value": 1.0}, parent=ids["sample"]["id"])
    m2 = make_record(api, "lab", "measurement", {"value": 2.0}, parent=ids["sample"]["id"])
    return {**ids, "m1": m1, "m2": m2}


def live(api, rid):
    return api.ok("GET", f"/records/{rid}")["deleted_at"] is None


def test_restore_brings_back_what_was_deleted_together(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['m1']['id']}", 204)  # on its own, earlier
    api.ok("DELETE", f"/records/{ids['sample']['id']}", 204, params={"force": "true"})
    plan = api.ok("GET", f"/records/{ids['sample']['id']}/restore-plan")
    assert plan["kind"] == "record" and plan["records"] == 2 and plan["can_restore"]
    api.ok("POST", f"/records/{ids['sample']['id']}/restore")
    assert live(api, ids["sample"]["id"]) and live(api, ids["m2"]["id"]) and not live(api, ids["m1"]["id"])
    history = api.ok("GET", f"/records/{ids['m2']['id']}/audit")["items"]
    assert history[0]["action"] == "restore" and history[0]["changes"] == []


def test_blocked_by_deleted_parent_and_with_parents(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['m1']['id']}", 204)
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    plan = api.ok("GET", f"/records/{ids['m1']['id']}/restore-plan")
    assert plan["can_restore"] is False and plan["parents_needed"] == 2
    assert plan["blocked_by"]["id"] == ids["study"]["id"]
    r = api.post(f"/records/{ids['m1']['id']}/restore")
    assert r.status_code == 422 and "with_parents" in r.json()["detail"]
    api.ok("POST", f"/records/{ids['m1']['id']}/restore", params={"with_parents": "true"})
    assert live(api, ids["study"]["id"]) and live(api, ids["sample"]["id"]) and live(api, ids["m1"]["id"])
    assert not live(api, ids["m2"]["id"])  # deleted alongside its parent, not brought back with it


def test_only_this_returns_parents_needed_plus_one(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    before = api.ok("GET", "/collections/lab")["record_count"]
    api.ok("POST", f"/records/{ids['m1']['id']}/restore", params={"only_this": "true"})
    after = api.ok("GET", "/collections/lab")["record_count"]
    assert after - before == 2 + 1
    assert not live(api, ids["m2"]["id"])


def hide_parent(api, record_id):
    """Put a record in the state sync or an interrupted restore can leave: deleted, children live."""
    from sqlalchemy import update

    from benchbook.persistence.tables import Record, utcnow
    with api.app.services.db.session() as s, s.begin():
        s.execute(update(Record).where(Record.id == record_id).values(deleted_at=utcnow(), delete_op="X"))


def test_orphans_and_restore_above(api):
    ids = tree(api)
    sample = api.ok("GET", f"/records/{ids['sample']['id']}")
    assert sample["deleted_above"] == []
    assert api.post(f"/records/{ids['sample']['id']}/restore-above").status_code == 409  # nothing to restore
    hide_parent(api, ids["study"]["id"])
    orphans = api.ok("GET", "/records/orphans")
    assert [o["id"] for o in orphans["items"]] == [ids["sample"]["id"]] and orphans["total"] == 1
    above = api.ok("GET", f"/records/{ids['m1']['id']}")["deleted_above"]
    assert [a["id"] for a in above] == [ids["study"]["id"]]
    restored = api.ok("POST", f"/records/{ids['m1']['id']}/restore-above")
    assert [r["id"] for r in restored] == [ids["study"]["id"]]
    assert api.ok("GET", "/records/orphans")["total"] == 0


def test_uniqueness_conflict_blocks_restore(api):
    make_schema(api, "site", [{"name": "code", "type": "string"}])
    make_collection(api, "c", ["site"])
    api.ok("PUT", "/schemas/site/unique-keys", json={"keys": [["code"]]})
    old = make_record(api, "c", "site", {"code": "A"})
    api.ok("DELETE", f"/records/{old['id']}", 204)
    taker = make_record(api, "c", "site", {"code": "A"})
    plan = api.ok("GET", f"/records/{old['id']}/restore-plan")
    assert plan["can_restore"] is False and plan["conflict"]["taken_by"] == taker["id"]
    assert api.post(f"/records/{old['id']}/restore").status_code == 409
    api.ok("PATCH", f"/records/{taker['id']}", json={"data": {"code": "B"}})
    api.ok("POST", f"/records/{old['id']}/restore")


def test_blocked_by_deleted_collection(api):
    ids = tree(api)
    api.ok("DELETE", "/collections/lab", 204)
    plan = api.ok("GET", f"/records/{ids['m1']['id']}/restore-plan")
    assert plan["blocked_by"]["kind"] == "collection"
    assert api.post(f"/records/{ids['m1']['id']}/restore").status_code == 422


def test_purge_record(api):
    ids = tree(api)
    assert api.delete(f"/records/{ids['sample']['id']}/purge").status_code == 409
    api.ok("DELETE", f"/records/{ids['sample']['id']}", 204, params={"force": "true"})
    api.ok("DELETE", f"/records/{ids['sample']['id']}/purge", 204)
    assert api.get(f"/records/{ids['m1']['id']}").status_code == 404
    entries = api.ok("GET", "/audit", params={"action": "purge"})
    assert entries["total"] == 3
    assert {e["now"]["state"] for e in entries["items"]} == {"purged"}


def test_referrers(api):
    make_schema(api, "species", [{"name": "name", "type": "string"}])
    make_schema(api, "obs", [{"name": "of", "type": "reference", "restrictions": {"schema": "species"}}])
    make_collection(api, "c", ["species", "obs"])
    fox = make_record(api, "c", "species", {"name": "fox"})
    seen = make_record(api, "c", "obs", {"of": fox["id"]})
    assert [r["id"] for r in api.ok("GET", f"/records/{fox['id']}/referrers")] == [seen["id"]]


def test_a_record_restore_plan_names_the_record_its_collection_and_what_comes_back(api):
    """Every key of the plan a client shows (found by mutation testing: the record's id, name and
    collection were never checked)."""
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['sample']['id']}", 204, params={"force": "true"})
    deleted = api.ok("GET", f"/records/{ids['sample']['id']}")
    collection = api.ok("GET", "/collections/lab")
    plan = api.ok("GET", f"/records/{ids['sample']['id']}/restore-plan")
    assert plan == {"kind": "record", "id": ids["sample"]["id"], "name": deleted["natural_name"],
                    "collection": "lab", "collection_id": collection["id"], "deleted_at": deleted["deleted_at"],
                    "schema_name": None, "blocked": None, "blocked_by": None, "conflict": None,
                    "parents_needed": None, "records": 3, "can_restore": True, "referrers": {},
                    "cleared_references": 0}
    api.ok("POST", f"/records/{ids['sample']['id']}/restore")
    again = api.ok("GET", f"/records/{ids['sample']['id']}/restore-plan")
    assert (again["can_restore"], again["records"], again["blocked"]) == (False, 0, "the record is not deleted")
