"""Recently deleted's records: ``GET /records/deleted`` lists the record deletions still in
effect, one per deleting operation, and ``POST /records/deleted/purge`` purges one whole
(issue 37 item 3). Each test runs on SQLite and on PostgreSQL (the ``api`` fixture)."""
from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from benchbook.domain.records import deleted as domain
from tests.api.helpers import make_collection, make_record, make_schema


def vials(api: Any, collection: str = "box", count: int = 3) -> list[dict[str, Any]]:
    """``count`` vials named V-1, V-2, … in ``collection`` (schema ``vial`` made once)."""
    if api.get("/schemas/vial").status_code == 404:
        make_schema(api, "vial", [{"name": "label", "type": "string"}], display_template="{label}")
    if api.get(f"/collections/{collection}").status_code == 404:
        make_collection(api, collection, ["vial"])
    return [make_record(api, collection, "vial", {"label": f"V-{i}"}) for i in range(1, count + 1)]


def deletions(api: Any, **params: Any) -> list[dict[str, Any]]:
    return api.ok("GET", "/records/deleted", params=params)["items"]


def bulk_delete(api: Any, records: list[dict[str, Any]]) -> str:
    return api.ok("POST", "/records/bulk-delete", json={"ids": [r["id"] for r in records]})["batch_id"]


def test_a_bulk_delete_is_one_line_naming_its_records_collection_and_batch(api):
    records = vials(api)
    batch = bulk_delete(api, records)
    page = api.ok("GET", "/records/deleted")
    assert page["total"] == 1 and page["offset"] == 0 and page["limit"] == 50
    [line] = page["items"]
    assert line["op"] == batch and line["batch_id"] == batch and line["record_id"] is None
    assert line["count"] == 3 and line["collections"] == ["box"] and line["schemas"] == ["vial"]
    assert [e["natural_name"] for e in line["examples"]] == ["V-1", "V-2", "V-3"]
    assert line["examples"][0] == {"id": records[0]["id"], "natural_name": "V-1", "schema_name": "vial",
                                   "collection": "box"}
    assert line["deleted_at"] == api.ok("GET", f"/records/{records[0]['id']}")["deleted_at"]


def test_restoring_some_lowers_the_count_and_restoring_all_removes_the_line(api):
    records = vials(api)
    batch = bulk_delete(api, records)
    api.ok("POST", f"/records/{records[0]['id']}/restore")
    [line] = deletions(api)
    assert line["count"] == 2 and [e["natural_name"] for e in line["examples"]] == ["V-2", "V-3"]
    assert line["record_id"] is None
    api.ok("POST", f"/records/{records[1]['id']}/restore")
    [line] = deletions(api)
    assert line["count"] == 1 and line["record_id"] == records[2]["id"] and line["batch_id"] == batch
    api.ok("POST", "/audit/restore-all", json={"batch": batch})
    assert deletions(api) == []
    assert api.ok("GET", "/records/deleted")["total"] == 0


def test_a_record_deleted_on_its_own_names_itself_and_has_no_batch(api):
    records = vials(api, count=2)
    api.ok("DELETE", f"/records/{records[1]['id']}", 204)
    [line] = deletions(api)
    assert line["count"] == 1 and line["record_id"] == records[1]["id"] and line["batch_id"] is None
    assert [e["natural_name"] for e in line["examples"]] == ["V-2"]
    api.ok("POST", f"/records/{line['record_id']}/restore")
    assert deletions(api) == []


def test_newest_first_paged_and_only_five_examples(api):
    first = vials(api, "box", count=7)
    bulk_delete(api, first)
    later = vials(api, "rack", count=1)
    api.ok("DELETE", f"/records/{later[0]['id']}", 204)
    lines = deletions(api)
    assert [line["collections"] for line in lines] == [["rack"], ["box"]]
    assert lines[1]["count"] == 7 and len(lines[1]["examples"]) == 5
    page = api.ok("GET", "/records/deleted", params={"limit": 1, "offset": 1})
    assert page["total"] == 2 and page["limit"] == 1 and [i["collections"] for i in page["items"]] == [["box"]]
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"limit": "many"}):
        r = api.get("/records/deleted", params=bad)
        assert r.status_code == 422 and r.json()["detail"] == "Request validation failed", bad


def test_records_of_a_deleted_collection_are_left_to_its_own_line(api):
    records = vials(api, "box", count=2)
    api.ok("DELETE", f"/records/{records[0]['id']}", 204)
    assert len(deletions(api)) == 1
    api.ok("DELETE", "/collections/box", 204)
    assert deletions(api) == []
    api.ok("POST", "/collections/box/restore")
    [line] = deletions(api)  # the record deleted on its own earlier is still deleted
    assert line["record_id"] == records[0]["id"]


def test_purging_a_bulk_deletion_purges_what_is_still_deleted_in_one_batch(api):
    records = vials(api)
    batch = bulk_delete(api, records)
    api.ok("POST", f"/records/{records[0]['id']}/restore")
    assert api.ok("POST", "/records/deleted/purge", json={"op": batch}) == {"purged": 2}
    assert deletions(api) == []
    assert api.get(f"/records/{records[1]['id']}").status_code == 404
    assert api.ok("GET", f"/records/{records[0]['id']}")["deleted_at"] is None  # restored before: stays
    events = api.ok("GET", "/audit/events", params={"limit": 1})["items"]
    assert events[0]["kind"] == "batch" and events[0]["batch"]["kind"] == "purge" and events[0]["count"] == 2
    # nothing left: 0, and the op in lower case names the same deletion
    assert api.ok("POST", "/records/deleted/purge", json={"op": batch.lower()}) == {"purged": 0}


def test_purging_a_deletion_takes_the_records_below_along(api):
    make_schema(api, "rack", [{"name": "label", "type": "string"}], display_template="{label}")
    make_schema(api, "tube", [{"name": "label", "type": "string"}], parent="rack", display_template="{label}")
    make_collection(api, "lab", ["rack", "tube"])
    rack = make_record(api, "lab", "rack", {"label": "R-1"})
    tubes = [make_record(api, "lab", "tube", {"label": f"T-{i}"}, parent=rack["id"]) for i in (1, 2)]
    api.ok("DELETE", f"/records/{tubes[0]['id']}", 204)  # on its own, earlier
    api.ok("DELETE", f"/records/{rack['id']}", 204, params={"force": "true"})
    lines = deletions(api)
    assert [line["count"] for line in lines] == [2, 1]
    assert [e["natural_name"] for e in lines[0]["examples"]] == ["R-1", "T-2"]
    assert lines[0]["schemas"] == ["rack", "tube"] and lines[0]["batch_id"] == lines[0]["op"]
    # as DELETE /records/{id}/purge does: everything below the rack goes, T-1 included
    assert api.ok("POST", "/records/deleted/purge", json={"op": lines[0]["op"]}) == {"purged": 3}
    assert deletions(api) == []


def test_purge_refuses_an_unknown_op_a_bad_body_and_more_than_the_maximum(api, monkeypatch):
    r = api.post("/records/deleted/purge", json={"op": "01NOSUCHOPERATION000000000"})
    assert r.status_code == 409 and r.json()["errors"][0]["loc"] == ["body", "op"]
    for body in ({}, {"op": ""}, {"op": 5}, {"op": "x", "more": 1}):
        r = api.post("/records/deleted/purge", json=body)
        assert r.status_code == 422 and r.json()["detail"] == "Request validation failed", body
    records = vials(api)
    batch = bulk_delete(api, records)
    monkeypatch.setattr(domain, "PURGE_MAX", 2)
    r = api.post("/records/deleted/purge", json={"op": batch})
    assert r.status_code == 422 and "at most 2" in r.json()["detail"]
    assert r.json()["errors"][0]["ctx"] == {"max": 2, "count": 3}
    assert deletions(api)[0]["count"] == 3  # nothing purged


def test_the_list_reads_the_delete_op_index_on_sqlite(api):
    engine = api.app.services.db.engine
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite's query plan")
    bulk_delete(api, vials(api))
    grouping: list[str] = []

    def keep(conn, cursor, statement, params, context, executemany):
        if "GROUP BY records.delete_op" in statement and "LIMIT" in statement:
            grouping.append((statement, params))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        deletions(api)
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    statement, params = grouping[0]
    with engine.connect() as conn:
        plan = " | ".join(str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params))
    assert "ix_records_delete_op" in plan and "SCAN records" not in plan.replace("USING INDEX", "")
