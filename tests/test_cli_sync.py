"""Sync on the command line (issue 34): ``benchbook clone`` from an authority served on loopback
(over TLS too), ``benchbook remote sync``'s bar, summary table and open-rows line, in-process and
with ``--url``, and the folder clone leaves as it found it when it fails."""
from __future__ import annotations

import io
import json
import re
import ssl
import stat
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from rich.console import Console
from sqlalchemy import select

from benchbook.cli import sync as cli_sync
from benchbook.cli.main import build_cli
from benchbook.cli.progress import bar
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import Record
from benchbook.settings.config import Project
from tests import patient_http
from tests.api.helpers import make_collection, make_record, make_schema
from tests.live_server import live_server, self_signed_certificate
from tests.sync.conftest import Lab, Side

FIELDS = [{"name": "code", "type": "string", "required": True}, {"name": "site", "type": "string"}]


@pytest.fixture
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    """Projects served on loopback in threads (tests/sync/conftest.py)."""
    with ExitStack() as stack:
        yield Lab(request, tmp_path, stack)


def _authority(lab: Lab) -> tuple[Side, list[dict[str, Any]]]:
    """An authority holding a schema, a collection and three records (its served side, the records)."""
    authority = lab.project("authority")
    make_schema(authority, "sample", FIELDS, display_template="{code}")
    make_collection(authority, "lake", ["sample"])
    return authority, [make_record(authority, "lake", "sample", {"code": f"S{i}", "site": "North"}) for i in range(3)]


def _invite(authority: Side, name: str) -> str:
    return str(authority.ok("POST", "/sync/devices", 201, json={"name": name})["invite"])


def cli(*args: str, project: Path | None = None) -> Result:
    """``benchbook [--project project] args…`` in this process."""
    prefix = ["--project", str(project)] if project is not None else []
    return CliRunner().invoke(build_cli(), [*prefix, *args], catch_exceptions=False)


def records_of(root: Path) -> dict[str, dict[str, Any]]:
    """The live records of the project at ``root``: ``{id: data}`` (values keyed by field id, the
    same in every copy), read from its database."""
    db = open_database(Project.open(root).database_url)
    try:
        with db.session() as s:
            return {r.id: dict(r.data) for r in s.scalars(select(Record)) if r.deleted_at is None}
    finally:
        db.engine.dispose()


def table_row(text: str, label: str) -> int:
    """The count the summary table shows on the row ``label`` (fails when there is no such row)."""
    found = re.search(rf"^\W*{re.escape(label)}\W+(\d+)\W*$", text, re.MULTILINE)
    assert found, f"no row {label!r} in:\n{text}"
    return int(found.group(1))


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100), out


# ------------------------------------------------------------------------------------ clone

def test_clone_copies_the_authority_and_says_what_next(lab: Lab, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A new folder becomes a project holding the authority's records (same ids, same values),
    following it with its token kept 0600; the bar follows the copy to the authority's head; the
    output is the summary table and the next steps."""
    authority, made = _authority(lab)
    console, drawn = terminal()
    monkeypatch.setattr(cli_sync, "_stderr", lambda: console)
    monkeypatch.chdir(tmp_path)
    result = cli("clone", authority.url, "lake-lab", "--invite", _invite(authority, "laptop"))
    assert result.exit_code == 0, result.output
    root = tmp_path / "lake-lab"
    assert (root / "benchbook.toml").is_file() and (root / "files").is_dir() and (root / "workflows").is_dir()
    copied = records_of(root)
    assert set(copied) == {r["id"] for r in made}
    assert copied == records_of(authority.root)
    token = root / ".sync-token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert table_row(result.stdout, "pulled") >= 5  # a schema, a collection, three records
    assert table_row(result.stdout, "pushed") == 0 and table_row(result.stdout, "conflicts") == 0
    assert "as device laptop" in result.stdout
    assert "cd lake-lab && benchbook serve" in result.stdout
    assert "benchbook remote sync" in result.stdout
    assert "list-conflicts" not in result.stdout  # nothing waits to be resolved
    shown = drawn.getvalue()
    head = authority.ok("GET", "/sync/devices")  # the authority knows the device now
    assert [(d["name"], d["state"]) for d in head] == [("laptop", "joined")]
    assert "pull entries" in shown  # the copy is the first sync's pull, drawn as remote sync draws it
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)  # the terminal's colour and cursor codes out
    assert re.search(r"copy records\D*3/3", plain), plain  # the three records, counted against the snapshot's total
    counts = re.findall(r"(\d+)/(\d+)", shown)
    assert counts and counts[-1][0] == counts[-1][1] and int(counts[-1][0]) >= 5, shown
    # the clone answers as any device does
    listed = cli("records", "list", "lake", project=root)
    assert listed.exit_code == 0 and all(f'"S{i}"' in listed.stdout for i in range(3)), listed.output
    status = json.loads(cli("remote", "get", project=root).stdout)
    assert status["connected"] and status["device"] == "laptop" and status["url"] == authority.url


def test_clone_json_prints_the_status_and_summary(lab: Lab, tmp_path: Path) -> None:
    authority, _ = _authority(lab)
    result = cli("clone", authority.url + "/api/", str(tmp_path / "copy"), "--invite", _invite(authority, "field"),
                 "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer["device"] == "field" and answer["url"] == authority.url and answer["connected"] is True
    assert set(answer["summary"]) == {"pushed", "pulled", "conflicts", "rejected", "files_sent", "files_received"}


def test_clone_into_a_folder_holding_anything_is_refused_untouched(lab: Lab, tmp_path: Path) -> None:
    authority, _ = _authority(lab)
    invite = _invite(authority, "laptop")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    refused = cli("clone", authority.url, str(busy), "--invite", invite)
    assert refused.exit_code == 2, refused.output
    assert "is not empty: clone makes a new project, in a new or empty folder" in refused.stderr
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    refused = cli("clone", authority.url, str(a_file), "--invite", invite)
    assert refused.exit_code == 2 and "exists and is not a folder" in refused.stderr
    refused = cli("clone", "lab.example.org", str(tmp_path / "new"), "--invite", invite)
    assert refused.exit_code == 2 and "is not an http:// or https:// address" in refused.stderr
    assert not (tmp_path / "new").exists()
    # the invite was never used: it still joins
    assert cli("clone", authority.url, str(tmp_path / "new"), "--invite", invite).exit_code == 0


def test_a_failed_clone_leaves_nothing_behind(lab: Lab, tmp_path: Path) -> None:
    """A refused invite: the folder clone made is removed, an empty one it was given is empty
    again, and the error is the authority's, saying the invite was not used."""
    authority, _ = _authority(lab)
    gone = tmp_path / "gone"
    failed = cli("clone", authority.url, str(gone), "--invite", "bbi_not-an-invite")
    assert failed.exit_code == 1, failed.output
    assert re.match(r"error 4\d\d: the authority at .* answered 4\d\d", failed.stderr), failed.stderr
    assert "nothing was cloned" in failed.stderr and "was removed" in failed.stderr
    assert "The invite was not used" in failed.stderr
    assert not gone.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    failed = cli("clone", authority.url, str(empty), "--invite", "bbi_not-an-invite")
    assert failed.exit_code == 1 and "was emptied again" in failed.stderr
    assert empty.is_dir() and list(empty.iterdir()) == []
    # nobody answers there at all
    unreachable = cli("clone", "http://127.0.0.1:9", str(gone), "--invite", _invite(authority, "laptop"))
    assert unreachable.exit_code == 1 and "error 502: the authority at http://127.0.0.1:9 cannot be reached" \
        in unreachable.stderr, unreachable.stderr
    assert not gone.exists()


def test_clone_over_tls_from_a_served_authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``benchbook serve --ssl-certfile --ssl-keyfile`` as the authority, a device cloning it at
    https:// and trusting its self-signed certificate through ``SSL_CERT_FILE`` (docs/sync.md,
    *Setting up*)."""
    cert, key = self_signed_certificate(tmp_path)
    with live_server(tmp_path / "authority", tmp_path / "server.log", https_ca=cert,
                     args=["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]) as live:
        trusted = ssl.create_default_context(cafile=str(cert))
        with patient_http.Client(base_url=live.base + "/api", verify=trusted) as http:
            assert http.post("/collections", json={"name": "lake"}).status_code == 201
            invite = http.post("/sync/devices", json={"name": "laptop"}).json()["invite"]
        untrusted = cli("clone", live.base, str(tmp_path / "refused"), "--invite", invite)
        assert untrusted.exit_code == 1 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr, untrusted.output
        assert "The invite was not used" in untrusted.stderr and not (tmp_path / "refused").exists()
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        result = cli("clone", live.base, str(tmp_path / "device"), "--invite", invite)
        assert result.exit_code == 0, result.output
    listed = json.loads(cli("collections", "list", project=tmp_path / "device").stdout)
    assert [c["name"] for c in listed] == ["lake"]


# ------------------------------------------------------------------------------ remote sync

def test_the_bar_draws_each_stage_as_the_sync_goes() -> None:
    console, drawn = terminal()
    with bar(console) as progress:
        draw = cli_sync.SyncBar(progress)
        for stage, done, total in [("pull", 2, 5), ("pull", 5, 5), ("push", 1, 3), ("push", 3, 3), ("pull", 4, 4),
                                   ("pull", 1, 1)]:
            draw(stage, done, total)
        assert [(t.description, t.completed, t.total) for t in progress.tasks] == [
            ("pull entries", 5, 5), ("push entries", 3, 3), ("pull entries", 4, 4), ("pull entries", 1, 1)]
    shown = drawn.getvalue()
    assert "2/5" in shown and "5/5" in shown and "1/3" in shown and "3/3" in shown and "4/4" in shown


def test_remote_sync_shows_the_bar_the_table_and_the_rows_to_resolve(lab: Lab, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """After a change at the authority, ``remote sync`` pulls it (bar and table); after an edit of
    the same field on both sides it pushes one entry that meets a conflict, and says how to
    list the row; ``--json`` prints the plain summary."""
    authority, made = _authority(lab)
    device = tmp_path / "device"
    assert cli("clone", authority.url, str(device), "--invite", _invite(authority, "laptop")).exit_code == 0
    first = made[0]["id"]
    authority.ok("PATCH", f"/records/{first}", json={"data": {"site": "South"}})
    console, drawn = terminal()
    monkeypatch.setattr(cli_sync, "_stderr", lambda: console)
    pulled = cli("remote", "sync", project=device)
    assert pulled.exit_code == 0, pulled.output
    assert table_row(pulled.stdout, "pulled") == 1 and table_row(pulled.stdout, "pushed") == 0
    for label in ("conflicts", "rejected", "files sent", "files received"):
        assert table_row(pulled.stdout, label) == 0
    assert f"synced with {authority.url}" in pulled.stdout
    assert "list-conflicts" not in pulled.stdout
    assert "pull entries" in drawn.getvalue() and "1/1" in drawn.getvalue(), drawn.getvalue()
    assert json.loads(cli("records", "get", first, project=device).stdout)["data"]["site"] == "South"
    # the same field on both sides: one entry pushed, a conflict row, the line saying how to list it
    edited = cli("records", "update", first, "--data", '{"site": "East"}', project=device)
    assert edited.exit_code == 0, edited.output
    authority.ok("PATCH", f"/records/{first}", json={"data": {"site": "West"}})
    drawn.truncate(0)
    clashed = cli("remote", "sync", project=device)
    assert clashed.exit_code == 0, clashed.output
    assert table_row(clashed.stdout, "pushed") == 1 and table_row(clashed.stdout, "conflicts") == 1
    assert table_row(clashed.stdout, "pulled") == 1
    flat = " ".join(clashed.stdout.split())
    assert "1 row waits to be resolved" in flat and "`benchbook remote list-conflicts` lists them" in flat
    assert "push entries" in drawn.getvalue() and "pull entries" in drawn.getvalue()
    rows = json.loads(cli("remote", "list-conflicts", project=device).stdout)
    assert [(r["kind"], r["yours"], r["theirs"]) for r in rows] == [("conflict", "East", "West")]
    # --json: the summary as the API answers it, nothing else on stdout
    plain = cli("remote", "sync", "--json", project=device)
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.stdout) == {"pushed": 0, "pulled": 0, "conflicts": 0, "rejected": 0, "files_sent": 0,
                                        "files_received": 0}


def test_remote_sync_of_a_project_following_nothing_is_the_api_s_409(tmp_project: Project) -> None:
    result = cli("remote", "sync", project=tmp_project.root)
    assert result.exit_code == 1
    assert result.stderr.startswith("error 409: this project follows no authority"), result.stderr
    assert result.stdout == ""


def test_remote_sync_with_url_asks_the_running_server(lab: Lab) -> None:
    """``--url``: the device's server syncs; the table is made from its answer, the open rows
    from its ``GET /remote``; ``--json`` prints its answer as the generated command does."""
    authority, made = _authority(lab)
    device = lab.follow(authority, "laptop")
    make_record(authority, "lake", "sample", {"code": "S9"})
    result = cli("--url", device.url, "remote", "sync")
    assert result.exit_code == 0, result.output
    assert table_row(result.stdout, "pulled") == 1 and table_row(result.stdout, "pushed") == 0
    assert f"synced with {authority.url} (by {device.url})" in result.stdout
    device.ok("PATCH", f"/records/{made[1]['id']}", json={"data": {"site": "East"}})
    authority.ok("PATCH", f"/records/{made[1]['id']}", json={"data": {"site": "West"}})
    clashed = cli("--url", device.url, "remote", "sync")
    assert table_row(clashed.stdout, "conflicts") == 1 and "benchbook remote list-conflicts" in clashed.stdout
    plain = cli("--url", device.url, "remote", "sync", "--json")
    assert plain.exit_code == 0 and json.loads(plain.stdout)["pushed"] == 0
    authority.ok("POST", "/sync/devices/laptop/revoke")
    refused = cli("--url", device.url, "remote", "sync")
    assert refused.exit_code == 1 and refused.stderr.startswith("error 401: "), refused.stderr


def test_a_clone_whose_copy_stops_after_the_join_keeps_the_folder_and_finishes_with_remote_sync(
        lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchbook.domain.errors import BadGateway
    from benchbook.remote import syncing

    authority, made = _authority(lab)
    real = syncing.sync

    def dropped(*args: Any, **kwargs: Any) -> Any:
        raise BadGateway("the authority at … cannot be reached: the connection dropped")

    monkeypatch.setattr(syncing, "sync", dropped)
    target = tmp_path / "kept"
    failed = cli("clone", authority.url, str(target), "--invite", _invite(authority, "laptop"))
    assert failed.exit_code == 1 and "the join worked but the copy stopped" in failed.stderr, failed.output
    assert "benchbook remote sync" in failed.stderr
    assert (target / ".sync-token").is_file()  # joined, kept
    monkeypatch.setattr(syncing, "sync", real)
    finished = cli("remote", "sync", "--json", project=target)
    assert finished.exit_code == 0, finished.output
    assert set(records_of(target)) == {r["id"] for r in made}
