"""Sync survives what real machines do: a reply lost after the authority committed, a device
killed in the middle of a push, a crash between applying a pulled page and saving the cursor.
Afterwards every project is consistent, no entry is applied twice, and one more sync converges
(issue 34, *Crash safety*)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx
import pytest

from benchbook.domain.errors import BadGateway
from benchbook.persistence.db import open_database
from benchbook.remote import syncing
from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_record, make_schema
from tests.waiting import HANG, until


class LoseOneReply(httpx.BaseTransport):
    """Forwards every request; the first answer to a path ending in ``path`` is read and then
    lost, as when the connection drops after the authority committed."""

    def __init__(self, path: str) -> None:
        self.inner, self.path, self.lost = httpx.HTTPTransport(), path, 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith(self.path) and not self.lost:
            response.read()
            response.close()
            self.lost += 1
            raise httpx.ReadError("the connection dropped after the authority answered", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def _lake(side):
    make_schema(side, "sample", [{"name": "code", "type": "string"}, {"name": "site", "type": "string"}])
    make_collection(side, "lake", ["sample"])


def _opened(side):
    project = Project.open(side.root)
    return project, open_database(project.database_url)


def _history(side, **params):
    return side.ok("GET", "/audit", params={"limit": 500, **params})["items"]


def test_a_reply_lost_after_the_authority_committed_changes_nothing_twice(lab):
    authority = lab.project("authority")
    _lake(authority)
    made = make_record(authority, "lake", "sample", {"code": "A", "site": "North"})
    laptop = lab.follow(authority, "laptop")
    laptop.ok("PATCH", f"/records/{made['id']}", json={"data": {"site": "South"}})
    project, db = _opened(laptop)
    try:
        with pytest.raises(BadGateway, match="dropped"):
            syncing.sync(db, project, transport=LoseOneReply("/sync/push"))
        assert authority.ok("GET", f"/records/{made['id']}")["data"]["site"] == "South"  # committed there
        assert laptop.ok("GET", "/remote")["pending"] == 1  # the device never heard
        syncing.sync(db, project)
    finally:
        db.engine.dispose()
    edits = [e for e in _history(authority, entity_id=made["id"]) if e["action"] == "update"]
    assert len(edits) == 1 and edits[0]["device"] == "laptop"
    assert laptop.ok("GET", "/remote")["pending"] == 0
    assert laptop.ok("GET", "/remote/conflicts") == []


def test_a_crash_between_a_pulled_page_and_its_cursor_applies_the_page_once(lab, monkeypatch):
    from benchbook.domain.sync import replica

    authority = lab.project("authority")
    _lake(authority)
    laptop = lab.follow(authority, "laptop")
    for i in range(5):
        make_record(authority, "lake", "sample", {"code": f"C{i}"})
    real = replica.apply_page

    def applied_then_killed(session, entries):
        real(session, entries)
        raise SystemExit("killed after the page was applied, before the cursor was saved")

    project, db = _opened(laptop)
    try:
        monkeypatch.setattr(replica, "apply_page", applied_then_killed)
        with pytest.raises(SystemExit):
            syncing.sync(db, project)
        monkeypatch.setattr(replica, "apply_page", real)
        assert laptop.ok("GET", "/collections/lake")["record_count"] == 0  # nothing of the page stayed
        syncing.sync(db, project)
    finally:
        db.engine.dispose()
    theirs = [e["id"] for e in _history(authority)]
    mine = [e["id"] for e in _history(laptop)]
    assert sorted(mine) == sorted(theirs) and len(set(mine)) == len(mine)
    assert laptop.ok("GET", "/collections/lake")["record_count"] == 5


KILLED_PUSH = """
import sys
from benchbook.settings.config import Project
from benchbook.persistence.db import open_database
from benchbook.remote import syncing

project = Project.open(sys.argv[1])
syncing.sync(open_database(project.database_url), project)
"""


@pytest.mark.parametrize("count", [600, pytest.param(10_000, marks=pytest.mark.deep)])
def test_a_device_killed_in_the_middle_of_a_push_converges_on_the_next_sync(lab, count):
    authority = lab.project("authority")
    _lake(authority)
    laptop = lab.follow(authority, "laptop")
    rows = "code,site\n" + "".join(f"K{i},North\n" for i in range(count))
    out = laptop.ok("POST", "/collections/lake/import", files={"file": ("k.csv", rows.encode())},
                    data={"schema": "sample"})
    assert out["created"] == count, out
    pending = laptop.ok("GET", "/remote")["pending"]
    proc = subprocess.Popen([sys.executable, "-c", KILLED_PUSH, str(laptop.root)], env={**os.environ})
    try:
        until(lambda: authority.ok("GET", "/collections/lake")["record_count"] > 0 or proc.poll() is not None,
              "the authority to apply the first batch of the push")
        proc.send_signal(signal.SIGKILL)
        proc.wait(HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert laptop.ok("GET", "/remote")["pending"] <= pending
    laptop.sync()
    assert authority.ok("GET", "/collections/lake")["record_count"] == count
    assert laptop.ok("GET", "/remote")["pending"] == 0
    stamped = _device_entries(authority)
    assert len(stamped) == len(set(stamped)) == count  # each create applied once


def _device_entries(authority) -> list[str]:
    ids, offset = [], 0
    while True:
        page = authority.ok("GET", "/audit", params={"limit": 500, "offset": offset, "entity_type": "record"})["items"]
        ids += [e["id"] for e in page if e["device"] == "laptop"]
        if len(page) < 500:
            return ids
        offset += 500
