"""A device's first copy by snapshot (records as they stand, history as stored, the feed after)
leaves it exactly where applying the whole feed would (issue 34: the first sync's own path), and
a copy stopped midway finishes on the next sync with nothing twice."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from benchbook.domain.errors import BadGateway
from benchbook.domain.sync import copy
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import AuditEntry, Record, RecordLink, SyncState
from benchbook.remote import syncing
from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_record, make_schema
from tests.conftest import new_pg_database
from tests.live_server import served_in_thread
from tests.sync.conftest import Lab, Side
from tests.waiting import HANG


def _history_of(side: Side) -> list[dict[str, Any]]:
    """Every entry as ``GET /audit`` answers it (values whole), by id."""
    out, offset = [], 0
    while True:
        page = side.ok("GET", "/audit", params={"limit": 500, "offset": offset})["items"]
        out += page
        if len(page) < 500:
            return sorted(out, key=lambda e: e["id"])
        offset += 500


def _undated(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``history`` without what each entry says of its record now (``now``: its state, edited
    or not, and since when, told by the record's times)."""
    return [{k: v for k, v in e.items() if k != "now"} for e in history]


def _rows_of(root: Path) -> dict[str, Any]:
    """What a copy must make alike: records (values, place, name, deleted or not), links, each
    entry's number and stamp, the cursor."""
    project = Project.open(root)
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            return {
                "records": sorted((r.id, r.dataset_id, r.schema_id, r.parent_id, repr(sorted(r.data.items())),
                                   r.natural_name, r.deleted_at is not None) for r in s.scalars(select(Record))),
                "links": sorted(tuple(link) for link in s.execute(select(
                    RecordLink.source_id, RecordLink.field_id, RecordLink.target_id, RecordLink.kind)).all()),
                "entries": sorted(s.execute(select(AuditEntry.id, AuditEntry.seq, AuditEntry.device)).all()),
                "cursor": s.scalar(select(SyncState.cursor)),
                "copy": s.execute(select(SyncState.copy_stage, SyncState.copy_head, SyncState.copy_after)).one(),
            }
    finally:
        db.engine.dispose()


def _lab_history(authority: Side, laptop: Side) -> dict[str, str]:
    """An authority with a history of every kind: a schema tree, references, an import (a batch),
    edits, a move, deletes (one of many), a restore, a purge, changes a device sent. Returns ids."""
    make_schema(authority, "site", [{"name": "code", "type": "string"}], display_template="{code}")
    make_schema(authority, "sample", [{"name": "code", "type": "string"}, {"name": "depth", "type": "float"},
                                      {"name": "twin", "type": "reference", "restrictions": {"schema": "sample"}}],
                parent="site", display_template="{code}")
    make_collection(authority, "lake", ["site", "sample"])
    north = make_record(authority, "lake", "site", {"code": "N"})
    south = make_record(authority, "lake", "site", {"code": "S"})
    rows = "code,depth,parent_record_id\n" + "".join(f"K{i},{i / 2},{north['id']}\n" for i in range(12))
    authority.ok("POST", "/collections/lake/import", files={"file": ("k.csv", rows.encode())},
                 data={"schema": "sample"})
    samples = authority.ok("GET", "/collections/lake/records", params={"schema": "sample", "limit": 100})["items"]
    first, second, third = samples[0]["id"], samples[1]["id"], samples[2]["id"]
    authority.ok("PATCH", f"/records/{first}", json={"data": {"depth": 9.5, "twin": second}})
    authority.ok("PATCH", f"/records/{second}", json={"parent_record_id": south["id"]})
    authority.ok("POST", "/records/bulk-delete", json={"ids": [samples[3]["id"], samples[4]["id"]]})
    authority.ok("DELETE", f"/records/{third}", 204)
    authority.ok("POST", f"/records/{third}/restore")
    authority.ok("DELETE", f"/records/{samples[5]['id']}", 204)
    authority.ok("DELETE", f"/records/{samples[5]['id']}/purge", 204)
    laptop.sync()  # joined while the authority was empty: its first copy is now
    made = make_record(laptop, "lake", "sample", {"code": "L1", "twin": first}, parent=south["id"])
    laptop.ok("PATCH", f"/records/{first}", json={"data": {"code": "K0-laptop"}})
    laptop.sync()
    return {"first": first, "second": second, "made": made["id"], "north": north["id"]}


def _followed_by_feed(lab: Lab, authority: Side, name: str, monkeypatch: pytest.MonkeyPatch) -> Side:
    """A device that copies the authority through the feed alone (the way before snapshots)."""
    with monkeypatch.context() as m:
        m.setattr(copy, "wanted", lambda session: False)
        return lab.follow(authority, name)


def test_a_copy_by_snapshot_equals_a_copy_through_the_feed(lab, monkeypatch):
    authority = lab.project("authority")
    laptop = lab.follow(authority, "laptop")
    _lab_history(authority, laptop)
    by_feed = _followed_by_feed(lab, authority, "by-feed", monkeypatch)
    by_snapshot = lab.follow(authority, "by-snapshot")
    feed_rows, snapshot_rows = _rows_of(by_feed.root), _rows_of(by_snapshot.root)
    assert snapshot_rows["copy"] == (None, None, None)
    assert snapshot_rows == feed_rows
    assert snapshot_rows["entries"] == _rows_of(authority.root)["entries"]  # every entry, numbered and stamped alike
    # every entry read back whole alike; a record's times are the authority's own (a feed copy dates
    # a record by the entries it applied, which a device made before the authority took them)
    assert _history_of(by_snapshot) == _history_of(authority)
    assert _undated(_history_of(by_snapshot)) == _undated(_history_of(by_feed))
    assert by_snapshot.ok("GET", "/audit/events")["total"] == by_feed.ok("GET", "/audit/events")["total"]
    assert by_snapshot.ok("GET", "/collections/lake")["record_count"] == \
        authority.ok("GET", "/collections/lake")["record_count"]
    # the copy keeps going as any device: a change here and there meets in the middle
    record = by_snapshot.ok("GET", "/collections/lake/records", params={"schema": "sample", "limit": 1})["items"][0]
    by_snapshot.ok("PATCH", f"/records/{record['id']}", json={"data": {"depth": 42.0}})
    by_snapshot.sync()
    assert authority.ok("GET", f"/records/{record['id']}")["data"]["depth"] == 42.0


class FailAfter(httpx.BaseTransport):
    """Real HTTP until ``n`` snapshot pages of ``kind`` have been answered; the next one (and
    every one after it, while ``broken``) is refused, as when the network drops midway."""

    def __init__(self, kind: str, n: int) -> None:
        self.inner, self.kind, self.n, self.broken = httpx.HTTPTransport(), kind, n, False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(f"/sync/snapshot/{self.kind}"):
            if self.n == 0:
                self.broken = True
            self.n -= 1
        if self.broken:
            raise httpx.ConnectError("the network dropped", request=request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("kind, pages", [("records", 2), ("history", 1)])
def test_a_copy_stopped_midway_finishes_on_the_next_sync_with_nothing_twice(lab, monkeypatch, kind, pages):
    authority = lab.project("authority")
    laptop = lab.follow(authority, "laptop")
    ids = _lab_history(authority, laptop)
    monkeypatch.setattr(copy, "PAGE", 4)  # pages of 4 rows: the copy stops with some of them in
    device = lab.project("device")
    invite = authority.ok("POST", "/sync/devices", 201, json={"name": "device"})["invite"]
    project = Project.open(device.root)
    db = open_database(project.database_url)
    try:
        with pytest.raises(BadGateway, match="dropped"):
            syncing.connect(db, project, authority.url, invite, transport=FailAfter(kind, pages))
        stopped = _rows_of(device.root)
        assert stopped["copy"][0] == kind and stopped["copy"][1] > 0
        held = _rows_of(authority.root)
        if kind == "records":  # some records in, no history yet
            assert 0 < len(stopped["records"]) < len(held["records"]) and stopped["cursor"] == 0
        else:  # every record in, some history
            assert len(stopped["records"]) == len(held["records"]) and 0 < stopped["cursor"] < stopped["copy"][1]
        # meanwhile at the authority: an edit of a record copied already, a delete, a new record
        authority.ok("PATCH", f"/records/{ids['first']}", json={"data": {"depth": 77.0}})
        authority.ok("DELETE", f"/records/{ids['made']}", 204)
        make_record(authority, "lake", "sample", {"code": "late"}, parent=ids["north"])
        syncing.sync(db, project)
    finally:
        db.engine.dispose()
    by_feed = _followed_by_feed(lab, authority, "by-feed", monkeypatch)
    finished, reference = _rows_of(device.root), _rows_of(by_feed.root)
    assert finished["copy"] == (None, None, None)
    assert finished == reference
    history = _history_of(device)
    assert len({e["id"] for e in history}) == len(history) == len(_history_of(authority))
    assert _undated(history) == _undated(_history_of(by_feed))


@contextmanager
def _pg_side(tmp_path: Path, name: str, stack: ExitStack) -> Iterator[Side]:
    """A new project ``name`` on a new PostgreSQL database, served; its client."""
    url = stack.enter_context(new_pg_database(f"benchbook_copy_{name}"))
    project = Project.init(tmp_path / name)
    config = project.root / "benchbook.toml"
    text = config.read_text().replace("[database]\n", f'[database]\nurl = "{url}"\n', 1)
    config.write_text(text.replace("[user]\n", f'[user]\nname = "{name}"\n', 1))
    open_database(url).engine.dispose()
    base = stack.enter_context(served_in_thread(project.root))
    yield Side(root=project.root, url=base, http=stack.enter_context(httpx.Client(base_url=base + "/api",
                                                                                   timeout=HANG)))


def test_a_copy_by_snapshot_on_postgresql_equals_a_copy_through_the_feed(lab, monkeypatch, tmp_path):
    with ExitStack() as stack, _pg_side(tmp_path, "authority", stack) as authority, \
            _pg_side(tmp_path, "device", stack) as device:
        laptop = lab.follow(authority, "laptop")
        _lab_history(authority, laptop)
        monkeypatch.setattr(copy, "PAGE", 5)  # several pages, parents on earlier ones
        invite = authority.ok("POST", "/sync/devices", 201, json={"name": "device"})["invite"]
        device.ok("POST", "/remote/connect", json={"url": authority.url, "invite": invite})
        by_feed = _followed_by_feed(lab, authority, "by-feed", monkeypatch)
        assert _rows_of(device.root) == _rows_of(by_feed.root)
        assert _history_of(device) == _history_of(authority)
