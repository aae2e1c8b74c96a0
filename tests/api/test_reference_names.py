"""References in natural names (issue 35 item 2): a display template's reference placeholder
shows the target's natural name, and the names that show a target follow it when it is renamed
(set-based, same transaction, an ``update`` entry each, transitively, cycles ended)."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema


def _airline(api):
    make_schema(api, "airline", [{"name": "carrier", "type": "string"}, {"name": "name", "type": "string"}],
                display_template="{carrier}")
    make_schema(api, "plane", [{"name": "tailnum", "type": "string"}, {"name": "owner", "type": "reference",
                                                                       "restrictions": {"schema": "airline"}}],
                display_template="{tailnum} ({owner})")
    make_schema(api, "flight", [
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "flight", "type": "integer"}, {"name": "year", "type": "integer"},
        {"name": "month", "type": "integer"}, {"name": "day", "type": "integer"},
        {"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}},
        {"name": "crew", "type": "reference_list", "restrictions": {"schema": "airline"}}],
        display_template="{carrier}{flight}-{year}-{month}-{day}")
    make_collection(api, "nyc", ["airline", "plane", "flight"])
    ua = make_record(api, "nyc", "airline", {"carrier": "UA", "name": "United Air Lines Inc."})
    return ua


def test_a_reference_in_a_template_shows_the_targets_name(api):
    ua = _airline(api)
    flight = make_record(api, "nyc", "flight", {"carrier": ua["id"], "flight": 1545, "year": 2013, "month": 1,
                                                 "day": 1})
    assert flight["natural_name"] == "UA1545-2013-1-1"
    listed = api.ok("GET", "/collections/nyc/records", params={"schema": "flight"})
    assert [r["natural_name"] for r in listed["items"]] == ["UA1545-2013-1-1"]
    # a target without a natural name shows its id; a reference_list its targets' names joined
    make_schema(api, "crewed", [{"name": "crew", "type": "reference_list", "restrictions": {"schema": "airline"}},
                                {"name": "note", "type": "string"}], display_template="{crew}: {note}")
    api.ok("PATCH", "/collections/nyc", json={"schemas": ["airline", "plane", "flight", "crewed"]})
    nameless = make_record(api, "nyc", "airline", {"name": "no code"})
    assert nameless["natural_name"] is None
    crewed = make_record(api, "nyc", "crewed", {"crew": [ua["id"], nameless["id"]], "note": "x"})
    assert crewed["natural_name"] == f"UA, {nameless['id']}: x"


def test_renaming_a_target_renames_the_records_naming_it_with_history(api):
    ua = _airline(api)
    flights = [make_record(api, "nyc", "flight", {"carrier": ua["id"], "flight": n, "year": 2013, "month": 1,
                                                  "day": 1}) for n in (1, 2, 3)]
    other = make_record(api, "nyc", "airline", {"carrier": "AA"})
    untouched = make_record(api, "nyc", "flight", {"carrier": other["id"], "flight": 9, "year": 2013, "month": 1,
                                                   "day": 2})
    api.ok("PATCH", f"/records/{ua['id']}", json={"data": {"carrier": "UX"}})
    names = {r["id"]: r["natural_name"] for r in api.ok("GET", "/collections/nyc/records",
                                                        params={"schema": "flight"})["items"]}
    assert [names[f["id"]] for f in flights] == ["UX1-2013-1-1", "UX2-2013-1-1", "UX3-2013-1-1"]
    assert names[untouched["id"]] == "AA9-2013-1-2"
    # each flight has an update entry of its name alone; with the airline's edit it is one event
    for f in flights:
        entries = api.ok("GET", "/audit", params={"entity_id": f["id"], "action": "update"})["items"]
        assert len(entries) == 1
        [change] = entries[0]["changes"]
        assert (change["field"], change["label"]) == ("natural_name", "name")
        assert change["before"].startswith("UA") and change["after"].startswith("UX")
        assert entries[0]["old_data"]["natural_name"].startswith("UA")
        assert entries[0]["new_data"]["natural_name"].startswith("UX")
        assert entries[0]["batch_id"] is not None
    batch = api.ok("GET", f"/audit/batches/{entries[0]['batch_id']}")
    assert batch["batch"]["kind"] == "update" and batch["count"] == 4
    event = api.ok("GET", "/audit/events", params={"limit": 1})["items"][0]
    assert event["kind"] == "batch" and event["count"] == 4  # the airline's edit and three names
    # an edit that does not change the target's name writes nothing more
    api.ok("PATCH", f"/records/{ua['id']}", json={"data": {"name": "United"}})
    assert len(api.ok("GET", "/audit", params={"entity_id": flights[0]["id"], "action": "update"})["items"]) == 1
    # the create entry keeps the name the record was created with
    created = api.ok("GET", "/audit", params={"entity_id": flights[0]["id"], "action": "create"})["items"][0]
    assert created["new_data"]["natural_name"] == "UA1-2013-1-1"


def test_names_follow_along_a_chain_of_references(api):
    ua = _airline(api)
    plane = make_record(api, "nyc", "plane", {"tailnum": "N14228", "owner": ua["id"]})
    assert plane["natural_name"] == "N14228 (UA)"
    api.ok("PATCH", "/schemas/flight", json={"display_template": "{tailnum}/{flight}"})
    flight = make_record(api, "nyc", "flight", {"carrier": ua["id"], "tailnum": plane["id"], "flight": 1545})
    assert flight["natural_name"] == "N14228 (UA)/1545"
    api.ok("PATCH", f"/records/{ua['id']}", json={"data": {"carrier": "UX"}})
    assert api.ok("GET", f"/records/{plane['id']}")["natural_name"] == "N14228 (UX)"
    assert api.ok("GET", f"/records/{flight['id']}")["natural_name"] == "N14228 (UX)/1545"
    entries = api.ok("GET", "/audit", params={"entity_id": flight["id"], "action": "update"})["items"]
    assert [e["changes"][0]["after"] for e in entries] == ["N14228 (UX)/1545"]


def test_a_cycle_of_templates_ends(api):
    make_schema(api, "node", [{"name": "label", "type": "string"}, {"name": "next", "type": "reference",
                                                                    "restrictions": {"schema": "node"}}],
                display_template="{label}>{next}")
    make_collection(api, "graph", ["node"])
    a = make_record(api, "graph", "node", {"label": "a"})
    b = make_record(api, "graph", "node", {"label": "b", "next": a["id"]})
    api.ok("PATCH", f"/records/{a['id']}", json={"data": {"next": b["id"]}})
    assert api.ok("GET", f"/records/{a['id']}")["natural_name"] == "a>b>a>"
    assert api.ok("GET", f"/records/{b['id']}")["natural_name"] == "b>a>b>a>"  # followed once, then stopped


def test_a_deleted_referrer_keeps_its_name_and_a_cleared_reference_renders_empty(api):
    ua = _airline(api)
    live = make_record(api, "nyc", "flight", {"carrier": ua["id"], "flight": 1})
    gone = make_record(api, "nyc", "flight", {"carrier": ua["id"], "flight": 2})
    api.ok("DELETE", f"/records/{gone['id']}", 204)
    api.ok("PATCH", f"/records/{ua['id']}", json={"data": {"carrier": "UX"}})
    assert api.ok("GET", f"/records/{live['id']}")["natural_name"] == "UX1---"
    assert api.ok("GET", f"/records/{gone['id']}")["natural_name"] == "UA2---"
    api.ok("DELETE", f"/records/{ua['id']}", 204, params={"references": "clear"})
    assert api.ok("GET", f"/records/{live['id']}")["natural_name"] == "1---"
