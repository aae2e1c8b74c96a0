"""``GET /audit/events`` without a filter reads the batches' kept figures (migration 0010,
``domain.history.batch_figures``) instead of grouping every entry: its pages must equal what the
grouping gives. A filter that every entry matches makes the server group (the path filters
take), so the two answers are compared over a history made of every kind of change: lone
edits, an import, a client batch spread over requests, a bulk delete, a restore-all, workflow
runs; in both orders, across pages; and again after the figures are rebuilt by the migration."""
from __future__ import annotations

import json
from typing import Any

from alembic import command

from benchbook.persistence.db import alembic_config
from tests.api.helpers import make_collection, make_record, make_schema

EVERY = json.dumps({"field": "action", "op": "in", "value": ["create", "update", "delete", "restore", "purge"]})
FLOW = ("name: mark\nrecord_schema: site\ntriggers:\n  manual: {}\nsteps:\n  - id: m\n    plugin: benchbook.set-fields\n"
        "    config:\n      fields:\n        note: \"{name}-marked\"\n")


def history(api: Any) -> None:
    make_schema(api, "site", [{"name": "name", "type": "string"}, {"name": "note", "type": "string"},
                              {"name": "depth", "type": "integer"}])
    make_collection(api, "lab", ["site"])
    lone = [make_record(api, "lab", "site", {"name": f"s{i}"}) for i in range(3)]
    api.ok("PATCH", f"/records/{lone[0]['id']}", json={"data": {"note": "edited"}})
    csv = "name,note\n" + "".join(f"imported{i},x\n" for i in range(40))
    imported = api.ok("POST", "/collections/lab/import", files={"file": ("sites.csv", csv.encode())}, data={"schema": "site"})
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "by hand"})
    for i in range(3):
        api.ok("POST", "/collections/lab/records", 201, json={"schema_name": "site", "data": {"name": f"h{i}"}},
               headers={"X-Service-Batch": batch["id"]})
    # rolled back inside the client batch (a dry run; a refused file): their savepoints take their entries with them
    dry = api.ok("POST", "/collections/lab/import", files={"file": ("more.csv", b"name\nd1\nd2\n")},
                 data={"schema": "site", "dry_run": "true"}, headers={"X-Service-Batch": batch["id"]})
    refused = api.post("/collections/lab/import", files={"file": ("bad.csv", b"name,depth\nx,1\ny,deep\n")}, data={"schema": "site"},
                       headers={"X-Service-Batch": batch["id"]})
    assert dry["created"] == 2 and refused.status_code == 422, refused.text
    ids = [r["id"] for r in api.ok("GET", "/collections/lab/records", params={"limit": 10, "sort": "name"})["items"]]
    api.ok("POST", "/records/bulk-delete", json={"ids": ids[:5]})
    api.ok("POST", "/audit/restore-all", json={"batch": None, "filter": None, "q": None})
    api.ok("POST", "/plugins/refresh")  # the built-ins, after the tables were emptied
    assert api.put("/workflows/mark", json={"content": FLOW}).status_code in (200, 201)  # the file outlives a test
    api.ok("POST", "/workflows/mark/run-many", json={"record_ids": ids[:4]})
    api.ok("POST", "/jobs/drain")
    assert imported["created"] == 40, imported


def same_pages(api: Any) -> int:
    """Compares the kept and the grouped answers page by page; returns the number of events."""
    total = 0
    for sort in (None, "timestamp:asc"):
        for offset, limit in ((0, 5), (3, 7), (0, 200)):
            params: dict[str, Any] = {"limit": limit, "offset": offset, **({"sort": sort} if sort else {})}
            kept = api.ok("GET", "/audit/events", params=params)
            grouped = api.ok("GET", "/audit/events", params={**params, "filter": EVERY})
            assert kept == grouped, (sort, offset, limit)
            total = kept["total"]
    return total


def test_the_kept_figures_page_like_the_grouping(api: Any) -> None:
    history(api)
    total = same_pages(api)
    events = api.ok("GET", "/audit/events", params={"limit": 200})["items"]
    assert total == len(events) >= 10
    kinds = {e["batch"]["kind"] for e in events if e["kind"] == "batch"}
    assert {"import", "delete", "restore", "workflow"} <= kinds
    imported = max((e for e in events if e["kind"] == "batch" and e["batch"]["kind"] == "import"), key=lambda e: e["count"])
    assert imported["count"] == 40 and imported["parts"] == [{"action": "create", "entity_type": "record", "count": 40}]
    by_hand = next(e for e in events if e["kind"] == "batch" and e["batch"]["label"] == "by hand")
    assert by_hand["count"] == 3  # the dry run and the refused import left nothing in it


def test_the_migration_rebuilds_the_figures(api: Any) -> None:
    history(api)
    before = api.ok("GET", "/audit/events", params={"limit": 200})
    config = alembic_config(api.project.database_url)
    command.downgrade(config, "0009_views")
    command.upgrade(config, "head")
    assert api.ok("GET", "/audit/events", params={"limit": 200}) == before
    same_pages(api)


def test_the_first_page_reads_two_indexes_and_sorts_nothing(api: Any) -> None:
    """On SQLite, each arm of the kept listing walks its own index newest first: no sort of the
    history, however long it is (the lone arm names its partial index, as ``events._kept_page``
    does: left to itself SQLite takes the batch_id index for ``IS NULL`` and sorts)."""
    import sqlite3

    import pytest

    if not api.project.database_url.startswith("sqlite"):
        pytest.skip("the plan checked is SQLite's")
    history(api)
    db = sqlite3.connect(api.project.database_url.removeprefix("sqlite:///"))
    try:
        plans = {arm: " ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN " + sql)) for arm, sql in {
            "batches": "SELECT id, entry_count, last_at FROM audit_batches WHERE entry_count > 0 "
                       "ORDER BY last_at DESC, id DESC LIMIT 25",
            "lone": "SELECT id, 1, timestamp FROM audit_entries INDEXED BY ix_audit_entries_lone WHERE batch_id IS NULL "
                    "ORDER BY timestamp DESC, id DESC LIMIT 25"}.items()}
    finally:
        db.close()
    assert "ix_audit_batches_last_at" in plans["batches"] and "TEMP B-TREE" not in plans["batches"], plans
    assert "ix_audit_entries_lone" in plans["lone"] and "TEMP B-TREE" not in plans["lone"], plans
