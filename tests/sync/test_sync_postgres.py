"""A lab authority on PostgreSQL, served by two server processes on one database, with two
devices pushing at once and a third pulling all along: the puller meets every entry exactly once,
numbered without a gap (issue 34, *Proof*: PostgreSQL authority)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from benchbook.persistence.db import open_database
from benchbook.persistence.tables import AuditEntry
from benchbook.settings.config import Project
from tests import patient_http
from tests.api.helpers import make_collection, make_schema
from tests.conftest import new_pg_database
from tests.live_server import live_server
from tests.sync.conftest import Side
from tests.waiting import HANG

PUSHED = 150
"""Records each pushing device imports offline (one entry each)."""


@pytest.fixture
def pg_authority(tmp_path: Path):
    """A new project on a new PostgreSQL database (dropped afterwards)."""
    with new_pg_database("benchbook_sync") as url:
        project = Project.init(tmp_path / "authority")
        config = project.root / "benchbook.toml"
        config.write_text(config.read_text().replace("[database]\n", f'[database]\nurl = "{url}"\n', 1))
        open_database(url).engine.dispose()  # migrated once, before two servers start on it
        yield project.root, url


def test_two_servers_on_one_database_number_every_entry_once(lab, pg_authority, tmp_path):
    root, url = pg_authority
    with live_server(root, tmp_path / "one.log") as one, live_server(root, tmp_path / "two.log") as two, \
            patient_http.Client(base_url=one.base + "/api") as h1:
        first = Side(root, one.base, h1)
        make_schema(first, "sample", [{"name": "code", "type": "string"}])
        make_collection(first, "lake", ["sample"])
        pushers = []
        for name, server in (("east", one), ("west", two)):
            invite = first.ok("POST", "/sync/devices", 201, json={"name": name})["invite"]
            device = lab.project(name)
            device.ok("POST", "/remote/connect", json={"url": server.base, "invite": invite})
            rows = "code\n" + "".join(f"{name}-{i}\n" for i in range(PUSHED))
            device.ok("POST", "/collections/lake/import", files={"file": ("k.csv", rows.encode())},
                      data={"schema": "sample"})
            pushers.append(device)
        invite = first.ok("POST", "/sync/devices", 201, json={"name": "reader"})["invite"]
        reader = lab.project("reader")
        reader.ok("POST", "/remote/connect", json={"url": two.base, "invite": invite})
        failures: list[BaseException] = []

        def push(device: Side) -> None:
            try:
                device.sync()
            except BaseException as exc:  # noqa: BLE001  (reported below, not lost in the thread)
                failures.append(exc)

        threads = [threading.Thread(target=push, args=(d,)) for d in pushers]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            reader.sync()  # pulls while both pushes run
        for t in threads:
            t.join(HANG)
        assert not failures, failures
        reader.sync()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            total, head = conn.execute(select(func.count(), func.max(AuditEntry.seq))).one()
            unnumbered = conn.scalar(select(func.count()).where(AuditEntry.seq.is_(None)))
    finally:
        engine.dispose()
    assert unnumbered == 0 and head == total
    db = open_database(Project.open(reader.root).database_url)
    try:
        with db.session() as s:
            seqs = list(s.scalars(select(AuditEntry.seq).order_by(AuditEntry.seq)))
            ids = list(s.scalars(select(AuditEntry.id)))
    finally:
        db.engine.dispose()
    assert seqs == list(range(1, total + 1))  # every entry once, no gap
    assert len(set(ids)) == len(ids) == total
    assert reader.ok("GET", "/collections/lake")["record_count"] == 2 * PUSHED
