"""Deletes that know who points at them (issue 35 item 4, docs/deletes.md): a delete of records
live records reference is refused with 409 counting the referrers per schema unless the request
says ``references=keep`` (or ``force``) or ``references=clear``; a restore puts cleared
references back. Every test runs on SQLite and PostgreSQL."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def fleet(api: Any) -> dict[str, Any]:
    """Planes (one naming its sister plane), flights referring to them by ``tailnum`` (a
    reference) and ``spares`` (a reference_list), a maintenance log referring by ``plane``."""
    make_schema(api, "plane", [{"name": "tailnum", "type": "string"}, {"name": "manufacturer", "type": "string"},
                               {"name": "sister", "type": "reference", "restrictions": {"schema": "plane"}}],
                display_template="{tailnum}")
    make_schema(api, "flight", [{"name": "number", "type": "integer"},
                                {"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}},
                                {"name": "spares", "type": "reference_list", "restrictions": {"schema": "plane"}}],
                display_template="F{number}")
    make_schema(api, "log", [{"name": "note", "type": "string"},
                             {"name": "plane", "type": "reference", "restrictions": {"schema": "plane"}}])
    make_collection(api, "nyc", ["plane", "flight", "log"])
    p1 = make_record(api, "nyc", "plane", {"tailnum": "N14228", "manufacturer": "BOEING"})
    p2 = make_record(api, "nyc", "plane", {"tailnum": "N24211", "manufacturer": "AIRBUS"})
    f1 = make_record(api, "nyc", "flight", {"number": 1545, "tailnum": p1["id"]})
    f2 = make_record(api, "nyc", "flight", {"number": 1714, "tailnum": p2["id"], "spares": [p1["id"], p2["id"]]})
    log = make_record(api, "nyc", "log", {"note": "checked", "plane": p1["id"]})
    return {"p1": p1, "p2": p2, "f1": f1, "f2": f2, "log": log}


def data(api: Any, rec: dict[str, Any]) -> dict[str, Any]:
    return api.ok("GET", f"/records/{rec['id']}")["data"]  # type: ignore[no-any-return]


def live(api: Any, rec: dict[str, Any]) -> bool:
    return api.ok("GET", f"/records/{rec['id']}")["deleted_at"] is None


def test_a_referenced_record_is_not_deleted_without_a_choice_and_the_409_counts_referrers_per_schema(api):
    f = fleet(api)
    r = api.delete(f"/records/{f['p1']['id']}")
    assert r.status_code == 409, r.text
    body = r.json()
    assert body["detail"].startswith("3 live record(s) reference this 'plane' record 'N14228' (2 flight, 1 log)")
    assert "references=clear" in body["detail"] and "force=true" in body["detail"]
    assert [(e["loc"], e["type"], e["ctx"]) for e in body["errors"]] == [
        (["query", "references"], "referenced", {"schema_name": "flight", "records": 2}),
        (["query", "references"], "referenced", {"schema_name": "log", "records": 1})]
    assert live(api, f["p1"])  # nothing happened
    # GET /records/{id}/referrers lists the same records the 409 counts
    assert {x["id"] for x in api.ok("GET", f"/records/{f['p1']['id']}/referrers")} == \
        {f["f1"]["id"], f["f2"]["id"], f["log"]["id"]}
    # a deleted referrer no longer counts
    api.ok("DELETE", f"/records/{f['log']['id']}", 204)
    again = api.delete(f"/records/{f['p1']['id']}").json()
    assert [e["ctx"] for e in again["errors"]] == [{"schema_name": "flight", "records": 2}]
    # a value outside the choices is refused in the envelope
    bad = api.delete(f"/records/{f['p1']['id']}", params={"references": "drop"})
    assert bad.status_code == 422 and bad.json()["detail"]


def test_force_or_keep_leaves_the_references_pointing_at_the_deleted_record_until_it_returns(api):
    f = fleet(api)
    api.ok("DELETE", f"/records/{f['p1']['id']}", 204, params={"force": "true"})
    assert data(api, f["f1"])["tailnum"] == f["p1"]["id"]
    assert data(api, f["f2"])["spares"] == [f["p1"]["id"], f["p2"]["id"]]
    # the referrer still takes edits of its other values (the kept reference is not checked again)
    api.ok("PATCH", f"/records/{f['f1']['id']}", json={"data": {"number": 1546}})
    # but a new reference to the deleted record is refused
    assert api.patch(f"/records/{f['log']['id']}", json={"data": {"plane": None}}).status_code == 200
    assert api.patch(f"/records/{f['log']['id']}", json={"data": {"plane": f["p1"]["id"]}}).status_code == 422
    plan = api.ok("GET", f"/records/{f['p1']['id']}/restore-plan")
    assert plan["referrers"] == {"flight": 2} and plan["cleared_references"] == 0
    api.ok("POST", f"/records/{f['p1']['id']}/restore")
    assert data(api, f["f1"])["tailnum"] == f["p1"]["id"] and live(api, f["p1"])
    # references=keep does the same without force (which would also take live children along)
    api.ok("DELETE", f"/records/{f['p2']['id']}", 204, params={"references": "keep"})
    assert data(api, f["f2"])["tailnum"] == f["p2"]["id"]


def test_clear_takes_the_references_out_in_the_delete_batch_and_the_restore_puts_them_back(api):
    f = fleet(api)
    api.ok("DELETE", f"/records/{f['p1']['id']}", 204, params={"references": "clear"})
    assert not live(api, f["p1"])
    assert data(api, f["f1"]).get("tailnum") is None
    assert data(api, f["f2"])["spares"] == [f["p2"]["id"]] and data(api, f["f2"])["tailnum"] == f["p2"]["id"]
    assert data(api, f["log"]).get("plane") is None
    deleted = api.ok("GET", f"/records/{f['p1']['id']}/audit")["items"][0]
    batch = deleted["batch_id"]
    assert deleted["action"] == "delete" and batch
    entries = api.ok("GET", f"/audit/batches/{batch}/entries", params={"limit": 50})["items"]
    assert sorted((e["action"], e["entity_id"]) for e in entries) == sorted(
        [("delete", f["p1"]["id"]), ("update", f["f1"]["id"]), ("update", f["f2"]["id"]),
         ("update", f["log"]["id"])])
    update = next(e for e in entries if e["entity_id"] == f["f1"]["id"])
    assert [(c["label"], c["before"], c["after"]) for c in update["changes"]] == \
        [("tailnum", f["p1"]["id"], None)]
    plan = api.ok("GET", f"/records/{f['p1']['id']}/restore-plan")
    assert plan["cleared_references"] == 3 and plan["referrers"] == {}
    # a value set since is left alone by the restore
    api.ok("PATCH", f"/records/{f['log']['id']}", json={"data": {"plane": f["p2"]["id"]}})
    result = api.ok("POST", "/audit/restore-all", json={"batch": batch})  # the batch page's restore
    assert result["records"] == 1
    assert data(api, f["f1"])["tailnum"] == f["p1"]["id"]
    assert data(api, f["f2"])["spares"] == [f["p2"]["id"], f["p1"]["id"]]
    assert data(api, f["log"])["plane"] == f["p2"]["id"]
    back = api.ok("GET", f"/records/{f['f1']['id']}/audit")["items"][0]
    assert back["action"] == "update" and back["batch_id"] and back["batch_id"] != batch


def test_a_single_restore_puts_cleared_references_back_too(api):
    f = fleet(api)
    api.ok("DELETE", f"/records/{f['p1']['id']}", 204, params={"references": "clear"})
    api.ok("POST", f"/records/{f['p1']['id']}/restore")
    assert data(api, f["f1"])["tailnum"] == f["p1"]["id"] and data(api, f["log"])["plane"] == f["p1"]["id"]
    assert api.ok("GET", f"/records/{f['p1']['id']}/restore-plan")["blocked"] == "the record is not deleted"


def test_clear_is_refused_when_a_referring_field_is_required(api):
    f = fleet(api)
    api.ok("PATCH", "/schemas/log/fields/plane", json={"required": True})
    r = api.delete(f"/records/{f['p1']['id']}", params={"references": "clear"})
    assert r.status_code == 409 and "log.plane" in r.json()["detail"], r.text
    assert r.json()["errors"][0]["ctx"] == {"schema_name": "log", "field": "plane", "records": 1}
    assert live(api, f["p1"]) and data(api, f["f1"])["tailnum"] == f["p1"]["id"]  # all or nothing


def test_referrers_inside_the_deleted_set_and_self_references_do_not_count(api):
    f = fleet(api)
    api.ok("PATCH", f"/records/{f['p2']['id']}", json={"data": {"sister": f["p2"]["id"]}})  # itself
    api.ok("DELETE", f"/records/{f['log']['id']}", 204)
    api.ok("DELETE", f"/records/{f['f1']['id']}", 204)
    # p2 is referenced by itself and by f2; deleting both together needs no choice
    out = api.ok("POST", "/records/bulk-delete", json={"ids": [f["p2"]["id"], f["f2"]["id"]]})
    assert out["deleted"] == 2
    # p1: f2 (deleted) still names it in spares; nothing live refers to it now
    api.ok("DELETE", f"/records/{f['p1']['id']}", 204)


def test_bulk_delete_follows_the_same_rule_with_the_choice_in_the_body(api):
    f = fleet(api)
    r = api.post("/records/bulk-delete", json={"ids": [f["p1"]["id"], f["f1"]["id"]]})
    assert r.status_code == 409, r.text
    assert r.json()["detail"].startswith("2 live record(s) reference 1 of the 2 records being deleted")
    assert [(e["loc"], e["ctx"]) for e in r.json()["errors"]] == [
        (["body", "references"], {"schema_name": "flight", "records": 1}),
        (["body", "references"], {"schema_name": "log", "records": 1})]
    out = api.ok("POST", "/records/bulk-delete", json={"ids": [f["p1"]["id"], f["f1"]["id"]], "references": "clear"})
    assert out["deleted"] == 2 and out["batch_id"]
    assert data(api, f["f2"])["spares"] == [f["p2"]["id"]]
    assert data(api, f["f1"])["tailnum"] == f["p1"]["id"]  # deleted with it: left as it was
    api.ok("POST", "/audit/restore-all", json={"batch": out["batch_id"]})
    assert data(api, f["f2"])["spares"] == [f["p2"]["id"], f["p1"]["id"]] and live(api, f["f1"])


def test_delete_by_query_follows_the_same_rule(api):
    f = fleet(api)
    r = api.delete("/collections/nyc/records", params={"schema": "plane"})
    assert r.status_code == 409
    assert [e["ctx"] for e in r.json()["errors"]] == [{"schema_name": "flight", "records": 2},
                                                      {"schema_name": "log", "records": 1}]
    forced = api.ok("DELETE", "/collections/nyc/records", params={"schema": "plane", "force": "true"})
    assert forced["deleted"] == 2 and data(api, f["f2"])["spares"] == [f["p1"]["id"], f["p2"]["id"]]
    api.ok("POST", "/audit/restore-all", json={"batch": forced["batch_id"]})
    cleared = api.ok("DELETE", "/collections/nyc/records", params={"schema": "plane", "references": "clear"})
    assert cleared["deleted"] == 2
    assert data(api, f["f2"]).get("spares") is None and data(api, f["f2"]).get("tailnum") is None


def test_children_still_need_force_when_references_are_cleared(api):
    make_schema(api, "site", [{"name": "code", "type": "string"}], display_template="{code}")
    make_schema(api, "well", [{"name": "depth", "type": "float"}], parent="site")
    make_schema(api, "visit", [{"name": "well", "type": "reference", "restrictions": {"schema": "well"}}])
    make_collection(api, "field", ["site", "well", "visit"])
    site = make_record(api, "field", "site", {"code": "A"})
    well = make_record(api, "field", "well", {"depth": 3.0}, parent=site["id"])
    visit = make_record(api, "field", "visit", {"well": well["id"]})
    assert "live children" in api.delete(f"/records/{site['id']}", params={"references": "clear"}).json()["detail"]
    # force takes the child along; its referrer outside needs the choice too, force keeps it
    api.ok("DELETE", f"/records/{site['id']}", 204, params={"force": "true"})
    assert data(api, visit)["well"] == well["id"]
    api.ok("POST", f"/records/{site['id']}/restore")
    api.ok("DELETE", f"/records/{site['id']}", 204, params={"force": "true", "references": "clear"})
    assert data(api, visit).get("well") is None
    api.ok("POST", f"/records/{site['id']}/restore")
    assert data(api, visit)["well"] == well["id"]


def test_a_revert_of_the_create_names_only_force_the_one_choice_it_offers(api):
    f = fleet(api)
    create = api.ok("GET", f"/records/{f['p1']['id']}/audit")["items"][-1]
    refused = api.post(f"/audit/{create['id']}/revert", json={})
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert "force=true" in body["detail"] and "references=" not in body["detail"]
    assert {tuple(e["loc"]) for e in body["errors"]} == {("body", "force")}
    assert live(api, f["p1"])
    api.ok("POST", f"/audit/{create['id']}/revert", json={"force": True})
    assert not live(api, f["p1"]) and data(api, f["f1"])["tailnum"] == f["p1"]["id"]
