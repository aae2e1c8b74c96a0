"""A push's run of creates goes in together through the bulk path and keeps every rule of an
entry pushed alone: each entry as the device made it (id, actor, time, batch, the device's
stamp), a refusal undoing that entry alone with its row, a resend changing nothing twice, no
workflow started (issue 34: push at >= 0.5x of creates made at the authority)."""
from __future__ import annotations

import pytest
import yaml
from sqlalchemy import event, text

from benchbook.domain.errors import BadGateway
from benchbook.domain.sync import conflicts, creates
from benchbook.persistence.db import open_database
from benchbook.remote import syncing
from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_record, make_schema
from tests.runner.automation_helpers import STATS
from tests.sync.test_sync_crash import LoseOneReply


def _import(side, codes):
    rows = "code,notes\n" + "".join(f"{c},note {c}\n" for c in codes)
    out = side.ok("POST", "/collections/lake/import", files={"file": ("k.csv", rows.encode())},
                  data={"schema": "sample"})
    assert out["created"] == len(codes), out


def _entries(side, **params):
    return {e["entity_id"]: e for e in side.ok("GET", "/audit", params={"limit": 500, "entity_type": "record",
                                                                      "action": "create", **params})["items"]}


@pytest.fixture
def runs(monkeypatch):
    """Each run the push gave the bulk path: its size and whether it went in."""
    seen: list[tuple[int, bool]] = []
    real = creates.bulk_create_records

    def spy(ctx, collection, rows, **kwargs):
        try:
            out = real(ctx, collection, rows, **kwargs)
        except Exception:
            seen.append((len(rows), False))
            raise
        seen.append((len(rows), True))
        return out
    monkeypatch.setattr(creates, "bulk_create_records", spy)
    return seen


def test_a_run_of_creates_goes_in_together_each_entry_as_the_device_made_it(lab, runs):
    authority = lab.project("authority")
    make_schema(authority, "sample", [{"name": "code", "type": "string"}, {"name": "notes", "type": "string"},
                                      {"name": "words", "type": "integer"}, {"name": "chars", "type": "integer"}])
    authority.ok("PUT", "/schemas/sample/unique-keys", json={"keys": [["code"]]})
    make_collection(authority, "lake", ["sample"])
    laptop = lab.follow(authority, "laptop")
    # a workflow on creates at the authority: creates synced in start nothing there
    (authority.root / "workflows" / "count-words.yaml").write_text(
        yaml.safe_dump({"name": "count-words", **STATS}, sort_keys=False))
    authority.ok("POST", "/plugins/refresh")
    taken = make_record(authority, "lake", "sample", {"code": "K2"})
    _import(laptop, [f"K{i}" for i in range(6)])  # K2 is taken at the authority meanwhile
    _import(laptop, [f"M{i}" for i in range(5)])
    summary = laptop.sync()
    assert (summary["pushed"], summary["rejected"]) == (11, 1), summary
    # the run refused for one row, then the rows before and after it together, the refused one alone
    assert runs == [(11, False), (2, True), (8, True)]
    [row] = laptop.ok("GET", "/remote/conflicts")
    assert row["kind"] == "rejected" and row["attempted"] == "create" and "code" in row["message"]
    mine, theirs = _entries(laptop), _entries(authority)
    assert row["entity_id"] not in theirs and taken["id"] in theirs
    for record_id, entry in mine.items():
        if record_id in (row["entity_id"], taken["id"]):  # refused; the authority's own
            continue
        kept = theirs[record_id]
        assert (kept["id"], kept["actor"], kept["timestamp"], kept["batch_id"]) == \
            (entry["id"], entry["actor"], entry["timestamp"], entry["batch_id"])
        assert kept["device"] == entry["device"] == "laptop"
        assert kept["new_data"]["data"] == entry["new_data"]["data"]
    authority.ok("POST", "/jobs/drain")
    assert [j["record_id"] for j in authority.ok("GET", "/jobs")] == [taken["id"]]  # its own create only


def test_a_run_whose_reply_was_lost_is_answered_again_and_made_once(lab, runs):
    authority = lab.project("authority")
    make_schema(authority, "sample", [{"name": "code", "type": "string"}, {"name": "notes", "type": "string"}])
    make_collection(authority, "lake", ["sample"])
    laptop = lab.follow(authority, "laptop")
    _import(laptop, [f"R{i}" for i in range(8)])
    project = Project.open(laptop.root)
    db = open_database(project.database_url)
    try:
        with pytest.raises(BadGateway, match="dropped"):
            syncing.sync(db, project, transport=LoseOneReply("/sync/push"))
        assert laptop.ok("GET", "/remote")["pending"] == 8  # the device never heard
        syncing.sync(db, project)
    finally:
        db.engine.dispose()
    assert runs == [(8, True)]  # the resend was answered from what the authority stored
    assert laptop.ok("GET", "/remote")["pending"] == 0 and laptop.ok("GET", "/remote/conflicts") == []
    assert authority.ok("GET", "/collections/lake")["record_count"] == 8
    assert sorted(_entries(authority)) == sorted(_entries(laptop))


def test_open_conflicts_reads_only_the_entries_holding_rows(tmp_project):
    """Every sent entry keeps ``sync = []``; ``GET /remote``'s count reads the few holding rows
    through their partial index (migration 0028), not every sent entry."""
    db = open_database(tmp_project.database_url)
    statements: list[str] = []
    try:
        with db.session() as s:
            event.listen(s.connection(), "before_cursor_execute",
                         lambda conn, cursor, sql, params, context, many: statements.append(sql))
            assert conflicts.open_count(s) == 0
            [query] = [q for q in statements if "audit_entries" in q]
            plan = " ".join(str(row) for row in s.execute(text("EXPLAIN QUERY PLAN " + query)).all())
    finally:
        db.engine.dispose()
    assert "ix_audit_entries_rows" in plan, plan
