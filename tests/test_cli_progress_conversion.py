"""Issue 36 item 4: ``benchbook audit get-storage`` starts the history conversion when whole edits
remain; on a terminal a bar follows it until it stops (in-process through the domain's callback,
over ``--url`` through the ``done``/``total`` of ``GET /audit/storage``), then the figures after it
are shown; piped, the answer is the one request's, as before."""
from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from rich.console import Console

from benchbook.cli import sending
from benchbook.cli.progress import _storage_reader, send_followed
from benchbook.cli.sending import Settings, send
from benchbook.domain.history import storage as history_storage
from tests.api.test_audit_history import _whole_edits, lab  # noqa: F401  (a fixture)

REQUEST = {"method": "GET", "url": "/api/audit/storage", "params": []}


def test_in_process_the_bar_follows_the_conversion_to_its_end(api: Any, lab: dict[str, str],  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _whole_edits(api, lab)  # 3 whole edits
    monkeypatch.setattr(sending, "locate_project", lambda _: api.project)  # its database, PostgreSQL too
    settings = Settings(project=str(api.project.root))
    out = io.StringIO()
    answer = send_followed(settings, REQUEST, "audit.get_storage", lambda: send(settings, REQUEST, path="/audit/storage"),
                           Console(file=out, force_terminal=True, width=100))
    assert answer.status_code == 200
    assert answer.json()["whole_entries"] == 0 and answer.json()["converting"] is False  # the figures after it
    assert history_storage.STAGE in out.getvalue() and "3/3" in out.getvalue()


def test_piped_the_answer_is_the_request_s() -> None:
    piped = io.StringIO()
    calls: list[int] = []

    def one() -> httpx.Response:
        calls.append(1)
        return httpx.Response(200, json={"whole_entries": 3, "converting": True, "done": 0, "total": 3})

    answer = send_followed(Settings(), REQUEST, "audit.get_storage", one, Console(file=piped))
    assert answer.json()["converting"] is True and calls == [1] and piped.getvalue() == ""


def test_over_url_the_bar_reads_done_and_total_of_the_storage_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader turns ``GET /audit/storage`` into the bar's counts (None once nothing converts);
    the command asks for the figures again once the conversion has stopped."""
    readings = iter([{"converting": True, "done": 1, "total": 3}, {"converting": True, "done": 2, "total": 3}])

    def get(url: str, **_: Any) -> httpx.Response:
        assert url == "http://127.0.0.1:9/api/audit/storage"
        return httpx.Response(200, json=next(readings, {"converting": False, "done": None, "total": None}))

    monkeypatch.setattr(httpx, "get", get)
    settings = Settings(url="http://127.0.0.1:9")
    reader = _storage_reader(settings)
    assert reader() == {"succeeded": 1, "failed": 0, "pending": 2}
    assert reader() == {"succeeded": 2, "failed": 0, "pending": 1}
    assert reader() is None

    readings = iter([{"converting": True, "done": 2, "total": 3}])
    answers = iter([{"whole_entries": 3, "converting": True, "done": 0, "total": 3},
                    {"whole_entries": 0, "converting": False, "done": None, "total": None}])
    out = io.StringIO()
    answer = send_followed(settings, REQUEST, "audit.get_storage", lambda: httpx.Response(200, json=next(answers)),
                           Console(file=out, force_terminal=True))
    assert answer.json()["whole_entries"] == 0  # asked again after the conversion
    assert history_storage.STAGE in out.getvalue() and "3/3" in out.getvalue()
