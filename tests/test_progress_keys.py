"""Issue 36 item 4: a request's progress read by another request. A request sent with
``X-Progress-Key`` keeps what its domain reports on the app's board; ``GET /progress/{key}``
answers it (stages with done of total, ``finished``); a command over ``--url`` on a terminal
sends a random key and draws its bar from those readings, against a real server on loopback."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from benchbook.cli.progress import send_followed
from benchbook.cli.sending import Settings, send
from benchbook.domain.progress import KeyInUse, ProgressBoard
from benchbook.settings.config import Project
from tests import patient_http as http
from tests.api.helpers import make_collection, make_record, make_schema
from tests.live_server import served_in_thread

RECORDS = 7


def lab(api: Any) -> list[str]:
    make_schema(api, "sample", [{"name": "n", "type": "integer"}])
    make_collection(api, "lab", ["sample"])
    return [make_record(api, "lab", "sample", {"n": i})["id"] for i in range(RECORDS)]


def test_a_keyed_request_s_stages_are_read_after_it(api: Any) -> None:
    ids = lab(api)
    assert api.delete("/collections/lab/records", headers={"X-Progress-Key": "delete-all-1"}).json()["deleted"] == RECORDS
    assert api.ok("GET", "/progress/delete-all-1") == {
        "key": "delete-all-1", "finished": True, "stages": [{"stage": "deleting records", "done": RECORDS, "total": RECORDS}]}
    api.ok("POST", "/audit/restore-all", json={}, headers={"X-Progress-Key": "restore-all-1"})
    stages = api.ok("GET", "/progress/restore-all-1")["stages"]
    assert stages == [{"stage": "restoring records", "done": RECORDS, "total": RECORDS}]
    # the key may be used again once its request has ended: the new request's stages replace the old
    api.ok("POST", "/records/bulk-delete", json={"ids": ids[:3]}, headers={"X-Progress-Key": "delete-all-1"})
    assert api.ok("GET", "/progress/delete-all-1")["stages"] == [{"stage": "deleting records", "done": 3, "total": 3}]
    # a request that reports nothing shows no stages
    api.ok("GET", "/health", headers={"X-Progress-Key": "health-check"})
    assert api.ok("GET", "/progress/health-check") == {"key": "health-check", "finished": True, "stages": []}


@pytest.mark.parametrize("key", ["short", "has space in it", "x" * 65, "dots.not.allowed"])
def test_a_malformed_key_is_refused_before_the_request_runs(api: Any, key: str) -> None:
    lab(api)
    answer = api.delete("/collections/lab/records", headers={"X-Progress-Key": key})
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["loc"] == ["header", "X-Progress-Key"]
    assert api.ok("GET", "/collections/lab/records")["total"] == RECORDS  # nothing was deleted


def test_an_unknown_key_is_404_in_the_envelope(api: Any) -> None:
    answer = api.get("/progress/never-sent-1")
    assert answer.status_code == 404 and "never-sent-1" in answer.json()["detail"]
    assert api.get("/progress/bad key").status_code in (404, 422)


def test_the_board_refuses_a_running_key_forgets_ended_ones_and_keeps_a_bounded_number() -> None:
    board = ProgressBoard(kept=2, seconds=600)
    report = board.start("first-key")
    report("copying", 1, 4)
    assert board.reading("first-key") == {"key": "first-key", "finished": False,
                                          "stages": [{"stage": "copying", "done": 1, "total": 4}]}
    with pytest.raises(KeyInUse):
        board.start("first-key")
    report("copying", 4, 4)
    report("checking", 0, 2)  # a new stage comes after the first
    board.end("first-key")
    assert [s["stage"] for s in board.reading("first-key")["stages"]] == ["copying", "checking"]
    board.start("second-key")
    board.start("third-key")  # a third key: the oldest goes
    assert board.reading("first-key") is None and board.reading("second-key") is not None

    forgetful = ProgressBoard(seconds=-1)  # ended keys are forgotten at once
    forgetful.start("gone-soon")
    assert forgetful.reading("gone-soon") is not None  # still running: kept
    forgetful.end("gone-soon")
    assert forgetful.reading("gone-soon") is None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("progress-over-url")
    Project.init(folder)
    with served_in_thread(Path(folder)) as base:
        yield base


def test_over_url_a_command_s_bar_follows_the_server_s_progress(server: str) -> None:
    with http.Client(base_url=f"{server}/api") as client:
        client.post("/schemas", json={"name": "sample", "fields": [{"name": "n", "type": "integer"}]}).raise_for_status()
        client.post("/collections", json={"name": "lab", "schemas": ["sample"]}).raise_for_status()
        for i in range(RECORDS):
            client.post("/collections/lab/records", json={"schema_name": "sample", "data": {"n": i}}).raise_for_status()
    settings = Settings(url=server)
    request = {"method": "DELETE", "url": "/api/collections/lab/records", "params": []}
    out = io.StringIO()
    answer = send_followed(settings, request, "records.delete_records", lambda: send(settings, request),
                           Console(file=out, force_terminal=True, width=100))
    assert answer.status_code == 200 and answer.json()["deleted"] == RECORDS
    assert "deleting records" in out.getvalue() and f"{RECORDS}/{RECORDS}" in out.getvalue()
    key = request["headers"]["X-Progress-Key"]
    assert http.get(f"{server}/api/progress/{key}").json()["finished"] is True

    piped = io.StringIO()  # piped: one plain request, no key, nothing drawn
    request = {"method": "POST", "url": "/api/audit/restore-all", "params": [], "json": {}}
    answer = send_followed(settings, request, "audit.restore_all", lambda: send(settings, request), Console(file=piped))
    assert answer.json()["records"] == RECORDS and "headers" not in request and piped.getvalue() == ""
