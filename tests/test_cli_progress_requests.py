"""Issue 36 item 4: ``records delete-records``, ``records bulk-delete`` and ``audit restore-all``
sent to an app in the CLI's process report their progress through the domain's callback
(``benchbook.domain.progress.reporting``: the context reaches the handler's thread) and draw a bar
on a terminal; piped, or over ``--url``, nothing is drawn."""
from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from benchbook.cli import sending
from benchbook.cli.progress import send_followed
from benchbook.cli.sending import Settings, send
from benchbook.domain.progress import reported_to
from tests import own_loop
from tests.api.helpers import make_collection, make_record, make_schema

RECORDS = 7


class Recorder:
    """A :data:`benchbook.domain.progress.Progress` that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.calls.append((stage, done, total))


PATHS = {"records.delete_records": "/collections/{dataset_name}/records", "plugins.refresh_plugins": "/plugins/refresh",
         "records.bulk_delete_records": "/records/bulk-delete", "audit.restore_all": "/audit/restore-all"}
"""The documented path of each operation (the in-process app routes only it)."""


def request(settings: Settings, method: str, url: str, operation_id: str, body: Any = None,
            console: Console | None = None) -> Any:
    """The command's request sent in-process, through the CLI's bar when ``console`` is given."""
    req = {"method": method, "url": url, "params": [], **({"json": body} if body is not None else {})}
    if console is None:
        return send(settings, req, path=PATHS[operation_id])
    return send_followed(settings, req, operation_id, lambda: send(settings, req, path=PATHS[operation_id]), console)


@pytest.fixture(autouse=True)
def in_process_on_the_backend(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's in-process app uses the test project as it is (its database, PostgreSQL too)."""
    monkeypatch.setattr(sending, "locate_project", lambda _: api.project)


def lab(api: Any) -> list[str]:
    make_schema(api, "sample", [{"name": "n", "type": "integer"}])
    make_collection(api, "lab", ["sample"])
    return [make_record(api, "lab", "sample", {"n": i})["id"] for i in range(RECORDS)]


def test_delete_and_restore_all_report_through_the_callback(api: Any) -> None:
    ids = lab(api)
    settings = Settings(project=str(api.project.root))
    deleted, restored, removed = Recorder(), Recorder(), Recorder()
    with reported_to(deleted):
        answer = request(settings, "DELETE", "/api/collections/lab/records", "records.delete_records")
    assert answer.status_code == 200 and answer.json()["deleted"] == RECORDS, answer.text
    assert deleted.calls == [("deleting records", RECORDS, RECORDS)]

    with reported_to(restored):
        answer = request(settings, "POST", "/api/audit/restore-all", "audit.restore_all", {})
    assert answer.status_code == 200 and answer.json()["records"] == RECORDS, answer.text
    assert restored.calls == [("restoring records", 0, RECORDS), ("restoring records", RECORDS, RECORDS)]

    with reported_to(removed):
        answer = request(settings, "POST", "/api/records/bulk-delete", "records.bulk_delete_records",
                         {"ids": ids[:3]})
    assert answer.status_code == 200 and answer.json()["deleted"] == 3, answer.text
    assert removed.calls == [("deleting records", 3, 3)]


def test_on_a_terminal_the_bar_shows_the_stages_and_piped_nothing(api: Any) -> None:
    lab(api)
    settings = Settings(project=str(api.project.root))
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=100)
    assert request(settings, "DELETE", "/api/collections/lab/records", "records.delete_records",
                   console=terminal).status_code == 200
    assert "deleting records" in out.getvalue() and f"{RECORDS}/{RECORDS}" in out.getvalue()
    assert request(settings, "POST", "/api/audit/restore-all", "audit.restore_all", {},
                   console=terminal).status_code == 200
    assert "restoring records" in out.getvalue()

    piped = io.StringIO()
    assert request(settings, "DELETE", "/api/collections/lab/records", "records.delete_records",
                   console=Console(file=piped)).json()["deleted"] == RECORDS
    assert piped.getvalue() == ""


def test_plugins_refresh_reports_each_describe(api: Any) -> None:
    """Every in-process plugin and every folder with a manifest (here two broken ones, which
    fail without a process) count as one describe each; the bar shows them on a terminal."""
    from benchbook.runner.plugin_host.discovery import MANIFEST, in_process_plugins

    folders = api.project.root / "plugins"
    for name in ("broken-a", "broken-b"):
        (folders / name).mkdir(parents=True, exist_ok=True)
        (folders / name / MANIFEST).write_text("not = [toml\n")
    total = len(in_process_plugins()) + 2
    settings, seen = Settings(project=str(api.project.root)), Recorder()
    try:
        with reported_to(seen):
            answer = request(settings, "POST", "/api/plugins/refresh", "plugins.refresh_plugins")
        assert answer.status_code == 200 and {"broken-a", "broken-b"} <= set(answer.json()["failed"]), answer.text
        assert seen.calls == [("describing plugins", n, total) for n in range(total + 1)]
        out = io.StringIO()
        request(settings, "POST", "/api/plugins/refresh", "plugins.refresh_plugins",
                console=Console(file=out, force_terminal=True, width=100))
        assert "describing plugins" in out.getvalue() and f"{total}/{total}" in out.getvalue()
    finally:
        for name in ("broken-a", "broken-b"):
            (folders / name / MANIFEST).unlink()
            (folders / name).rmdir()
        request(settings, "POST", "/api/plugins/refresh", "plugins.refresh_plugins")


def test_the_callback_reaches_the_handler_when_the_caller_already_runs_an_event_loop(api: Any) -> None:
    """A command called where a loop already runs (a notebook's cell, a test beside a browser
    driver) sends its request from a thread of its own: the callback must go along (it was lost
    whenever a web test had run before on the same test process)."""
    lab(api)
    settings = Settings(project=str(api.project.root))
    deleted = Recorder()

    async def from_a_running_loop() -> Any:
        with reported_to(deleted):
            return request(settings, "DELETE", "/api/collections/lab/records", "records.delete_records")

    answer = own_loop.run(from_a_running_loop)
    assert answer.status_code == 200 and deleted.calls == [("deleting records", RECORDS, RECORDS)], answer.text
