"""Sync end to end: an authority and devices as projects served on loopback (issue 34)."""
from __future__ import annotations

import pytest

from tests.api.helpers import make_collection, make_record, make_schema

FIELDS = [{"name": "code", "type": "string", "required": True}, {"name": "site", "type": "string"},
          {"name": "depth_m", "type": "float"}]


def _setup(side):
    make_schema(side, "sample", FIELDS, display_template="{code}", unique_keys=[["code"]]) \
        if False else make_schema(side, "sample", FIELDS, display_template="{code}")
    make_collection(side, "lake", ["sample"])
    return [make_record(side, "lake", "sample", {"code": f"S{i}", "site": "North", "depth_m": i}) for i in range(3)]


def _records(side):
    rows = side.ok("GET", "/collections/lake/records", params={"limit": 100})
    items = rows["items"] if isinstance(rows, dict) else rows
    return {r["id"]: r["data"] for r in items}


def test_an_empty_project_joins_and_copies_the_authority(lab):
    authority = lab.project("authority")
    made = _setup(authority)
    device = lab.follow(authority, "laptop")
    assert _records(device) == _records(authority) and len(made) == 3
    remote = device.ok("GET", "/remote")
    assert remote["connected"] and remote["device"] == "laptop" and remote["pending"] == 0
    assert remote["url"] == authority.url and remote["error"] is None and remote["last_sync_at"]
    joined = authority.ok("GET", "/sync/devices")
    assert [(d["name"], d["state"]) for d in joined] == [("laptop", "joined")]
    # the device's history holds the authority's entries, same ids
    theirs = {e["id"] for e in authority.ok("GET", "/audit", params={"limit": 100})["items"]}
    mine = {e["id"] for e in device.ok("GET", "/audit", params={"limit": 100})["items"]}
    assert theirs == mine


def test_edits_of_different_fields_merge_and_the_same_field_conflicts(lab):
    authority = lab.project("authority")
    first = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{first['id']}", json={"data": {"site": "South"}})
    authority.ok("PATCH", f"/records/{first['id']}", json={"data": {"depth_m": 9.5}})
    summary = laptop.sync()
    assert summary["pushed"] == 1 and summary["conflicts"] == 0
    both = {"code": "S0", "site": "South", "depth_m": 9.5}
    assert _records(authority)[first["id"]] == both == _records(laptop)[first["id"]]
    # the same field on both sides: a conflict row, the authority's value kept everywhere
    laptop.ok("PATCH", f"/records/{first['id']}", json={"data": {"site": "East"}})
    authority.ok("PATCH", f"/records/{first['id']}", json={"data": {"site": "West"}})
    summary = laptop.sync()
    assert summary["conflicts"] == 1
    assert _records(laptop)[first["id"]]["site"] == "West" == _records(authority)[first["id"]]["site"]
    rows = laptop.ok("GET", "/remote/conflicts")
    assert len(rows) == 1
    row = rows[0]
    assert {k: row[k] for k in ("kind", "field_label", "yours", "theirs", "base", "theirs_actor", "status")} == {
        "kind": "conflict", "field_label": "site", "yours": "East", "theirs": "West", "base": "South",
        "theirs_actor": "authority", "status": "open"}
    entry = laptop.ok("GET", f"/audit/{row['entry_id']}")
    assert [r["kind"] for r in entry["sync"]] == ["conflict"]
    assert set(entry["sync"][0]) == {"kind", "field_label", "yours", "theirs", "base", "theirs_actor", "status",
                                     "resolution", "message", "attempted", "changes"}
    # mine: an ordinary synced edit, which then wins everywhere
    laptop.ok("POST", f"/remote/conflicts/{row['id']}/resolve", json={"take": "mine"})
    laptop.sync()
    assert _records(laptop)[first["id"]]["site"] == "East" == _records(authority)[first["id"]]["site"]
    assert laptop.ok("GET", "/remote/conflicts") == []
    assert laptop.ok("GET", "/remote")["open_conflicts"] == 0


def test_changes_travel_between_two_devices_stamped_with_the_device(lab):
    authority = lab.project("authority")
    first = _setup(authority)[0]
    laptop, field = lab.follow(authority, "laptop"), lab.follow(authority, "field")
    created = make_record(laptop, "lake", "sample", {"code": "L1", "site": "Dock"})
    laptop.ok("PATCH", f"/records/{first['id']}", json={"data": {"depth_m": 4.0}})
    assert laptop.ok("GET", "/remote")["pending"] == 2
    laptop.sync()
    assert laptop.ok("GET", "/remote")["pending"] == 0
    field.sync()
    assert _records(field) == _records(authority) == _records(laptop)
    assert _records(field)[created["id"]]["code"] == "L1"
    history = authority.ok("GET", "/audit", params={"entity_id": created["id"]})["items"]
    assert [(e["action"], e["device"], e["actor"]) for e in history] == [("create", "laptop", "laptop")]
    on_field = field.ok("GET", "/audit", params={"entity_id": created["id"]})["items"]
    assert [(e["id"], e["device"]) for e in on_field] == [(history[0]["id"], "laptop")]
    on_laptop = laptop.ok("GET", "/audit", params={"entity_id": created["id"]})["items"]
    assert [(e["id"], e["device"]) for e in on_laptop] == [(history[0]["id"], "laptop")]  # every copy says it


def test_edit_against_delete_either_way_keeps_the_edit(lab):
    authority = lab.project("authority")
    a, b = _setup(authority)[:2]
    laptop = lab.follow(authority, "laptop")
    # the device edits what the authority deleted
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "Kept"}})
    authority.ok("DELETE", f"/records/{a['id']}", 204)
    assert laptop.sync()["conflicts"] == 1
    row = laptop.ok("GET", "/remote/conflicts")[0]
    assert row["kind"] == "edit_vs_delete" and row["attempted"] == "update"
    assert [c["after"] for c in row["changes"]] == ["Kept"]
    # the device deletes what the authority edited: not deleted there
    authority.ok("PATCH", f"/records/{b['id']}", json={"data": {"site": "Edited"}})
    laptop_sees = laptop.ok("GET", f"/records/{b['id']}")
    assert laptop_sees["data"]["site"] == "North"
    laptop.ok("DELETE", f"/records/{b['id']}", 204)
    assert laptop.sync()["conflicts"] == 1
    assert authority.ok("GET", f"/records/{b['id']}")["data"]["site"] == "Edited"
    kinds = sorted(r["attempted"] for r in laptop.ok("GET", "/remote/conflicts", params={"kind": "edit_vs_delete"}))
    assert kinds == ["delete", "update"]


def test_a_revoked_device_is_refused_and_keeps_its_changes(lab):
    authority = lab.project("authority")
    first = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    authority.ok("POST", "/sync/devices/laptop/revoke")
    laptop.ok("PATCH", f"/records/{first['id']}", json={"data": {"site": "Offline"}})
    r = laptop.http.post("/remote/sync")
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    remote = laptop.ok("GET", "/remote")
    assert remote["pending"] == 1 and "revoked" in remote["error"]
    assert _records(laptop)[first["id"]]["site"] == "Offline"
    assert _records(authority)[first["id"]]["site"] == "North"


@pytest.mark.parametrize("when", ["twice"])
def test_a_push_sent_again_changes_nothing_twice_and_a_forged_device_is_ignored(lab, when):
    authority = lab.project("authority")
    first = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    token = (laptop.root / ".sync-token").read_text().strip()
    assert oct((laptop.root / ".sync-token").stat().st_mode & 0o777) == "0o600"
    laptop.ok("PATCH", f"/records/{first['id']}", json={"data": {"depth_m": 1.5}})
    entry = laptop.ok("GET", "/audit", params={"entity_id": first["id"], "limit": 1})["items"][0]
    wire = {k: entry[k] for k in ("id", "action", "entity_type", "entity_id", "timestamp", "actor",
                                  "old_data", "new_data")}
    wire.update(device="someone-else", schema_id=None, dataset_id=None, changes=[], batch=None)
    headers = {"Authorization": f"Bearer {token}"}
    answers = [authority.ok("POST", "/sync/push", json={"entries": [wire]}, headers=headers) for _ in range(2)]
    assert answers[0]["results"] == answers[1]["results"]
    assert answers[0]["results"][0]["status"] == "applied"
    history = authority.ok("GET", "/audit", params={"entity_id": first["id"]})["items"]
    edits = [e for e in history if e["action"] == "update"]
    assert [(e["id"], e["device"]) for e in edits] == [(entry["id"], "laptop")]
    r = authority.http.post("/sync/push", json={"entries": [wire]}, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401


def test_a_uniqueness_key_taken_offline_on_both_sides_is_refused_kept_and_retried(lab):
    authority = lab.project("authority")
    _setup(authority)
    authority.ok("PUT", "/schemas/sample/unique-keys", json={"keys": [["code"]]})
    laptop = lab.follow(authority, "laptop")
    taken = make_record(authority, "lake", "sample", {"code": "X1", "site": "Authority"})
    mine = make_record(laptop, "lake", "sample", {"code": "X1", "site": "Laptop"})
    summary = laptop.sync()
    assert summary["rejected"] == 1
    row = laptop.ok("GET", "/remote/conflicts", params={"kind": "rejected"})[0]
    assert row["entity_id"] == mine["id"] and row["attempted"] == "create" and "code" in row["message"]
    assert mine["id"] not in _records(authority)
    assert _records(laptop)[mine["id"]]["code"] == "X1"  # what the user typed stays
    assert _records(laptop)[taken["id"]]["code"] == "X1"
    # the fix, then retry: the record goes as it now stands
    laptop.ok("PATCH", f"/records/{mine['id']}", json={"data": {"code": "X2"}})
    laptop.ok("POST", f"/remote/conflicts/{row['id']}/resolve", json={"take": "retry"})
    laptop.sync()
    assert _records(authority)[mine["id"]] == {"code": "X2", "site": "Laptop"} == _records(laptop)[mine["id"]]
    assert laptop.ok("GET", "/remote")["pending"] == 0
    assert laptop.ok("GET", "/remote/conflicts") == []


def test_files_travel_once_by_sha256_and_a_corrupted_upload_is_refused(lab):
    import hashlib

    authority = lab.project("authority")
    make_schema(authority, "scan", [{"name": "code", "type": "string"}, {"name": "image", "type": "file"}])
    make_collection(authority, "lake", ["scan"])
    laptop, field = lab.follow(authority, "laptop"), lab.follow(authority, "field")
    content = b"\x89PNG not really, but bytes " * 1000
    sha = laptop.ok("POST", "/files", 201, files={"file": ("scan-1.png", content)})["sha256"]
    made = make_record(laptop, "lake", "scan", {"code": "A", "image": sha})
    assert laptop.sync()["files_sent"] == 1
    assert authority.http.get(f"/files/{sha}").content == content
    assert laptop.sync()["files_sent"] == 0  # once
    summary = field.sync()
    assert summary["files_received"] == 1
    got = field.http.get(f"/files/{sha}")
    assert got.content == content and hashlib.sha256(got.content).hexdigest() == sha
    assert field.ok("GET", f"/files/{sha}/info")["filename"] == "scan-1.png"
    assert field.ok("GET", f"/records/{made['id']}")["data"]["image"] == sha
    # content that is not what its name says is refused, and nothing is stored
    token = (laptop.root / ".sync-token").read_text().strip()
    other = hashlib.sha256(b"promised").hexdigest()
    r = authority.http.put(f"/sync/files/{other}", files={"file": ("x.bin", b"something else")},
                           headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 422 and "nothing was stored" in r.json()["detail"]
    assert authority.http.get(f"/files/{other}/info").status_code == 404
    assert not [p for p in (authority.root / "files").rglob("*") if p.name.startswith(".upload-")]
    r = authority.http.put(f"/sync/files/{other}", files={"file": ("x.bin", b"promised")})
    assert r.status_code == 401


def test_schemas_fields_collections_and_views_made_on_a_device_reach_everyone(lab):
    authority = lab.project("authority")
    _setup(authority)
    laptop, field = lab.follow(authority, "laptop"), lab.follow(authority, "field")
    make_schema(laptop, "probe", [{"name": "serial", "type": "string"}], display_template="{serial}")
    laptop.ok("POST", "/schemas/probe/fields", 201, json={"name": "volts", "type": "float"})
    laptop.ok("PATCH", "/schemas/sample/fields/site", json={"label": "Sampling site"})
    laptop.ok("PATCH", "/collections/lake", json={"schemas": ["sample", "probe"]})
    made = make_record(laptop, "lake", "probe", {"serial": "P-7", "volts": 3.3})
    laptop.ok("POST", "/schemas/probe/views", 201, json={"name": "charged", "columns": ["serial", "volts"]})
    summary = laptop.sync()
    assert summary["rejected"] == 0 and summary["conflicts"] == 0, laptop.ok("GET", "/remote/conflicts")
    field.sync()
    for side in (authority, field):
        probe = side.ok("GET", "/schemas/probe")
        assert [f["name"] for f in probe["fields"]] == ["serial", "volts"]
        assert side.ok("GET", "/collections/lake")["schemas"] == ["sample", "probe"]
        assert side.ok("GET", f"/records/{made['id']}")["natural_name"] == "P-7"
        site = next(f for f in side.ok("GET", "/schemas/sample")["fields"] if f["name"] == "site")
        assert site["label"] == "Sampling site"
        assert [v["name"] for v in side.ok("GET", "/schemas/probe/views")] == ["charged"]
    ids = {f["id"] for f in laptop.ok("GET", "/schemas/probe")["fields"]}
    assert ids == {f["id"] for f in authority.ok("GET", "/schemas/probe")["fields"]}  # same field ids everywhere


def test_a_project_holding_data_seeds_an_empty_authority(lab):
    authority = lab.project("authority")
    invite = authority.ok("POST", "/sync/devices", 201, json={"name": "laptop"})["invite"]
    laptop = lab.project("laptop")
    made = _setup(laptop)
    laptop.ok("PATCH", f"/records/{made[0]['id']}", json={"data": {"site": "Edited"}})
    laptop.ok("DELETE", f"/records/{made[2]['id']}", 204)
    laptop.ok("POST", "/remote/connect", json={"url": authority.url, "invite": invite})
    assert _records(authority) == _records(laptop)
    assert _records(authority)[made[0]["id"]]["site"] == "Edited" and made[2]["id"] not in _records(authority)
    assert laptop.ok("GET", "/remote")["pending"] == 0
    # a second project holding data cannot join a project that now holds data: refused, invite unused
    second = authority.ok("POST", "/sync/devices", 201, json={"name": "other"})["invite"]
    other = lab.project("other")
    _setup(other)
    r = other.http.post("/remote/connect", json={"url": authority.url, "invite": second})
    assert r.status_code == 409 and "one of them must be empty" in r.json()["detail"]
    assert [d["state"] for d in authority.ok("GET", "/sync/devices") if d["name"] == "other"] == ["invited"]


def test_a_change_runs_its_workflows_where_it_was_made_and_nowhere_else(lab):
    import yaml

    from tests.runner.automation_helpers import STATS

    authority = lab.project("authority")
    make_schema(authority, "sample", [{"name": "notes", "type": "string"}, {"name": "words", "type": "integer"},
                                      {"name": "chars", "type": "integer"}])
    make_collection(authority, "lake", ["sample"])
    made = make_record(authority, "lake", "sample", {"notes": "one"})
    laptop, field = lab.follow(authority, "laptop"), lab.follow(authority, "field")
    for side in (authority, laptop, field):  # the same workflow file in every project folder
        (side.root / "workflows" / "count-words.yaml").write_text(
            yaml.safe_dump({"name": "count-words", **STATS}, sort_keys=False))
        side.ok("POST", "/plugins/refresh")
    laptop.ok("PATCH", f"/records/{made['id']}", json={"data": {"notes": "one two three"}})
    laptop.ok("POST", "/jobs/drain")
    [run] = laptop.ok("GET", "/jobs")
    assert run["status"] == "completed" and run["trigger"] == "record_updated"
    laptop.sync()
    field.sync()
    for side in (authority, field):
        assert side.ok("GET", f"/records/{made['id']}")["data"] == {"notes": "one two three", "words": 3, "chars": 13}
        side.ok("POST", "/jobs/drain")
        assert side.ok("GET", "/jobs") == [], side.root.name  # synced-in changes start nothing here


def test_an_edit_of_a_record_deleted_at_the_authority_comes_back_with_restore_above(lab):
    authority = lab.project("authority")
    a = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "Kept"}})
    authority.ok("DELETE", f"/records/{a['id']}", 204)
    laptop.sync()
    row = laptop.ok("GET", "/remote/conflicts")[0]
    assert row["kind"] == "edit_vs_delete"
    laptop.ok("POST", f"/remote/conflicts/{row['id']}/resolve", json={"take": "restore_above"})
    laptop.sync()
    for side in (laptop, authority):
        got = side.ok("GET", f"/records/{a['id']}")
        assert got["data"]["site"] == "Kept" and got["deleted_at"] is None, side.root.name


def test_a_conflict_row_closes_as_edited_when_the_field_is_changed_again(lab):
    authority = lab.project("authority")
    a = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "East"}})
    authority.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "West"}})
    laptop.sync()
    [row] = laptop.ok("GET", "/remote/conflicts")
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "Middle"}})
    laptop.sync()
    assert laptop.ok("GET", "/remote/conflicts") == []
    [closed] = laptop.ok("GET", "/remote/conflicts", params={"status": "resolved"})
    assert closed["id"] == row["id"] and closed["resolution"] == "edited"
    assert authority.ok("GET", f"/records/{a['id']}")["data"]["site"] == "Middle"


def test_an_upload_without_a_known_token_is_refused_before_its_body_is_read(lab):
    authority = lab.project("authority")
    sha = "ab" * 32
    unfinished = (b"--b0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n\r\n"
                  + b"x" * (1 << 20))  # no closing boundary: request validation, reading it, would say 422
    for token in ("Bearer bbd_not-a-token", None):
        headers = {"Content-Type": "multipart/form-data; boundary=b0undary"}
        if token:
            headers["Authorization"] = token
        r = authority.http.put(f"/sync/files/{sha}", content=unfinished, headers=headers)
        assert r.status_code == 401, r.text
    assert not list((authority.root / "files").rglob(".upload-*"))


def test_a_schema_changed_on_both_sides_conflicts_and_mine_then_wins(lab):
    authority = lab.project("authority")
    _setup(authority)
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", "/schemas/sample", json={"label": "Lake samples"})
    authority.ok("PATCH", "/schemas/sample", json={"label": "Samples"})
    assert laptop.sync()["conflicts"] == 1
    [row] = laptop.ok("GET", "/remote/conflicts")
    assert (row["entity_type"], row["field"], row["yours"], row["theirs"]) == ("schema", "label", "Lake samples",
                                                                             "Samples")
    assert laptop.ok("GET", "/schemas/sample")["label"] == "Samples"
    laptop.ok("POST", f"/remote/conflicts/{row['id']}/resolve", json={"take": "mine"})
    laptop.sync()
    assert laptop.ok("GET", "/schemas/sample")["label"] == "Lake samples" == authority.ok("GET", "/schemas/sample")["label"]


def test_a_value_a_narrowed_field_no_longer_takes_is_refused_and_kept_on_the_device(lab):
    authority = lab.project("authority")
    a = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    authority.ok("PATCH", "/schemas/sample/fields/site", json={"restrictions": {"max_length": 5}})
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "Northwest"}})  # fine here, offline
    assert laptop.sync()["rejected"] == 1
    [row] = laptop.ok("GET", "/remote/conflicts", params={"kind": "rejected"})
    assert row["attempted"] == "update" and "site" in row["message"]
    assert [c["after"] for c in row["changes"]] == ["Northwest"]
    assert laptop.ok("GET", f"/records/{a['id']}")["data"]["site"] == "Northwest"  # what the user typed stays
    assert authority.ok("GET", f"/records/{a['id']}")["data"]["site"] == "North"
    site = next(f for f in laptop.ok("GET", "/schemas/sample")["fields"] if f["name"] == "site")
    assert site["restrictions"]["max_length"] == 5  # the narrowing reached the device


def _one_edit_vs_delete(device, authority):
    """Sync ``device``, which meets exactly one clash; its ``edit_vs_delete`` row and the sample
    schema's field ids by name."""
    assert device.sync()["conflicts"] == 1
    [row] = device.ok("GET", "/remote/conflicts", params={"kind": "edit_vs_delete"})
    return row, {f["name"]: f["id"] for f in authority.ok("GET", "/schemas/sample")["fields"]}


def test_a_delete_of_what_the_authority_edited_shows_each_field_changed_there_and_who_changed_it(lab):
    """The conflict row of a refused delete lists the authority's edits since the device last saw
    the record (field, label, before, after) and their author (found by mutation testing)."""
    authority = lab.project("authority")
    b = _setup(authority)[1]
    laptop = lab.follow(authority, "laptop")
    authority.ok("PATCH", f"/records/{b['id']}", json={"data": {"site": "Edited", "depth_m": 9.0}})
    laptop.ok("DELETE", f"/records/{b['id']}", 204)
    row, fields = _one_edit_vs_delete(laptop, authority)
    assert (row["attempted"], row["theirs_actor"], row["entity_id"]) == ("delete", "authority", b["id"])
    assert sorted(row["changes"], key=lambda c: c["label"]) == [  # in field id order: ids made in one ms may swap
        {"field": fields["depth_m"], "label": "depth_m", "before": 1.0, "after": 9.0},
        {"field": fields["site"], "label": "site", "before": "North", "after": "Edited"}]
    assert row["message"] == ("the record was edited at the authority after this device last saw it; "
                              "it is not deleted there")


def test_an_edit_of_what_the_authority_deleted_shows_each_field_the_device_changed(lab):
    """The conflict row of an edit refused because the record is deleted at the authority lists
    the device's own changes (field, label, before, after) (found by mutation testing)."""
    authority = lab.project("authority")
    a = _setup(authority)[0]
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{a['id']}", json={"data": {"site": "Kept", "depth_m": 5.5}})
    authority.ok("DELETE", f"/records/{a['id']}", 204)
    row, fields = _one_edit_vs_delete(laptop, authority)
    assert (row["attempted"], row["entity_id"], row["theirs_actor"]) == ("update", a["id"], "authority")
    assert row["message"] == "the record was deleted at the authority; the edit is kept here"
    assert sorted(row["changes"], key=lambda c: c["label"]) == [
        {"field": fields["depth_m"], "label": "depth_m", "before": 0, "after": 5.5},
        {"field": fields["site"], "label": "site", "before": "North", "after": "Kept"}]


def test_the_author_a_conflict_names_is_the_one_of_the_authoritys_latest_version(lab):
    """Another device's edit, synced to the authority after its creation there: a delete refused
    against it names that device, not the record's creator (found by mutation testing)."""
    authority = lab.project("authority")
    b = _setup(authority)[1]
    laptop, field = lab.follow(authority, "laptop"), lab.follow(authority, "field")
    field.ok("PATCH", f"/records/{b['id']}", json={"data": {"site": "Field"}})
    field.sync()
    laptop.ok("DELETE", f"/records/{b['id']}", 204)
    row, _ = _one_edit_vs_delete(laptop, authority)
    assert (row["theirs_actor"], [c["after"] for c in row["changes"]]) == ("field", ["Field"])


def test_a_record_a_device_makes_under_a_parent_arrives_under_that_parent(lab):
    """found by mutation testing: no test made a child record on a device."""
    authority = lab.project("authority")
    make_schema(authority, "study", [{"name": "title", "type": "string"}], display_template="{title}")
    make_schema(authority, "sample", FIELDS, parent="study", display_template="{code}")
    make_collection(authority, "lake", ["study", "sample"])
    study = make_record(authority, "lake", "study", {"title": "Survey"})
    laptop = lab.follow(authority, "laptop")
    child = make_record(laptop, "lake", "sample", {"code": "C1", "site": "Dock"}, parent=study["id"])
    laptop.sync()
    there = authority.ok("GET", f"/records/{child['id']}")
    assert (there["parent_record_id"], there["data"]["code"]) == (study["id"], "C1")
