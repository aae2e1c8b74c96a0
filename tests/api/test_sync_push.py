"""``POST /sync/push`` answered entry by entry (docs/sync.md *Merging*): entries written by hand
as a device would send them, so that each answer's status, number and rows are checked exactly,
on both backends. The end-to-end paths (a device's own entries, its outbox, the conflict rows it
keeps) are in ``tests/sync/``; these pin the authority's rules one at a time."""
from __future__ import annotations

from typing import Any

from ulid import ULID

from tests.api.helpers import make_collection, make_record, make_schema

WHEN = "2026-06-01T10:00:00+00:00"
NOT_HELD = "the record is not at the authority: its creation was refused or was purged there"


def _join(api, name="laptop"):
    """Headers of device ``name``, joined to ``api``'s project (the authority)."""
    invite = api.ok("POST", "/sync/devices", 201, json={"name": name})["invite"]
    return {"Authorization": f"Bearer {api.ok('POST', '/sync/join', json={'invite': invite})['token']}"}


def _lake(api):
    """Schemas ``site`` (title) and ``sample`` (code, depth, under a site), collection ``lake``;
    returns ``{field name: field id}`` of both, the two schema ids and the collection's id."""
    make_schema(api, "site", [{"name": "title", "type": "string"}])
    make_schema(api, "sample", [{"name": "code", "type": "string"}, {"name": "depth", "type": "integer"}],
                parent="site")
    make_collection(api, "lake", ["site", "sample"])
    sample, site = api.ok("GET", "/schemas/sample"), api.ok("GET", "/schemas/site")
    ids = {f["name"]: f["id"] for f in sample["fields"] + site["fields"]}
    return ids, sample["id"], site["id"], api.ok("GET", "/collections/lake")["id"]


def _home(api):
    """A site every sample of a test lives under unless it says otherwise."""
    return make_record(api, "lake", "site", {"title": "Home"})


def _entry(action: str, record_id: str, *, old: dict[str, Any] | None = None, new: dict[str, Any] | None = None,
           schema_id: str | None = None, dataset_id: str | None = None,
           entry_id: str | None = None) -> dict[str, Any]:
    """A record's wire entry, made by ``ann`` at :data:`WHEN` (docs/sync.md *What travels*)."""
    return {"id": entry_id or str(ULID()), "action": action, "entity_type": "record", "entity_id": record_id,
            "timestamp": WHEN, "actor": "ann", "old_data": old, "new_data": new, "schema_id": schema_id,
            "dataset_id": dataset_id, "changes": [], "batch": None}


def _batch(kind: str = "update") -> dict[str, Any]:
    """A wire batch: one operation of the device's."""
    return {"id": str(ULID()), "kind": kind, "label": None, "ref": None, "actor": "ann",
            "created_at": WHEN}


def _push(api, headers, *entries):
    return api.ok("POST", "/sync/push", json={"entries": list(entries)}, headers=headers)


def _seqs(api, headers):
    """``{entry id: seq}`` of everything the authority's feed holds."""
    page = api.ok("GET", "/sync/feed", params={"after": 0, "limit": 5000}, headers=headers)
    return {e["id"]: e["seq"] for e in page["entries"]}, page["head"]


def _update(ids, schema_id, record, **changed):
    """An update entry of ``record`` (as the API answered it) setting ``changed`` (field name →
    value): as a device writes one, the changed fields only, before and after."""
    where = record["parent_record_id"]
    return _entry("update", record["id"], old={"data": {ids[k]: record["data"].get(k) for k in changed},
                                               "parent_record_id": where},
                  new={"data": {ids[k]: v for k, v in changed.items()}, "parent_record_id": where},
                  schema_id=schema_id)


def _whole(action, ids, schema_id, record):
    """A ``delete``, ``restore`` or ``purge`` entry of ``record`` holding its values as they are."""
    return _entry(action, record["id"], old={"data": {ids[k]: v for k, v in record["data"].items()},
                                             "parent_record_id": record["parent_record_id"]},
                  schema_id=schema_id)


def test_answers_follow_the_entries_one_each_numbered_as_the_feed_numbers_them(api):
    ids, sample_id, site_id, lake_id = _lake(api)
    laptop = _join(api)
    site = make_record(api, "lake", "site", {"title": "North"})
    created = _entry("create", str(ULID()), new={"data": {ids["code"]: "S1", ids["depth"]: 3},
                                                 "parent_record_id": site["id"]},
                     schema_id=sample_id, dataset_id=lake_id)
    edited = _entry("update", created["entity_id"], old={"data": {ids["depth"]: 3}, "parent_record_id": site["id"]},
                    new={"data": {ids["depth"]: 4}, "parent_record_id": site["id"]}, schema_id=sample_id)
    own = api.ok("GET", "/audit", params={"entity_id": site["id"]})["items"][0]  # the authority's own entry
    sent = [created, edited, created, _entry("create", site["id"], entry_id=own["id"], schema_id=site_id,
                                              dataset_id=lake_id, new={"data": {}})]
    answer = _push(api, laptop, *sent)
    results = answer["results"]
    assert [r["id"] for r in results] == [e["id"] for e in sent]
    assert [r["status"] for r in results] == ["applied", "applied", "applied", "duplicate"]
    assert results[2] == results[0] and results[3] == {"id": own["id"], "status": "duplicate", "seq": None,
                                                       "rows": []}
    seqs, head = _seqs(api, laptop)
    assert [r["seq"] for r in results[:2]] == [seqs[created["id"]], seqs[edited["id"]]]
    assert results[0]["seq"] < results[1]["seq"] and answer["head"] == head == max(seqs.values())
    got = api.ok("GET", f"/records/{created['entity_id']}")
    assert got["data"] == {"code": "S1", "depth": 4} and got["parent_record_id"] == site["id"]
    history = api.ok("GET", "/audit", params={"entity_id": created["entity_id"]})["items"]
    assert sorted((e["id"], e["device"], e["actor"]) for e in history) == sorted(
        [(created["id"], "laptop", "ann"), (edited["id"], "laptop", "ann")])


def test_a_resend_gets_the_stored_answer_and_an_entry_that_changed_nothing_is_weighed_again(api):
    ids, sample_id, *_ = _lake(api)
    laptop = _join(api)
    home = _home(api)["id"]
    a = make_record(api, "lake", "sample", {"code": "A", "depth": 1}, parent=home)
    b = make_record(api, "lake", "sample", {"code": "B", "depth": 1}, parent=home)
    applied = _update(ids, sample_id, a, depth=2)
    first = _push(api, laptop, applied)["results"][0]
    assert first["status"] == "applied" and isinstance(first["seq"], int)
    api.ok("PATCH", f"/records/{a['id']}", json={"data": {"depth": 1}})  # the authority changes it back
    assert _push(api, laptop, applied)["results"][0] == first  # stored: the same answer, nothing twice
    assert api.ok("GET", f"/records/{a['id']}")["data"]["depth"] == 1
    # a conflict on every field writes nothing: not stored, so a later resend is weighed again
    api.ok("PATCH", f"/records/{b['id']}", json={"data": {"depth": 7}})
    clash = {**_update(ids, sample_id, b, depth=5), "batch": _batch()}
    refused = _push(api, laptop, clash)["results"][0]
    assert (refused["status"], refused["seq"], [r["kind"] for r in refused["rows"]]) == ("conflict", None, ["conflict"])
    assert clash["id"] not in _seqs(api, laptop)[0]
    assert api.request("GET", f"/audit/batches/{clash['batch']['id']}").status_code == 404  # nothing left of it
    api.ok("PATCH", f"/records/{b['id']}", json={"data": {"depth": 1}})  # back to the entry's base
    again = _push(api, laptop, clash)["results"][0]
    assert again["status"] == "applied" and again["seq"] == _seqs(api, laptop)[0][clash["id"]]
    assert api.ok("GET", f"/records/{b['id']}")["data"]["depth"] == 5


def test_a_refused_entry_is_undone_alone_and_its_row_holds_what_it_tried(api):
    ids, sample_id, _site_id, lake_id = _lake(api)
    laptop = _join(api)

    home = _home(api)["id"]

    def create(code, depth):
        return _entry("create", str(ULID()), new={"data": {ids["code"]: code, ids["depth"]: depth},
                                                  "parent_record_id": home}, schema_id=sample_id, dataset_id=lake_id)

    good, bad, after = create("G", 1), create("X", "deep"), create("H", 2)
    results = _push(api, laptop, good, bad, after)["results"]
    assert [r["status"] for r in results] == ["applied", "rejected", "applied"]
    assert results[1]["seq"] is None
    [row] = results[1]["rows"]
    assert (row["kind"], row["attempted"], row["status"]) == ("rejected", "create", "open")
    assert row["message"] == "depth: 'deep' is not a number"
    assert sorted(row["changes"], key=lambda c: c["label"]) == [
        {"field": ids["code"], "label": "code", "before": None, "after": "X"},
        {"field": ids["depth"], "label": "depth", "before": None, "after": "deep"}]
    codes = sorted(r["data"]["code"] for r in api.ok("GET", "/collections/lake/records",
                                                      params={"schema": "sample"})["items"])
    assert codes == ["G", "H"]
    assert api.request("GET", f"/records/{bad['entity_id']}").status_code == 404
    seqs, _ = _seqs(api, laptop)
    assert good["id"] in seqs and after["id"] in seqs and bad["id"] not in seqs


def test_an_entry_for_a_record_the_authority_does_not_hold_waits_or_has_nothing_to_do(api):
    ids, sample_id, _site_id, lake_id = _lake(api)
    laptop = _join(api)
    missing, home = str(ULID()), _home(api)["id"]
    first = {"data": {ids["depth"]: 1}, "parent_record_id": home}
    edit = _entry("update", missing, old={"data": {ids["depth"]: 1, ids["code"]: None}, "parent_record_id": home},
                  new={"data": {ids["depth"]: 2, ids["code"]: "M2"}, "parent_record_id": home}, schema_id=sample_id)
    edit["batch"] = _batch()
    results = _push(api, laptop, edit, *(_entry(action, missing, old=first, schema_id=sample_id)
                                         for action in ("delete", "restore", "purge")))["results"]
    assert [(r["status"], r["seq"]) for r in results] == [("deferred", None), ("merged", None), ("merged", None),
                                                          ("merged", None)]
    assert [r["rows"] for r in results[1:]] == [[], [], []]
    assert api.request("GET", f"/audit/batches/{edit['batch']['id']}").status_code == 404  # nothing left of it
    [row] = results[0]["rows"]
    assert (row["kind"], row["attempted"], row["message"]) == ("rejected", "update", NOT_HELD)
    assert sorted(row["changes"], key=lambda c: c["label"]) == [
        {"field": ids["code"], "label": "code", "before": None, "after": "M2"},
        {"field": ids["depth"], "label": "depth", "before": 1, "after": 2}]
    # deferred is not stored: once the record's create arrives, the same edit applies
    create = _entry("create", missing, new=first, schema_id=sample_id, dataset_id=lake_id)
    assert [r["status"] for r in _push(api, laptop, create, edit)["results"]] == ["applied", "applied"]
    assert api.ok("GET", f"/records/{missing}")["data"] == {"code": "M2", "depth": 2}
    # a create of a record already there changes nothing
    twice = _entry("create", missing, new=first, schema_id=sample_id, dataset_id=lake_id)
    assert _push(api, laptop, twice)["results"][0] == {"id": twice["id"], "status": "merged", "seq": None, "rows": []}
    assert api.ok("GET", f"/records/{missing}")["data"] == {"code": "M2", "depth": 2}


def test_an_edit_merges_field_by_field_and_a_clash_keeps_the_authoritys_value_and_says_who(api):
    ids, sample_id, *_ = _lake(api)
    laptop = _join(api)
    rec = make_record(api, "lake", "sample", {"code": "A", "depth": 1}, parent=_home(api)["id"])
    # the authority already holds what the device sends: nothing to do
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"depth": 2}})
    same = _push(api, laptop, _update(ids, sample_id, rec, depth=2))["results"][0]
    assert (same["status"], same["rows"]) == ("merged", [])
    # part of it already there, the rest taken: merged, and what was taken went in
    part_entry = _update(ids, sample_id, rec, code="AA", depth=2)
    part = _push(api, laptop, part_entry)["results"][0]
    assert (part["status"], part["rows"]) == ("merged", [])
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"code": "AA", "depth": 2}
    rec["data"]["code"] = "AA"
    # another device's later edit of another record is not who changed this one
    other = make_record(api, "lake", "sample", {"code": "O", "depth": 1}, parent=rec["parent_record_id"])
    later = _update(ids, sample_id, other, depth=5)
    later["timestamp"] = "2030-01-01T00:00:00+00:00"
    assert _push(api, _join(api, "field"), later)["results"][0]["status"] == "applied"
    # one field taken (the authority still holds its base), one clashing (changed there too)
    both = _update(ids, sample_id, rec, code="B", depth=3)
    result = _push(api, laptop, both)["results"][0]
    assert result["status"] == "conflict" and result["seq"] == _seqs(api, laptop)[0][both["id"]]
    [row] = result["rows"]
    edits = api.ok("GET", "/audit", params={"entity_id": rec["id"], "action": "update"})["items"]
    theirs = next(e for e in edits if e["device"] is None)  # the authority's own edit
    assert {k: row[k] for k in ("kind", "attempted", "field", "field_label", "yours", "theirs", "base",
                                 "theirs_actor", "status")} == {
        "kind": "conflict", "attempted": "update", "field": ids["depth"], "field_label": "depth", "yours": 3,
        "theirs": 2, "base": 1, "theirs_actor": theirs["actor"], "status": "open"}
    assert row["message"] == "both sides changed this field; the authority's value is kept"
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"code": "B", "depth": 2}
    # both wrote something, so both answers were stored: sent again, the same answers, nothing redone
    assert _push(api, laptop, part_entry, both)["results"] == [part, result]
    assert api.ok("GET", f"/records/{rec['id']}")["data"] == {"code": "B", "depth": 2}


def test_a_move_merges_as_one_more_value(api):
    ids, sample_id, *_ = _lake(api)
    laptop = _join(api)
    north, south, east = (make_record(api, "lake", "site", {"title": t}) for t in ("North", "South", "East"))
    rec = make_record(api, "lake", "sample", {"code": "A", "depth": 1}, parent=north["id"])
    move = _update(ids, sample_id, rec)
    move["new_data"]["parent_record_id"] = south["id"]
    assert _push(api, laptop, move)["results"][0]["status"] == "applied"
    assert api.ok("GET", f"/records/{rec['id']}")["parent_record_id"] == south["id"]
    # moved elsewhere at the authority meanwhile: a conflict on the record's place
    api.ok("PATCH", f"/records/{rec['id']}", json={"parent_record_id": east["id"]})
    clash = _update(ids, sample_id, {**rec, "parent_record_id": south["id"]})
    clash["new_data"]["parent_record_id"] = north["id"]
    [row] = _push(api, laptop, clash)["results"][0]["rows"]
    assert (row["field"], row["field_label"], row["yours"], row["theirs"], row["base"]) == (
        "parent_record_id", "parent", north["id"], east["id"], south["id"])
    assert api.ok("GET", f"/records/{rec['id']}")["parent_record_id"] == east["id"]


def test_restore_purge_and_delete_of_what_the_authority_holds(api):
    ids, sample_id, site_id, _lake_id = _lake(api)
    laptop = _join(api)
    home = _home(api)
    a, b, c = (make_record(api, "lake", "sample", {"code": x, "depth": 1}, parent=home["id"]) for x in "ABC")
    api.ok("DELETE", f"/records/{a['id']}", 204)
    results = _push(api, laptop, *(_whole(action, ids, sample_id, rec) for action, rec in (
        ("restore", a), ("restore", b), ("delete", c), ("delete", c), ("purge", b))))["results"]
    assert [r["status"] for r in results] == ["applied", "merged", "applied", "merged", "applied"]
    assert api.ok("GET", f"/records/{a['id']}")["deleted_at"] is None
    assert api.ok("GET", f"/records/{c['id']}")["deleted_at"] is not None
    assert api.request("GET", f"/records/{b['id']}").status_code == 404
    # a delete of a record something was added under at the authority: not deleted there
    site = make_record(api, "lake", "site", {"title": "North"})
    child = make_record(api, "lake", "sample", {"code": "D", "depth": 1}, parent=site["id"])
    refused = _push(api, laptop, _whole("delete", ids, site_id, site))["results"][0]
    [row] = refused["rows"]
    assert (refused["status"], row["kind"], row["attempted"]) == ("conflict", "edit_vs_delete", "delete")
    assert row["message"] == "1 record(s) were added under it at the authority; it is not deleted there"
    assert row["theirs_actor"] == api.ok("GET", "/audit", params={"entity_id": child["id"]})["items"][0]["actor"]
    assert api.ok("GET", f"/records/{site['id']}")["deleted_at"] is None
    # the same delete sent with the child's own delete: the device deleted both, so both go
    results = _push(api, laptop, _whole("delete", ids, site_id, site), _whole("delete", ids, sample_id, child))
    assert [r["status"] for r in results["results"]] == ["applied", "applied"]
    assert api.ok("GET", f"/records/{site['id']}")["deleted_at"] is not None
    assert api.ok("GET", f"/records/{child['id']}")["deleted_at"] is not None


def test_a_refused_catalog_entry_keeps_the_changes_it_carried_and_the_push_goes_on(api):
    ids, sample_id, _site_id, lake_id = _lake(api)
    laptop = _join(api)
    carried = [{"field": "name", "label": "name", "before": None, "after": "sample"}]
    taken = {**_entry("create", str(ULID()), new={"name": "sample", "fields": []}), "entity_type": "schema",
             "changes": carried}
    after = _entry("create", str(ULID()), new={"data": {ids["code"]: "Z"}, "parent_record_id": _home(api)["id"]},
                   schema_id=sample_id, dataset_id=lake_id)
    results = _push(api, laptop, taken, after)["results"]
    assert [r["status"] for r in results] == ["rejected", "applied"]
    [row] = results[0]["rows"]
    assert (row["kind"], row["attempted"], row["changes"]) == ("rejected", "create", carried)
    assert "sample" in row["message"]
    assert [s["name"] for s in api.ok("GET", "/schemas")] == ["sample", "site"]


def test_records_a_device_deleted_in_one_batch_come_back_together_and_stay_one_event(api):
    ids, sample_id, site_id, _lake_id = _lake(api)
    laptop = _join(api)
    site = _home(api)
    child = make_record(api, "lake", "sample", {"code": "C", "depth": 1}, parent=site["id"])
    batch = {"id": str(ULID()), "kind": "delete", "label": "Home", "ref": None, "actor": "ann", "created_at": WHEN}
    sent = [_whole("delete", ids, sample_id, child), _whole("delete", ids, site_id, site)]
    for entry in sent:
        entry["batch"] = batch
    answers = _push(api, laptop, *sent)["results"]
    assert [r["status"] for r in answers] == ["applied", "applied"]
    kept = api.ok("GET", f"/audit/batches/{batch['id']}")
    assert (kept["kind"], kept["count"], kept["actor"], kept["device"]) == ("batch", 2, "ann", "laptop")
    assert (kept["batch"]["kind"], kept["batch"]["label"]) == ("delete", "Home")
    events = {e["id"]: e for e in api.ok("GET", "/audit/events", params={"limit": 100})["items"]}
    assert (events[batch["id"]]["device"], events[batch["id"]]["count"]) == ("laptop", 2)
    own = api.ok("GET", "/audit", params={"entity_id": site["id"], "action": "create"})["items"][0]
    assert (events[own["id"]]["kind"], events[own["id"]]["device"]) == ("entry", None)  # made here
    in_it = api.ok("GET", f"/audit/batches/{batch['id']}/entries")["items"]
    assert sorted(e["id"] for e in in_it) == sorted(e["id"] for e in sent)
    # one delete at the authority too: restoring the site brings back what went with it
    assert api.ok("GET", f"/records/{site['id']}/restore-plan")["records"] == 2
    api.ok("POST", f"/records/{site['id']}/restore")
    assert api.ok("GET", f"/records/{child['id']}")["deleted_at"] is None


def test_an_edit_and_a_delete_that_meet_are_conflicts_that_apply_nothing(api):
    ids, sample_id, *_ = _lake(api)
    laptop = _join(api)
    home = _home(api)["id"]
    gone, edited = (make_record(api, "lake", "sample", {"code": c, "depth": 1}, parent=home) for c in "GE")
    api.ok("DELETE", f"/records/{gone['id']}", 204)
    seen = _whole("delete", ids, sample_id, edited)  # what the device saw when it deleted it
    api.ok("PATCH", f"/records/{edited['id']}", json={"data": {"depth": 4}})
    results = _push(api, laptop, _update(ids, sample_id, gone, depth=2), seen)["results"]
    assert [(r["status"], [x["kind"] for x in r["rows"]]) for r in results] == [
        ("conflict", ["edit_vs_delete"]), ("conflict", ["edit_vs_delete"])]
    mine, theirs = results[0]["rows"][0], results[1]["rows"][0]
    assert (mine["attempted"], mine["changes"]) == (
        "update", [{"field": ids["depth"], "label": "depth", "before": 1, "after": 2}])
    assert mine["message"] == "the record was deleted at the authority; the edit is kept here"
    assert (theirs["attempted"], theirs["changes"]) == (
        "delete", [{"field": ids["depth"], "label": "depth", "before": 1, "after": 4}])
    assert api.ok("GET", f"/records/{gone['id']}")["deleted_at"] is not None
    assert api.ok("GET", f"/records/{edited['id']}")["deleted_at"] is None


def test_records_a_device_deleted_one_after_the_other_come_back_one_at_a_time(api):
    ids, sample_id, site_id, _lake_id = _lake(api)
    laptop = _join(api)
    site = _home(api)
    child = make_record(api, "lake", "sample", {"code": "C", "depth": 1}, parent=site["id"])
    first = {**_whole("delete", ids, sample_id, child), "batch": _batch(kind="delete")}
    assert _push(api, laptop, first)["results"][0]["status"] == "applied"
    then = _whole("delete", ids, site_id, site)  # no batch: its own operation
    assert _push(api, laptop, then)["results"][0]["status"] == "applied"
    assert api.ok("GET", f"/records/{site['id']}/restore-plan")["records"] == 1
    api.ok("POST", f"/records/{site['id']}/restore")
    assert api.ok("GET", f"/records/{child['id']}")["deleted_at"] is not None  # deleted on its own, stays so
