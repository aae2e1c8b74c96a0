"""Writers never see "database is locked" (issue #13, item 4): ``persistence.db.write_lock``.

A second process is played by a plain ``sqlite3`` connection holding SQLite's write lock
(``BEGIN IMMEDIATE``) on the project's real database file, as ``benchbook import`` does for
its whole length. A request that cannot get the database within the bound answers 503 with
``Retry-After`` in the error envelope (it waited 30 s and answered 500 before); one that can
waits and succeeds; writers of one process take turns; a large write checkpoints the WAL.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError
from starlette.testclient import TestClient

from benchbook.cli.main import build_cli
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records import lists
from benchbook.http.app import create_app
from benchbook.persistence import db as dbmod
from benchbook.persistence.tables import Record
from benchbook.settings.config import Project
from tests.waiting import HANG


class Client:
    def __init__(self, client: TestClient) -> None:
        self.client = client

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        r = self.client.request(method, "/api" + path, **kw)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return None if r.status_code == 204 else r.json()


@pytest.fixture
def served(tmp_project: Project) -> Iterator[tuple[Client, Project]]:
    app = create_app(tmp_project)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        c = Client(client)
        c.ok("POST", "/schemas", 201, json={"name": "s", "fields": [{"name": "n", "type": "integer"}]})
        c.ok("POST", "/collections", 201, json={"name": "c", "schemas": ["s"]})
        yield c, tmp_project
    app.services.db.engine.dispose()


def _db_file(project: Project) -> Path:
    return Path(project.database_url.removeprefix("sqlite:///"))


def _hold_write_lock(project: Project) -> sqlite3.Connection:
    """Another process's writer: SQLite's write lock held until ``rollback()``."""
    conn = sqlite3.connect(_db_file(project), isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_a_write_past_the_bound_answers_503_with_retry_after(served: tuple[Client, Project],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    c, project = served
    monkeypatch.setattr(dbmod, "WRITE_WAIT", 0.3)
    other = _hold_write_lock(project)
    try:
        r = c.client.post("/api/collections/c/records", json={"schema_name": "s", "data": {"n": 1}})
    finally:
        other.rollback()
        other.close()
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"] == str(dbmod.RETRY_AFTER)
    assert set(r.json()) == {"detail"} and "database is busy" in r.json()["detail"]
    # the database is usable again at once, and nothing was written by the refused request
    c.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"n": 2}})
    assert [rec["data"]["n"] for rec in c.ok("GET", "/collections/c/records")["items"]] == [2]


def test_a_write_waits_for_a_writer_that_finishes_within_the_bound(served: tuple[Client, Project]) -> None:
    c, project = served
    other = _hold_write_lock(project)
    releaser = threading.Timer(0.5, other.rollback)
    releaser.start()
    try:
        c.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"n": 1}})
    finally:
        releaser.join()
        other.close()


def test_writers_of_one_process_take_turns(served: tuple[Client, Project]) -> None:
    """Twelve threads each create and edit records at once: none sees "database is locked"."""
    c, _ = served
    statuses: list[int] = []

    def work(i: int) -> None:
        for j in range(5):
            r = c.client.post("/api/collections/c/records", json={"schema_name": "s", "data": {"n": i * 100 + j}})
            statuses.append(r.status_code)
            if r.status_code == 201:
                r2 = c.client.patch(f"/api/records/{r.json()['id']}", json={"data": {"n": -1}})
                statuses.append(r2.status_code)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses.count(201) == 60 and statuses.count(200) == 60, statuses
    assert c.ok("GET", "/collections/c/record-counts")["total"] == 60


def test_database_is_locked_from_anywhere_is_a_503_not_a_500(served: tuple[Client, Project],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    c, _ = served

    def locked(*_a: Any, **_k: Any) -> Any:
        raise OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked"))

    monkeypatch.setattr(lists, "list_page", locked)
    r = c.client.get("/api/collections/c/records")
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"] == str(dbmod.RETRY_AFTER) and set(r.json()) == {"detail"}

    def other(*_a: Any, **_k: Any) -> Any:
        raise OperationalError("SELECT 1", {}, sqlite3.OperationalError("no such table: x"))

    monkeypatch.setattr(lists, "list_page", other)
    assert c.client.get("/api/collections/c/records").status_code == 500  # not every OperationalError is busy


def _csv(path: Path, rows: int) -> Path:
    path.write_text("n\n" + "".join(f"{i}\n" for i in range(rows)), encoding="utf-8")
    return path


def test_import_takes_the_write_lock_and_says_when_it_cannot(tmp_project: Project, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    runner, cli = CliRunner(), build_cli()
    root = str(tmp_project.root)
    database = dbmod.open_database(tmp_project.database_url)
    with database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="test", files_dir=tmp_project.files_dir)
        create_schema(ctx, {"name": "s", "fields": [{"name": "n", "type": "integer"}]})
        create_collection(ctx, {"name": "c", "schemas": ["s"]})
    database.engine.dispose()
    monkeypatch.setattr(dbmod, "COMMAND_WAIT", 0.3)
    monkeypatch.setattr("benchbook.cli.local.COMMAND_WAIT", 0.3)
    other = _hold_write_lock(tmp_project)
    try:
        result = runner.invoke(cli, ["--project", root, "import", str(_csv(tmp_path / "a.csv", 10)), "-c", "c",
                                     "-s", "s"])
    finally:
        other.rollback()
        other.close()
    assert result.exit_code == 1 and "database is busy" in result.output, result.output
    # while an import holds the lock, another writer of the same process waits for it
    taken, trying = threading.Event(), threading.Event()
    real = dbmod.write_lock

    def spy(session: Any, wait: float | None = None) -> None:
        real(session, wait)
        taken.set()
        trying.wait(HANG)  # hold it until the other writer comes for it
        time.sleep(0.3)  # and a while longer, so that it usually waits (the verdict is the same if not)

    monkeypatch.setattr("benchbook.cli.local.write_lock", spy)
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.setdefault(
        "r", runner.invoke(cli, ["--project", root, "import", str(_csv(tmp_path / "b.csv", 50)), "-c", "c", "-s", "s"])))
    t.start()
    assert taken.wait(HANG)
    database = dbmod.open_database(tmp_project.database_url)
    try:
        with database.session() as s, s.begin():
            trying.set()
            dbmod.write_lock(s, HANG)  # waits for the import's commit instead of failing as busy
            count = s.execute(select(func.count()).select_from(Record)).scalar_one()
    finally:
        database.engine.dispose()
    t.join()
    assert box["r"].exit_code == 0, box["r"].output
    assert count == 50  # it got the database only once the import had committed (before: 0 rows)


def test_a_large_write_checkpoints_the_wal(served: tuple[Client, Project], monkeypatch: pytest.MonkeyPatch) -> None:
    c, project = served
    wal = Path(f"{_db_file(project)}-wal")
    monkeypatch.setattr(dbmod, "CHECKPOINT_EVERY", 0.0)
    monkeypatch.setattr(dbmod, "CHECKPOINT_WAL_BYTES", 1 << 40)  # nothing is large: the WAL stays
    c.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"n": 1}})
    assert wal.stat().st_size > 0
    monkeypatch.setattr(dbmod, "CHECKPOINT_WAL_BYTES", 1)  # everything is large
    c.ok("POST", "/collections/c/records", 201, json={"schema_name": "s", "data": {"n": 2}})
    assert wal.stat().st_size == 0
    assert c.ok("GET", "/collections/c/record-counts")["total"] == 2
