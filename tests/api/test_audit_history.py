"""History as events: client and server batches, the events feed (filter tree, q, sort), history
filter fields, and storage (background conversion of whole edits, reclaim)."""
from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from benchbook.domain.history import storage as history_storage
from benchbook.domain.ids import new_id
from benchbook.http.app import create_app
from benchbook.persistence.tables import AuditEntry, utcnow
from tests.api.helpers import make_collection, make_record, make_schema
from tests.waiting import HANG

BATCH = "X-Service-Batch"


def events(api: Any, **params: Any) -> dict[str, Any]:
    if isinstance(params.get("filter"), dict):
        params["filter"] = json.dumps(params["filter"])
    return api.ok("GET", "/audit/events", params=params)


def leaf(field: str, op: str, value: Any = None) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value}


@pytest.fixture
def lab(api: Any) -> dict[str, Any]:
    """Schemas ``plate`` (name, note, wells) and ``well`` (under plate) in collections ``lab``, ``field``."""
    make_schema(api, "plate", [{"name": "name", "type": "string"}, {"name": "note", "type": "string"},
                               {"name": "wells", "type": "integer"}])
    make_schema(api, "well", [{"name": "pos", "type": "string"}], parent="plate")
    make_collection(api, "lab", ["plate", "well"])
    make_collection(api, "field", ["plate"])
    return {f["name"]: f["id"] for f in api.ok("GET", "/schemas/plate")["fields"]}


def test_import_batch_is_one_event_with_parts(api, lab):
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "plates.csv"})
    assert batch == {"id": batch["id"], "kind": "import", "created_at": batch["created_at"],
                     "label": "plates.csv", "ref": None}
    assert api.ok("POST", "/audit/batches", 201, json={})["label"] is None
    assert api.ok("POST", "/audit/batches", 201)["kind"] == "import"
    ids = [make_record(api, "lab", "plate", {"name": f"P{i}"}) for i in range(3)]
    headers = {BATCH: batch["id"]}
    for i in range(3):
        api.ok("POST", "/collections/lab/records", 201, json={"schema_name": "plate", "data": {"name": f"B{i}"}},
               headers=headers)
    api.ok("PATCH", f"/records/{ids[0]['id']}", json={"data": {"wells": 96}}, headers=headers)
    event = api.ok("GET", f"/audit/batches/{batch['id']}")
    assert event["kind"] == "batch" and event["id"] == batch["id"] and event["count"] == 4
    assert event["entry"] is None and event["device"] is None and event["batch"] == batch
    assert sorted((p["action"], p["entity_type"], p["count"]) for p in event["parts"]) == [
        ("create", "record", 3), ("update", "record", 1)]
    entries = api.ok("GET", f"/audit/batches/{batch['id']}/entries")
    assert entries["total"] == 4 and {e["batch_id"] for e in entries["items"]} == {batch["id"]}
    assert event["timestamp"] == entries["items"][0]["timestamp"]  # the latest change in it
    only = api.ok("GET", f"/audit/batches/{batch['id']}/entries", params={"action": "update", "sort": "action"})
    assert [e["action"] for e in only["items"]] == ["update"] and only["items"][0]["changes"][0]["after"] == 96
    feed = events(api)
    assert [(e["kind"], e["count"]) for e in feed["items"][:1]] == [("batch", 4)]
    assert feed["items"][0]["batch"]["label"] == "plates.csv"
    assert all(e["kind"] == "entry" and e["count"] == 1 and e["entry"]["id"] == e["id"]
               for e in feed["items"][1:])
    # schemas (2), collections (2), lone creates (3), the batch (1)
    assert feed["total"] == 8 and len(feed["items"]) == 8


def test_empty_batch_event_and_unknown_batches(api, lab):
    batch = api.ok("POST", "/audit/batches", 201, json={"label": None})
    event = api.ok("GET", f"/audit/batches/{batch['id'].lower()}")
    assert event["count"] == 0 and event["parts"] == [] and event["timestamp"] == batch["created_at"]
    assert all(e["id"] != batch["id"] for e in events(api)["items"])  # nothing in it yet: no event
    for path in ("/audit/batches/01ZZZZZZZZZZZZZZZZZZZZZZZZ", "/audit/batches/01ZZZZZZZZZZZZZZZZZZZZZZZZ/entries"):
        r = api.get(path)
        assert r.status_code == 404 and "not found" in r.json()["detail"]
    r = api.post("/collections/lab/records", json={"schema_name": "plate"}, headers={BATCH: "01NOPE"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["header", "X-Service-Batch"]
    assert events(api, filter=leaf("entity_type", "eq", "record"))["total"] == 0  # nothing was written
    for body in ({"kind": "delete"}, {"kind": "import", "ref": "x"}, {"label": 5}):
        assert api.post("/audit/batches", json=body).status_code == 422, body


def test_delete_with_children_is_one_server_batch_event(api, lab):
    plate = make_record(api, "lab", "plate", {"name": "P1"})
    for pos in ("A1", "A2"):
        make_record(api, "lab", "well", {"pos": pos}, parent=plate["id"])
    api.ok("DELETE", f"/records/{plate['id']}", 204, params={"force": "true"})
    newest = events(api)["items"][0]
    assert newest["kind"] == "batch" and newest["batch"]["kind"] == "delete" and newest["count"] == 3
    assert newest["parts"] == [{"action": "delete", "entity_type": "record", "count": 3}]
    assert newest["actor"] == api.project.actor and newest["batch"]["label"] == "3 records"
    only = events(api, filter=leaf("batch_kind", "eq", "delete"))
    assert [e["id"] for e in only["items"]] == [newest["id"]]
    lone = events(api, filter=leaf("batch_kind", "is_null", True))
    assert lone["total"] == 7 and all(e["kind"] == "entry" for e in lone["items"])
    wells = events(api, filter={"and": [leaf("batch_kind", "in", ["delete", "import"]), leaf("schema", "eq", "well")]})
    assert [(e["id"], e["count"], e["parts"][0]["count"]) for e in wells["items"]] == [(newest["id"], 2, 2)]


def test_events_filter_by_action_entity_type_time_and_collection(api, lab):
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "mixed"})
    a = make_record(api, "lab", "plate", {"name": "A"})
    time.sleep(0.01)
    middle = datetime.now(UTC).isoformat()
    time.sleep(0.01)
    for coll, name in (("lab", "B"), ("field", "C"), ("field", "D")):
        api.ok("POST", f"/collections/{coll}/records", 201, json={"schema_name": "plate", "data": {"name": name}},
               headers={BATCH: batch["id"]})
    api.ok("PATCH", f"/records/{a['id']}", json={"data": {"note": "checked"}}, headers={BATCH: batch["id"]})
    api.ok("PATCH", f"/records/{a['id']}", json={"data": {"note": "again"}})

    updates = events(api, filter=leaf("action", "eq", "update"))
    assert [(e["kind"], e["count"]) for e in updates["items"]] == [("entry", 1), ("batch", 1)]
    assert updates["items"][1]["parts"] == [{"action": "update", "entity_type": "record", "count": 1}]
    schemas = events(api, filter=leaf("entity_type", "eq", "schema"))
    assert schemas["total"] == 2 and {e["entry"]["entity_id"] for e in schemas["items"]} == {
        s["id"] for s in api.ok("GET", "/schemas")}
    later = events(api, filter=leaf("timestamp", "gt", middle))
    assert [(e["kind"], e["count"]) for e in later["items"]] == [("entry", 1), ("batch", 4)]
    earlier = events(api, filter=leaf("timestamp", "lte", middle))
    assert earlier["total"] == 5 and all(e["kind"] == "entry" for e in earlier["items"])
    in_field = events(api, filter=leaf("collection", "eq", "field"))
    assert [(e["kind"], e["count"]) for e in in_field["items"]] == [("batch", 2), ("entry", 1)]
    assert in_field["items"][1]["entry"]["entity_type"] == "dataset"
    both = events(api, filter={"or": [leaf("collection", "eq", "field"),
                                      {"and": [leaf("action", "ne", "create"), leaf("actor", "is_null", False)]}]})
    assert [e["count"] for e in both["items"]] == [1, 3, 1]
    assert events(api, filter=leaf("entity_id", "in", [a["id"].lower()]))["total"] == 3
    fields = {f["name"]: f for f in api.ok("GET", "/audit/filter-fields")}
    assert {"action", "entity_type", "entity_id", "actor", "timestamp", "batch_kind", "collection",
            "schema"} <= set(fields)
    assert fields["action"]["choices"] == ["create", "update", "delete", "restore", "purge"]
    assert fields["entity_type"]["choices"] == ["record", "schema", "field", "dataset", "view"]
    assert fields["batch_kind"]["choices"] == ["import", "delete", "restore", "purge", "workflow", "update"]
    assert fields["timestamp"]["type"] == "datetime" and {"gt", "gte", "lt", "lte"} <= set(fields["timestamp"]["operators"])
    assert all(set(f) == {"name", "label", "description", "type", "operators", "choices"} for f in fields.values())


def test_q_finds_stored_values_and_batch_labels(api, lab):
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "Wells_2024.csv"})
    make_record(api, "lab", "plate", {"name": "Alpha", "note": "100% done"})
    api.ok("POST", "/collections/lab/records", 201, json={"schema_name": "plate", "data": {"name": "Beta"}},
           headers={BATCH: batch["id"]})
    api.ok("POST", "/collections/lab/records", 201, json={"schema_name": "plate", "data": {"name": "Gamma", "note": "1000 wells"}},
           headers={BATCH: batch["id"]})
    found = events(api, q="ALPHA")
    assert [(e["kind"], e["entry"]["new_data"]["data"][lab["name"]]) for e in found["items"]] == [("entry", "Alpha")]
    assert [(e["id"], e["count"]) for e in events(api, q="beta")["items"]] == [(batch["id"], 1)]
    assert [(e["id"], e["count"]) for e in events(api, q="wells_2024")["items"]] == [(batch["id"], 2)]
    assert [e["kind"] for e in events(api, q="100%")["items"]] == ["entry"]  # `%` is not a wildcard
    assert [e["kind"] for e in events(api, q="0 WELLS")["items"]] == ["batch"]
    assert events(api, q="Well__2024")["total"] == 0  # `_` is a letter here, not a wildcard
    assert events(api, q="dtype")["total"] == 0  # keys are not what a change stored
    assert events(api, q="  ")["total"] == events(api)["total"]
    both = events(api, q="a", filter=leaf("action", "eq", "create"), limit=2, offset=1)
    assert both["limit"] == 2 and both["offset"] == 1 and len(both["items"]) == 2 and both["total"] >= 4


def test_sort_oldest_first_and_paging(api, lab):
    make_record(api, "lab", "plate", {"name": "last"})
    newest = events(api)
    oldest = events(api, sort="timestamp:asc")
    assert [e["id"] for e in oldest["items"]] == [e["id"] for e in reversed(newest["items"])]
    assert oldest["items"][0]["entry"]["entity_type"] == "schema" and newest["items"][0]["entry"]["entity_type"] == "record"
    assert events(api, sort="timestamp:desc")["items"] == newest["items"]
    page = events(api, limit=2, offset=3)
    assert [e["id"] for e in page["items"]] == [e["id"] for e in newest["items"][3:5]]
    assert newest["limit"] == 25 and newest["offset"] == 0


@pytest.mark.parametrize("params", [
    {"filter": json.dumps(leaf("nope", "eq", "x"))},
    {"filter": json.dumps(leaf(["action"], "eq", "x"))},  # type: ignore[arg-type]
    {"filter": json.dumps(leaf("action", "gt", "x"))},
    {"filter": json.dumps(leaf("timestamp", "gt", "yesterday"))},
    {"filter": json.dumps(leaf("actor", "is_null", "yes"))},
    {"filter": json.dumps({"or": [leaf("action", "eq", "create"), leaf("action", "in", "create")]})},
    {"filter": json.dumps({"and": []})},
    {"filter": "[" * 5000},
    {"filter": "not json"},
    {"sort": "action:asc"},
    {"limit": 0},
    {"offset": -1},
])
def test_events_refuse_bad_parameters(api, params):
    r = api.get("/audit/events", params=params)
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["detail"] and body["errors"]
    if "filter" in params:
        assert body["errors"][0]["loc"][:2] == ["query", "filter"]


def test_filter_error_names_the_leaf(api):
    tree = {"and": [leaf("action", "eq", "create"), {"or": [leaf("colour", "eq", "red")]}]}
    r = api.get("/audit/events", params={"filter": json.dumps(tree)})
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["loc"] == ["query", "filter", "and", 1, "or", 0] and "colour" in error["msg"]


def _whole_edits(api: Any, lab: dict[str, str]) -> list[str]:
    """Three edits written as two whole copies straight into the table (older data)."""
    plate = make_record(api, "lab", "plate", {"name": "P", "note": "n", "wells": 6})
    schema = api.ok("GET", "/schemas/plate")
    ident = {"id": plate["id"], "schema_name": "plate", "collection": "lab", "parent_record_id": None,
             "natural_name": "P"}
    before = {lab["name"]: "P", lab["note"]: "n", lab["wells"]: 6}
    ids = []
    with api.app.services.db.session() as s, s.begin():
        for wells in (12, 24):
            after = {**before, lab["wells"]: wells}
            changes = [{"field": fid, "label": None, "dtype": None, "before": before[fid], "after": after[fid],
                        "deleted": False} for fid in before]
            ids.append(new_id())
            s.add(AuditEntry(id=ids[-1], action="update", entity_type="record", entity_id=plate["id"],
                             timestamp=utcnow(), actor="old", changes=changes, old_data={**ident, "data": before},
                             new_data={**ident, "data": after}, schema_id=schema["id"]))
            before = after
        ids.append(new_id())
        s.add(AuditEntry(id=ids[-1], action="update", entity_type="schema", entity_id=schema["id"],
                         timestamp=utcnow(), actor="old", changes=[],
                         old_data={"id": schema["id"], "name": "plate", "label": "Plates", "description": "same"},
                         new_data={"id": schema["id"], "name": "plate", "label": "Plates", "description": "same",
                                   "display_template": "{name}"}, schema_id=schema["id"]))
    return ids


def test_whole_edits_convert_in_background_and_reclaim_waits(api, lab, monkeypatch):
    rec = make_record(api, "lab", "plate", {"name": "compact"})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"note": "edited"}})
    assert api.ok("GET", "/audit/storage")["whole_entries"] == 0  # edits are written compact
    ids = _whole_edits(api, lab)
    state = history_storage.for_engine(api.app.services.db.engine)
    monkeypatch.setattr(history_storage, "CHUNK", 1)
    gate, held, calls = threading.Event(), threading.Event(), []

    def hook() -> None:
        calls.append(1)
        if len(calls) == 1:
            held.set()
            gate.wait(HANG)
        if len(calls) == 2:
            raise RuntimeError("the process stopped here")  # as if the server went down mid-way

    state.before_chunk = hook
    try:
        first = api.ok("GET", "/audit/storage")
        assert held.wait(HANG)
        assert first["converting"] is True and first["whole_entries"] == 3
        assert first["total"] == 3 and first["done"] == 0
        r = api.post("/audit/storage/reclaim")
        assert r.status_code == 409 and "converted" in r.json()["detail"]
        gate.set()
        assert state.wait(HANG)
        assert api.ok("GET", f"/audit/{ids[0]}")["old_data"]["data"] == {lab["wells"]: 6}  # converted before the stop
        api.ok("GET", "/audit/storage")  # a restart continues from what is still whole
        assert state.wait(HANG) and state.total == 2 and state.done == 2
    finally:
        gate.set()
        state.before_chunk = None
        state.wait(HANG)
    idle = api.ok("GET", "/audit/storage")
    assert idle["whole_entries"] == 0 and idle["converting"] is False
    assert idle["done"] is None and idle["total"] is None
    second = api.ok("GET", f"/audit/{ids[1]}")
    assert second["old_data"]["data"] == {lab["wells"]: 12} and second["new_data"]["data"] == {lab["wells"]: 24}
    assert second["old_data"]["natural_name"] == "P" and [c["field"] for c in second["changes"]] == [lab["wells"]]
    schema_edit = api.ok("GET", f"/audit/{ids[2]}")
    assert schema_edit["old_data"] == {"id": schema_edit["entity_id"], "name": "plate", "label": "Plates"}
    assert schema_edit["new_data"]["display_template"] == "{name}" and "description" not in schema_edit["new_data"]
    assert api.ok("POST", "/audit/storage/reclaim")["converting"] is False


def test_reclaim_gives_room_back_after_purging_and_converting(api, lab):
    big = "x" * 4000
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "bulk"})
    made = [api.ok("POST", "/collections/field/records", 201,
                   json={"schema_name": "plate", "data": {"name": f"R{i}", "note": big + str(i)}},
                   headers={BATCH: batch["id"]}) for i in range(60)]
    with api.app.services.db.session() as s, s.begin():  # older, whole edits of the same records
        for rec in made:
            old = {"id": rec["id"], "data": {lab["name"]: rec["data"]["name"], lab["note"]: rec["data"]["note"]}}
            s.add(AuditEntry(id=new_id(), action="update", entity_type="record", entity_id=rec["id"],
                             timestamp=utcnow(), changes=[], old_data=old,
                             new_data={**old, "data": {**old["data"], lab["wells"]: 1}}))
    api.ok("DELETE", "/collections/field", 204)
    api.ok("DELETE", "/collections/field/purge", 204)
    assert api.ok("GET", "/audit/storage")["whole_entries"] == 60  # starts converting them
    assert history_storage.for_engine(api.app.services.db.engine).wait(HANG)
    before = api.ok("GET", "/audit/storage")
    after = api.ok("POST", "/audit/storage/reclaim")
    assert before["whole_entries"] == after["whole_entries"] == 0 and after["converting"] is False
    if api.app.services.db.engine.dialect.name == "sqlite":
        assert before["free_bytes"] > 60 * 4000 and after["free_bytes"] == 0
        assert after["size_bytes"] <= before["size_bytes"] - before["free_bytes"]
    else:
        assert before["size_bytes"] is None and after["free_bytes"] is None
    assert events(api, q="R59")["items"][0]["batch"]["kind"] == "purge"


def test_search_finds_the_same_records_after_reclaim(api, lab):
    """Reclaiming rebuilds a SQLite file (VACUUM); the search index names records by their rowid,
    which SQLite keeps through it: after purges leave holes, every word still finds its record."""
    made = [make_record(api, "lab", "plate", {"name": f"P{i}", "note": f"word{i:02d}z shared"}) for i in range(30)]
    for rec in made[::3]:
        api.ok("DELETE", f"/records/{rec['id']}", 204)
        api.ok("DELETE", f"/records/{rec['id']}/purge", 204)
    api.ok("POST", "/audit/storage/reclaim")
    for i, rec in enumerate(made):
        found = api.ok("GET", "/collections/lab/records", params={"search": f"word{i:02d}z"})["items"]
        assert [r["id"] for r in found] == ([] if i % 3 == 0 else [rec["id"]]), i
    assert api.ok("GET", "/collections/lab/records", params={"search": "shared", "limit": 0})["total"] == 20


def test_start_up_resumes_an_unfinished_conversion(api, lab):
    _whole_edits(api, lab)
    restarted = create_app(api.project, resume_history=True)  # the server starting again
    engine = restarted.services.db.engine
    try:
        history_storage.resume(engine).join(HANG)  # what create_app started, once more: no second thread
        assert history_storage.for_engine(engine).wait(HANG)
        with restarted.services.db.session() as s:
            assert history_storage.count_whole(s) == 0
    finally:
        engine.dispose()
    assert api.ok("GET", "/audit/storage")["whole_entries"] == 0
