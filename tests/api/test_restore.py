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


# ---------------------------------------------------------------- found by mutation testing (restore.py's survivors)

def batch_of(api, record_id, action):
    """The history batch (``AuditBatchResponse``) holding ``record_id``'s newest ``action`` entry, or None."""
    entry = next(e for e in api.ok("GET", f"/records/{record_id}/audit")["items"] if e["action"] == action)
    return api.ok("GET", f"/audit/batches/{entry['batch_id']}")["batch"] if entry["batch_id"] else None


def test_a_record_of_a_deleted_schema_or_collection_names_what_blocks_it(api):
    """The plan's ``blocked`` and ``blocked_by`` and the 422's words say which container to restore."""
    make_schema(api, "note", [{"name": "text", "type": "string"}])
    make_schema(api, "site", [{"name": "code", "type": "string"}])
    lab = make_collection(api, "lab", ["note", "site"])
    note = make_record(api, "lab", "note", {"text": "calm"})
    site = make_record(api, "lab", "site", {"code": "N1"})
    api.ok("DELETE", f"/records/{note['id']}", 204)
    schema = api.ok("GET", "/schemas/note")
    api.ok("DELETE", "/schemas/note", 204)
    plan = api.ok("GET", f"/records/{note['id']}/restore-plan")
    assert (plan["blocked"], plan["blocked_by"], plan["can_restore"]) == (
        "its schema 'note' is deleted; restore it first", {"kind": "schema", "id": schema["id"], "name": "note"}, False)
    r = api.post(f"/records/{note['id']}/restore")
    assert (r.status_code, r.json()["detail"]) == (
        422, f"cannot restore record {note['id']}: its schema 'note' is deleted; restore it first")
    api.ok("DELETE", "/collections/lab", 204)
    plan = api.ok("GET", f"/records/{site['id']}/restore-plan")
    assert (plan["blocked"], plan["blocked_by"]) == (
        "its collection 'lab' is deleted; restore it first", {"kind": "collection", "id": lab["id"], "name": "lab"})
    r = api.post(f"/records/{site['id']}/restore")
    assert (r.status_code, r.json()["detail"]) == (
        422, f"cannot restore record {site['id']}: its collection 'lab' is deleted; restore it first")


def test_a_record_under_deleted_parents_names_the_topmost_and_how_to_bring_it_back(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['m1']['id']}", 204)
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    plan = api.ok("GET", f"/records/{ids['m1']['id']}/restore-plan")
    assert plan["blocked"] == "2 deleted record(s) above it; restore with with_parents or only_this, or restore them first"
    assert plan["blocked_by"] == {"kind": "record", "id": ids["study"]["id"], "name": "Lake survey"}
    r = api.post(f"/records/{ids['m1']['id']}/restore")
    words = f"cannot restore record {ids['m1']['id']}: 2 deleted record(s) above it; pass with_parents=true or only_this=true"
    assert (r.status_code, r.json()["detail"]) == (422, words)
    live_one = api.post(f"/records/{ids['study']['id']}/restore")
    assert live_one.status_code == 200
    r = api.post(f"/records/{ids['study']['id']}/restore")
    assert (r.status_code, r.json()["detail"]) == (
        409, f"record {ids['study']['id']} is not deleted: there is nothing to restore")


def test_only_this_leaves_what_was_deleted_below_the_record_and_with_parents_brings_it(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['sample']['id']}", 204, params={"force": "true"})  # m1 and m2 with it
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204)
    api.ok("POST", f"/records/{ids['sample']['id']}/restore", params={"only_this": "true"})
    assert live(api, ids["study"]["id"]) and live(api, ids["sample"]["id"])
    assert not live(api, ids["m1"]["id"]) and not live(api, ids["m2"]["id"])


def test_a_restore_of_several_records_is_one_batch_and_of_one_record_none(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['m1']['id']}", 204)
    api.ok("POST", f"/records/{ids['m1']['id']}/restore")
    assert batch_of(api, ids["m1"]["id"], "restore") is None  # one record, nothing cleared: a lone entry
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    api.ok("POST", f"/records/{ids['study']['id']}/restore")
    batch = batch_of(api, ids["m2"]["id"], "restore")
    assert (batch["kind"], batch["label"]) == ("restore", "restore Lake survey")
    assert batch_of(api, ids["study"]["id"], "restore")["id"] == batch["id"]
    hide_parent(api, ids["study"]["id"])
    api.ok("POST", f"/records/{ids['m1']['id']}/restore-above")
    above = batch_of(api, ids["study"]["id"], "restore")
    assert (above["kind"], above["label"]) == ("restore", "restore above " + (ids["m1"]["natural_name"] or ids["m1"]["id"]))


def test_a_taken_unique_key_names_its_fields_the_record_holding_it_and_blocks_restore_above_too(api):
    make_schema(api, "site", [{"name": "code", "type": "string"}, {"name": "zone", "type": "string"}],
                display_template="{code}")
    make_schema(api, "plot", [{"name": "n", "type": "integer"}], parent="site")
    make_collection(api, "c", ["site", "plot"])
    api.ok("PUT", "/schemas/site/unique-keys", json={"keys": [["code", "zone"]]})
    old = make_record(api, "c", "site", {"code": "A", "zone": "north"})
    plot = make_record(api, "c", "plot", {"n": 1}, parent=old["id"])
    hide_parent(api, old["id"])  # deleted, its plot live
    taker = make_record(api, "c", "site", {"code": "A", "zone": "north"})
    message = f"record {taker['id']} now holds the values of unique key (code, zone)"
    conflict = api.ok("GET", f"/records/{old['id']}/restore-plan")["conflict"]
    assert conflict == {"record_id": old["id"], "taken_by": taker["id"], "taken_by_name": "A", "key": ["code", "zone"],
                        "message": message}
    r = api.post(f"/records/{old['id']}/restore")
    assert (r.status_code, r.json()["detail"]) == (
        409, f"cannot restore record {old['id']}: {message}; change or delete that record first")
    r = api.post(f"/records/{plot['id']}/restore-above")
    assert (r.status_code, r.json()["detail"]) == (409, f"cannot restore record {old['id']}: {message}")
    assert not live(api, old["id"])


def test_a_purge_takes_every_generation_below_in_one_batch_and_a_lone_purge_none(api):
    ids = tree(api)
    r = api.delete(f"/records/{ids['study']['id']}/purge")
    assert (r.status_code, r.json()["detail"]) == (409, f"record {ids['study']['id']} is live: delete it before purging it")
    api.ok("DELETE", f"/records/{ids['m1']['id']}", 204)
    api.ok("DELETE", f"/records/{ids['m1']['id']}/purge", 204)
    lone = api.ok("GET", "/audit", params={"action": "purge"})["items"]
    assert [e["entity_id"] for e in lone] == [ids["m1"]["id"]] and lone[0]["batch_id"] is None
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    api.ok("DELETE", f"/records/{ids['study']['id']}/purge", 204)
    for gone in ("study", "sample", "m2"):  # three generations
        assert api.get(f"/records/{ids[gone]['id']}").status_code == 404
    purged = [e for e in api.ok("GET", "/audit", params={"action": "purge"})["items"] if e["entity_id"] != ids["m1"]["id"]]
    assert len(purged) == 3 and len({e["batch_id"] for e in purged}) == 1
    batch = api.ok("GET", f"/audit/batches/{purged[0]['batch_id']}")["batch"]
    assert (batch["kind"], batch["label"]) == ("purge", "purge Lake survey")


def test_orphans_come_in_id_order_a_page_at_a_time(api):
    ids = study_tree(api)
    more = [make_record(api, "lab", "sample", {"site": s, "depth_m": 1.0, "taken_on": "2024-05-04"},
                        parent=ids["study"]["id"]) for s in ("East", "West")]
    hide_parent(api, ids["study"]["id"])
    everyone = sorted([ids["sample"]["id"], *(m["id"] for m in more)])
    page = api.ok("GET", "/records/orphans", params={"limit": 2, "offset": 1})
    assert ([o["id"] for o in page["items"]], page["total"]) == (everyone[1:], 3)
    assert [o["id"] for o in api.ok("GET", "/records/orphans", params={"limit": 2})["items"]] == everyone[:2]


def test_referrers_of_a_live_or_deleted_record_are_the_records_pointing_at_it_and_not_itself(api):
    make_schema(api, "species", [{"name": "name", "type": "string"},
                                 {"name": "like", "type": "reference", "restrictions": {"schema": "species"}}])
    make_schema(api, "obs", [{"name": "of", "type": "reference", "restrictions": {"schema": "species"}}])
    make_collection(api, "c", ["species", "obs"])
    fox = make_record(api, "c", "species", {"name": "fox"})
    api.ok("PATCH", f"/records/{fox['id']}", json={"data": {"like": fox["id"]}})  # it names itself
    make_record(api, "c", "species", {"name": "owl"})  # names nothing
    seen = [make_record(api, "c", "obs", {"of": fox["id"]}) for _ in range(2)]
    make_record(api, "c", "obs", {})
    assert [r["id"] for r in api.ok("GET", f"/records/{fox['id']}/referrers")] == sorted(s["id"] for s in seen)
    api.ok("DELETE", f"/records/{fox['id']}", 204, params={"references": "keep"})
    assert [r["id"] for r in api.ok("GET", f"/records/{fox['id']}/referrers")] == sorted(s["id"] for s in seen)


def test_two_records_restored_or_purged_together_are_one_batch(api):
    ids = tree(api)
    api.ok("DELETE", f"/records/{ids['m1']['id']}", 204)  # on its own: the sample comes back with m2 only
    api.ok("DELETE", f"/records/{ids['sample']['id']}", 204, params={"force": "true"})
    api.ok("POST", f"/records/{ids['sample']['id']}/restore")
    batch = batch_of(api, ids["m2"]["id"], "restore")
    assert batch is not None and batch_of(api, ids["sample"]["id"], "restore")["id"] == batch["id"]
    api.ok("DELETE", f"/records/{ids['m1']['id']}/purge", 204)  # below the sample, still deleted: gone first
    api.ok("DELETE", f"/records/{ids['sample']['id']}", 204, params={"force": "true"})
    api.ok("DELETE", f"/records/{ids['sample']['id']}/purge", 204)  # the sample and m2
    purged = [e for e in api.ok("GET", "/audit", params={"action": "purge"})["items"] if e["entity_id"] != ids["m1"]["id"]]
    assert len(purged) == 2 and purged[0]["batch_id"] is not None and purged[0]["batch_id"] == purged[1]["batch_id"]


def test_restore_above_says_when_nothing_above_is_deleted_and_puts_cleared_references_back(api):
    from sqlalchemy import update

    from benchbook.persistence.tables import Record
    make_schema(api, "site", [{"name": "code", "type": "string"}])
    make_schema(api, "plot", [{"name": "n", "type": "integer"}], parent="site")
    make_schema(api, "visit", [{"name": "at", "type": "reference", "restrictions": {"schema": "site"}}])
    make_collection(api, "c", ["site", "plot", "visit"])
    site = make_record(api, "c", "site", {"code": "N1"})
    plot = make_record(api, "c", "plot", {"n": 1}, parent=site["id"])
    visit = make_record(api, "c", "visit", {"at": site["id"]})
    r = api.post(f"/records/{plot['id']}/restore-above")
    assert (r.status_code, r.json()["detail"]) == (409, f"nothing above record {plot['id']} is deleted")
    api.ok("DELETE", f"/records/{site['id']}", 204, params={"force": "true", "references": "clear"})
    assert api.ok("GET", f"/records/{visit['id']}")["data"].get("at") is None
    with api.app.services.db.session() as s, s.begin():  # the plot back alone, as sync can leave it
        s.execute(update(Record).where(Record.id == plot["id"]).values(deleted_at=None, delete_op=None))
    api.ok("POST", f"/records/{plot['id']}/restore-above")
    assert live(api, site["id"]) and api.ok("GET", f"/records/{visit['id']}")["data"]["at"] == site["id"]
