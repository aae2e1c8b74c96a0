"""``GET /audit/events`` without a filter (kept figures, ``domain.history.batch_figures``) after
the write paths ``tests/api/test_events_listing.py`` does not take: purges (a record's, a
collection's), reverts (of an edit, of a bulk delete's entry, of a create; alone and inside a
client batch), an import undone, a refused change: after each, the kept pages equal the grouped
ones and ``total`` counts every batch holding entries and every lone entry."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema
from tests.api.test_events_listing import same_pages

BATCH = "X-Service-Batch"


def test_purges_reverts_and_an_undone_import_keep_the_count(api: Any) -> None:
    make_schema(api, "spot", [{"name": "name", "type": "string"}, {"name": "note", "type": "string"}])
    make_collection(api, "lab", ["spot"])
    make_collection(api, "scrap", ["spot"])
    steps = []
    recs = [make_record(api, "lab", "spot", {"name": f"r{i}"}) for i in range(6)]
    api.ok("PATCH", f"/records/{recs[0]['id']}", json={"data": {"note": "edited"}})
    edit = api.ok("GET", f"/records/{recs[0]['id']}/audit")["items"][0]
    steps.append(same_pages(api))
    api.ok("POST", f"/audit/{edit['id']}/revert", json={})  # a lone revert
    steps.append(same_pages(api))
    api.ok("POST", "/records/bulk-delete", json={"ids": [r["id"] for r in recs[1:4]]})
    deleted = api.ok("GET", f"/records/{recs[1]['id']}/audit")["items"][0]
    assert deleted["action"] == "delete" and deleted["batch_id"]
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "reverts"})
    api.ok("POST", f"/audit/{deleted['id']}/revert", json={}, headers={BATCH: batch["id"]})  # restores it, in the batch
    created = api.ok("GET", f"/records/{recs[4]['id']}/audit")["items"][-1]
    api.ok("POST", f"/audit/{created['id']}/revert", json={}, headers={BATCH: batch["id"]})  # deletes it, in the batch
    steps.append(same_pages(api))
    refused = api.post(f"/audit/{edit['id']}/revert", json={"force": False}, headers={BATCH: batch["id"]})
    assert refused.status_code in (200, 409, 422), refused.text
    steps.append(same_pages(api))
    api.ok("DELETE", f"/records/{recs[5]['id']}", 204)
    api.ok("DELETE", f"/records/{recs[5]['id']}/purge", 204)  # a purge batch of its own
    steps.append(same_pages(api))
    for i in range(3):
        make_record(api, "scrap", "spot", {"name": f"s{i}"})
    api.ok("DELETE", "/collections/scrap", 204)
    api.ok("DELETE", "/collections/scrap/purge", 204)
    steps.append(same_pages(api))
    imported = api.ok("POST", "/collections/lab/import", files={"file": ("more.csv", b"name\ni1\ni2\ni3\n")},
                      data={"schema": "spot"})
    assert imported["created"] == 3, imported
    steps.append(same_pages(api))
    api.ok("POST", f"/imports/{imported['batch_id']}/undo", json={})  # a delete batch "undo import …"
    steps.append(same_pages(api))
    assert steps == sorted(steps) and steps[-1] > steps[0], steps
    kinds = {e["batch"]["kind"] for e in api.ok("GET", "/audit/events", params={"limit": 200})["items"]
             if e["kind"] == "batch"}
    assert {"delete", "purge", "import"} <= kinds, kinds
