"""Records: create, get (ancestors, references), update, delete, list, bulk delete, export."""
from __future__ import annotations

import csv
import io

from tests.api.helpers import make_collection, make_record, make_schema, study_tree


def test_create_and_get_nested_record(api):
    ids = study_tree(api)
    sample = ids["sample"]
    assert sample["natural_name"] == "North-2024-05"
    assert sample["data"]["depth_m"] == 2.5 and sample["collection"] == "lab"
    fetched = api.ok("GET", f"/records/{sample['id']}")
    assert [a["id"] for a in fetched["ancestors"]] == [ids["study"]["id"]]
    assert fetched["ancestors"][0]["natural_name"] == "Lake survey"
    assert fetched["deleted_above"] == [] and fetched["child_counts"] == {"measurement": 0}
    by_prefix = api.ok("GET", f"/records/{sample['id'][:20]}")
    assert by_prefix["id"] == sample["id"]


def test_create_record_errors(api):
    ids = study_tree(api)
    # 409: the body names nothing or the schema tree refuses it; 422: `data` breaks the record's schema
    bad = [
        ({"schema_name": "ghost", "data": {}}, "schema_name", 409),
        ({"schema_name": "sample", "data": {"site": "x"}}, "parent_record_id", 409),  # parent needed
        ({"schema_name": "sample", "parent_record_id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "data": {"site": "x"}},
         "parent_record_id", 409),
        ({"schema_name": "measurement", "parent_record_id": ids["study"]["id"], "data": {}}, "parent_record_id", 409),
        ({"schema_name": "study", "parent_record_id": ids["study"]["id"], "data": {"title": "t"}},
         "parent_record_id", 409),
        ({"schema_name": "sample", "parent_record_id": ids["study"]["id"], "data": {"depth_m": -1}}, "data", 422),
        ({"schema_name": "sample", "parent_record_id": ids["study"]["id"], "data": {"site": 5, "count": 1.5}},
         "data", 422),
        ({"schema_name": "sample", "parent_record_id": ids["study"]["id"], "data": {"site": "s", "nope": 1}},
         "data", 422),
    ]
    for body, loc, status in bad:
        r = api.post("/collections/lab/records", json=body)
        assert r.status_code == status, (body, r.text)
        assert r.json()["errors"][0]["loc"][1] == loc, (body, r.json())
    r = api.post("/collections/lab/records",
                 json={"schema_name": "sample", "parent_record_id": ids["study"]["id"], "data": {"site": 5,
                                                                                                 "count": 1.5}})
    assert {tuple(e["loc"]) for e in r.json()["errors"]} >= {("body", "data", "site"), ("body", "data", "count")}
    assert api.post("/collections/nowhere/records", json={"schema_name": "study"}).status_code == 404
    r = api.post("/collections/lab/records", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"] == "Request validation failed"
    r = api.post("/collections/lab/records", json={"data": {}})
    assert r.status_code == 422 and r.json()["errors"][0]["msg"]


def test_value_coercion_and_timezones(api):
    make_schema(api, "obs", [{"name": "at", "type": "datetime"}, {"name": "n", "type": "integer"},
                             {"name": "on", "type": "date"}, {"name": "ok", "type": "boolean"}])
    make_collection(api, "utc", ["obs"])
    make_collection(api, "tokyo", ["obs"], timezone="Asia/Tokyo")
    a = make_record(api, "utc", "obs", {"at": "2024-01-01T09:00:00", "n": "12", "on": "2024-02-29", "ok": "yes"})
    assert a["data"]["n"] == 12 and a["data"]["ok"] is True and a["data"]["on"] == "2024-02-29"
    assert a["data"]["at"].startswith("2024-01-01T09:00:00") and a["data"]["at"].endswith("+00:00")
    b = make_record(api, "tokyo", "obs", {"at": "2024-01-01T09:00:00"})
    assert b["data"]["at"].startswith("2024-01-01T09:00:00") and b["data"]["at"].endswith("+09:00")
    entry = api.ok("GET", f"/records/{b['id']}/audit")["items"][0]
    assert entry["new_data"]["data"] and "2024-01-01T00:00:00" in str(entry["new_data"]["data"])


def test_references_scope(api):
    make_schema(api, "species", [{"name": "name", "type": "string"}])
    make_schema(api, "obs", [{"name": "of", "type": "reference", "restrictions": {"schema": "species"}},
                             {"name": "also", "type": "reference_list", "restrictions": {"schema": "species"}}])
    make_collection(api, "local", ["species", "obs"])
    make_collection(api, "taxa", ["species"], scope="global")
    make_collection(api, "private", ["species"])
    here = make_record(api, "local", "species", {"name": "wolf"})
    glob = make_record(api, "taxa", "species", {"name": "fox"})
    priv = make_record(api, "private", "species", {"name": "lynx"})
    rec = make_record(api, "local", "obs", {"of": here["id"], "also": [glob["id"]]})
    assert rec["reference_labels"] == {here["id"]: "wolf", glob["id"]: "fox"}
    assert rec["reference_collections"] == {glob["id"]: "taxa"}
    r = api.post("/collections/local/records", json={"schema_name": "obs", "data": {"of": priv["id"]}})
    assert r.status_code == 422 and "another collection" in r.json()["detail"]
    obs = make_record(api, "local", "obs", {})
    r = api.post("/collections/local/records", json={"schema_name": "obs", "data": {"of": obs["id"]}})
    assert r.status_code == 422  # wrong target schema
    picker = api.ok("GET", "/records", params={"reachable_from": "local", "schema": "species"})
    assert {p["id"] for p in picker} == {here["id"], glob["id"]}


def test_update_record(api):
    ids = study_tree(api)
    sid = ids["sample"]["id"]
    out = api.ok("PATCH", f"/records/{sid}", json={"data": {"depth_m": None, "count": 3, "site": "South"}})
    assert "depth_m" not in out["data"] and out["data"]["count"] == 3 and out["natural_name"] == "South-2024-05"
    entry = api.ok("GET", f"/records/{sid}/audit")["items"][0]
    assert entry["action"] == "update"
    assert [c["label"] for c in entry["changes"]] == ["site", "depth_m", "count"]
    assert entry["old_data"]["id"] == sid and set(entry["old_data"]["data"]) == {c["field"] for c in entry["changes"]}
    other = make_record(api, "lab", "study", {"title": "Second"})
    moved = api.ok("PATCH", f"/records/{sid}", json={"parent_record_id": other["id"]})
    assert moved["parent_record_id"] == other["id"]
    assert api.patch(f"/records/{sid}", json={"parent_record_id": None}).status_code == 409  # a sample needs one
    assert api.patch(f"/records/{sid}", json={"data": {"site": None}}).status_code == 422  # required
    assert api.patch("/records/01ZZZZZZZZZZZZZZZZZZZZZZZZ", json={"data": {}}).status_code == 404


def test_delete_record_with_children(api):
    ids = study_tree(api)
    r = api.delete(f"/records/{ids['study']['id']}")
    assert r.status_code == 409 and "force" in r.json()["detail"]
    api.ok("DELETE", f"/records/{ids['study']['id']}", 204, params={"force": "true"})
    sample = api.ok("GET", f"/records/{ids['sample']['id']}")
    assert sample["deleted_at"] is not None and sample["deleted_above"] is None
    assert api.ok("GET", "/collections/lab")["record_count"] == 0


def test_list_records_pagination_and_filters(api):
    ids = study_tree(api)
    for i in range(5):
        make_record(api, "lab", "measurement", {"value": float(i)}, parent=ids["sample"]["id"])
    page = api.ok("GET", "/collections/lab/records", params={"limit": 2, "offset": 1, "schema": "measurement"})
    assert page["total"] == 5 and len(page["items"]) == 2 and page["limit"] == 2 and page["offset"] == 1
    kids = api.ok("GET", "/collections/lab/records", params={"parent_record_id": ids["study"]["id"],
                                                             "child_counts": "true"})
    assert [k["id"] for k in kids["items"]] == [ids["sample"]["id"]]
    assert kids["items"][0]["child_counts"] == {"measurement": 5}
    desc = api.ok("GET", "/collections/lab/records", params={"schema": "measurement", "sort": "value:desc"})
    assert [i["data"]["value"] for i in desc["items"]] == [4.0, 3.0, 2.0, 1.0, 0.0]
    where = api.ok("GET", "/collections/lab/records", params={"schema": "measurement", "where": "value=3"})
    assert where["total"] == 1
    within = api.ok("GET", "/collections/lab/records", params={"schema": "measurement",
                                                               "within": ids["study"]["id"]})
    assert within["total"] == 5
    assert api.get("/collections/lab/records", params={"within": ids["study"]["id"]}).status_code == 422
    assert api.get("/collections/lab/records", params={"sort": "nope"}).status_code == 404
    assert api.get("/collections/lab/records", params={"limit": -1}).status_code == 422
    found = api.ok("GET", "/collections/lab/records", params={"search": "north"})
    assert [i["id"] for i in found["items"]] == [ids["sample"]["id"]]


def test_bulk_delete_and_delete_by_query(api):
    ids = study_tree(api)
    ms = [make_record(api, "lab", "measurement", {"value": float(i)}, parent=ids["sample"]["id"]) for i in range(4)]
    out = api.ok("POST", "/records/bulk-delete", json={"ids": [m["id"] for m in ms[:2]]})
    assert out["deleted"] == 2 and out["batch_id"]
    assert api.post("/records/bulk-delete", json={"ids": []}).status_code == 422
    assert api.post("/records/bulk-delete", json={"ids": [ms[0]["id"]]}).status_code == 409  # gone already
    r = api.delete("/collections/lab/records", params={"schema": "sample"})
    assert r.status_code == 409
    out = api.ok("DELETE", "/collections/lab/records", params={"schema": "measurement"})
    assert out["deleted"] == 2
    out = api.ok("DELETE", "/collections/lab/records", params={"force": "true"})
    assert out["deleted"] == 2 and api.ok("GET", "/collections/lab")["record_count"] == 0


def test_export_csv(api):
    ids = study_tree(api)
    api.ok("PATCH", f"/records/{ids['sample']['id']}", json={"data": {"tags": ["a", "b"]}})
    r = api.get("/collections/lab/export.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert list(rows[0])[:4] == ["id", "schema_name", "parent_record_id", "natural_name"]
    sample = next(row for row in rows if row["schema_name"] == "sample")
    assert sample["parent_record_id"] == ids["study"]["id"] and sample["tags"] == "a, b"
    assert api.get("/collections/ghost/export.csv").status_code == 404


def test_record_audit_trail(api):
    ids = study_tree(api)
    sid = ids["sample"]["id"]
    api.ok("PATCH", f"/records/{sid}", json={"data": {"count": 1}})
    page = api.ok("GET", f"/records/{sid}/audit")
    assert [e["action"] for e in page["items"]] == ["update", "create"]
    create = page["items"][1]
    assert create["old_data"] is None and create["new_data"]["id"] == sid and create["actor"]
    assert create["now"]["state"] == "edited"
    assert api.ok("GET", f"/audit/{create['id']}")["id"] == create["id"]
    assert api.get("/audit/01ZZZZZZZZZZZZZZZZZZZZZZZZ").status_code == 404
    assert api.ok("GET", "/audit", params={"entity_id": sid, "sort": "timestamp:asc"})["items"][0]["action"] == "create"
    assert api.get("/audit", params={"sort": "bogus"}).status_code == 422
    assert api.ok("GET", "/audit", params={"since": "2999-01-01T00:00:00"})["total"] == 0
    # in year 10000 in UTC, which Python's datetime cannot hold: later than every entry
    assert api.ok("GET", "/audit", params={"since": "9999-12-31T23:00:00-05:00"})["total"] == 0
    assert api.get("/audit", params={"since": "2023-02-29"}).status_code == 422  # no such day


def test_full_text_search_follows_every_write(api):
    ids = study_tree(api)
    sid = ids["sample"]["id"]
    found = lambda q: [i["id"] for i in api.ok("GET", "/collections/lab/records", params={"search": q})["items"]]
    assert found("north") == [sid] and found("NOR") == [sid]
    assert found("lake survey") == [ids["study"]["id"]]  # natural name and values, all words
    api.ok("PATCH", f"/records/{sid}", json={"data": {"site": "Zanzibar"}})
    assert found("north") == [] and found("zanzib") == [sid]
    api.ok("DELETE", f"/records/{sid}", 204)
    assert found("zanzibar") == []
    api.ok("POST", f"/records/{sid}/restore")
    assert found("zanzibar") == [sid]
    api.ok("DELETE", f"/records/{sid}", 204)
    api.ok("DELETE", f"/records/{sid}/purge", 204)
    assert found("zanzibar") == []
    assert found("?!") != []  # no words: no search condition
    assert [r["id"] for r in api.ok("GET", "/records", params={"search": "lake"})] == [ids["study"]["id"]]


def test_derived_columns_inherited_and_joined(api):
    make_schema(api, "species", [{"name": "latin", "type": "string"}])
    make_schema(api, "site", [{"name": "region", "type": "string"}, {"name": "founded", "type": "date"}])
    make_schema(api, "obs", [{"name": "of", "type": "reference", "restrictions": {"schema": "species"}},
                             {"name": "also", "type": "reference_list", "restrictions": {"schema": "species"}},
                             {"name": "region", "type": "string"}], parent="site")
    make_collection(api, "c", ["species", "site", "obs"])
    fox = make_record(api, "c", "species", {"latin": "Vulpes vulpes"})
    owl = make_record(api, "c", "species", {"latin": "Strix aluco"})
    site = make_record(api, "c", "site", {"region": "North", "founded": "1999-01-02"})
    make_record(api, "c", "obs", {"of": fox["id"], "also": [owl["id"], fox["id"]], "region": "own"},
                parent=site["id"])
    page = api.ok("GET", "/collections/c/records", params={
        "schema": "obs", "columns": ["founded", "region", "of.latin", "also.latin", "of.natural_name"]})
    derived = page["items"][0]["derived"]
    assert derived == {"founded": "1999-01-02", "of.latin": "Vulpes vulpes",
                       "also.latin": ["Strix aluco", "Vulpes vulpes"], "of.natural_name": "Vulpes vulpes"}
    r = api.get("/collections/c/records", params={"schema": "obs", "columns": "nope.x"})
    assert r.status_code == 404 and "nope.x" in r.json()["detail"]
    assert api.ok("GET", "/collections/c/records", params={"schema": "obs"})["items"][0]["derived"] is None
