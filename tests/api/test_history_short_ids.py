"""History entry and batch ids are taken as every id is (issue 36 item 5; the CLI's top-level
``--help``): whole, by their last 8 characters (what ``--table`` shows) or by a unique prefix;
a prefix several share is a 422 saying how to pick one, an unknown one a 404."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def _entries(api: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    make_schema(api, "plot", [{"name": "code", "type": "string"}])
    make_collection(api, "site", ["plot"])
    rec = make_record(api, "site", "plot", {"code": "A"})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"code": "B"}})
    return rec, api.ok("GET", "/audit", params={"entity_id": rec["id"], "sort": "timestamp:asc"})["items"]


def test_an_entry_is_found_by_its_tail_and_by_a_unique_prefix(api: Any) -> None:
    rec, (_, updated) = _entries(api)
    for given in (updated["id"], updated["id"][-8:], updated["id"][-8:].lower(), updated["id"][:-2]):
        assert api.ok("GET", f"/audit/{given}")["id"] == updated["id"], given
    plan = api.ok("GET", f"/audit/{updated['id'][-8:]}/revert")
    assert plan["audit_id"] == updated["id"], plan
    done = api.ok("POST", f"/audit/{updated['id'][-8:]}/revert", json={})
    assert done["entity_id"] == rec["id"] and done["applied"]
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["code"] == "A"


def test_a_shared_prefix_is_a_422_and_an_unknown_id_a_404(api: Any) -> None:
    _, (created, updated) = _entries(api)
    shared = next(n for n in range(26, 3, -1) if created["id"][:n] == updated["id"][:n])
    r = api.get(f"/audit/{created['id'][:shared]}")
    assert r.status_code == 422 and "ambiguous" in r.json()["detail"] and "last 8 characters" in r.json()["detail"]
    assert api.get("/audit/ZZZZZZZZ").status_code == 404
    assert api.get("/audit/ZZZZZZZZ/revert").status_code == 404
    assert api.get("/audit/ZZ").status_code == 404


def test_a_batch_is_found_by_its_tail(api: Any) -> None:
    _entries(api)
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "by hand"})
    tail = batch["id"][-8:]
    assert api.ok("GET", f"/audit/batches/{tail}")["id"] == batch["id"]
    assert api.ok("GET", f"/audit/batches/{tail}/entries")["total"] == 0
    assert api.get("/audit/batches/ZZZZZZZZ").status_code == 404
