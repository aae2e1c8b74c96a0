"""`benchbook backup` / `benchbook restore` (issue #13 item 6): a round trip gives back the same
records, history and files, also while a writer keeps creating records through the API. Issue 33:
archives are private whatever the umask, a backup is dated by its snapshot, and its work folder
goes however the backup ends (signals in a real `benchbook backup` process; after a SIGKILL,
`doctor --fix` and the next backup remove it)."""
from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import tarfile
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from benchbook.cli.main import build_cli
from benchbook.maintenance import MaintenanceError, doctor
from benchbook.maintenance import backup as backups
from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_record, make_schema
from tests.waiting import HANG


@pytest.fixture
def target_url(api: Any) -> Iterator[str | None]:
    """For a PostgreSQL project, an empty database to restore into (dropped afterwards)."""
    url = make_url(api.project.database_url)
    if url.get_backend_name() != "postgresql":
        yield None
        return
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    name = f"benchbook_restore_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield url.set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def digest(engine: Engine) -> dict[str, Any]:
    """What a round trip must keep: rows per table, and a checksum of the records, the history
    entries and the stored files, row by row in id order."""
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        _, out["tables"], out["file_shas"] = backups.census(conn)
        for name, sql in {
            "records": "SELECT id, schema_id, parent_id, data, natural_name, deleted_at FROM records ORDER BY id",
            "audit_entries": "SELECT id, action, entity_type, entity_id, changes, old_data, new_data, batch_id "
                             "FROM audit_entries ORDER BY id",
            "files": "SELECT sha256, filename, size FROM files ORDER BY sha256",
        }.items():
            rows = [tuple(str(v) for v in row) for row in conn.execute(text(sql))]
            out[name] = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    return out


def project_digest(project: Project) -> dict[str, Any]:
    engine = create_engine(project.database_url)
    try:
        return digest(engine)
    finally:
        engine.dispose()


def content_shas(files_dir: Path) -> dict[str, str]:
    """sha256 of each content file's bytes, by its name."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files_dir.glob("??/*") if p.is_file()}


def build_some_history(api: Any) -> None:
    make_schema(api, "run", [{"name": "title", "type": "string"}, {"name": "raw", "type": "file"}])
    make_schema(api, "reading", [{"name": "value", "type": "float"}], parent="run")
    make_collection(api, "lab", ["run", "reading"])
    for i in range(5):
        sha = api.ok("POST", "/files", 201, files={"file": (f"raw-{i}.csv", f"depth,value\n{i},{i * 2}\n".encode())})
        run = make_record(api, "lab", "run", {"title": f"run {i}", "raw": sha["sha256"]})
        for j in range(3):
            make_record(api, "lab", "reading", {"value": i + j / 10}, parent=run["id"])
        api.ok("PATCH", f"/records/{run['id']}", json={"data": {"title": f"run {i} (checked)"}})
    api.ok("DELETE", f"/records/{run['id']}", 204, params={"force": "true"})


def test_a_backup_restores_the_same_records_history_and_files(api: Any, tmp_path: Path,
                                                            target_url: str | None) -> None:
    build_some_history(api)
    (api.project.root / "workflows" / "note.yaml").write_text("name: note\n")
    before = project_digest(api.project)
    assert before["tables"]["records"] == 20 and before["tables"]["audit_entries"] > 20
    assert len(before["file_shas"]) == 5

    report = backups.backup(api.project, tmp_path / "lab.tar.gz")
    assert report.tables == before["tables"] and report.files == 5 and not report.unreadable
    restored = backups.restore(tmp_path / "lab.tar.gz", tmp_path / "restored", database_url=target_url)
    assert restored.tables == before["tables"] and restored.files == 5

    project = Project.open(tmp_path / "restored")
    assert project_digest(project) == before
    shas = content_shas(project.files_dir)
    assert set(shas) == before["file_shas"] and all(name == sha for name, sha in shas.items())
    assert (project.root / "workflows" / "note.yaml").read_text() == "name: note\n"
    assert not [f for f in doctor.examine(project) if f.problem]
    if target_url:  # a PostgreSQL backup needs an empty database to go into
        with pytest.raises(MaintenanceError, match="pass --database-url"):
            backups.restore(tmp_path / "lab.tar.gz", tmp_path / "again")
        with pytest.raises(MaintenanceError, match=r"is not empty \(\d+ tables\)"):
            backups.restore(tmp_path / "lab.tar.gz", tmp_path / "again", database_url=target_url)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no work folders left


def test_a_backup_taken_while_a_writer_creates_records_is_one_snapshot(api: Any, tmp_path: Path,
                                                                      target_url: str | None) -> None:
    make_schema(api, "run", [{"name": "title", "type": "string"}, {"name": "raw", "type": "file"}])
    make_schema(api, "reading", [{"name": "value", "type": "float"}], parent="run")
    make_collection(api, "lab", ["run", "reading"])
    created = 0
    progress = threading.Condition()
    stop = threading.Event()
    failures: list[str] = []

    def writer() -> None:
        nonlocal created
        i = 0
        while not stop.is_set():
            i += 1
            sha = api.post("/files", files={"file": (f"f{i}.txt", f"content {i}".encode())}).json()["sha256"]
            r = api.post("/collections/lab/records", json={"schema_name": "run", "data": {"title": f"r{i}", "raw": sha}})
            child = api.post("/collections/lab/records",
                             json={"schema_name": "reading", "data": {"value": i}, "parent_record_id": r.json()["id"]})
            if r.status_code != 201 or child.status_code != 201:
                failures.append(f"{r.status_code} {r.text} / {child.status_code} {child.text}")
                return
            with progress:
                created += 2
                progress.notify_all()

    def wait_for(n: int) -> int:
        with progress:
            assert progress.wait_for(lambda: created >= n or bool(failures), timeout=HANG), "the writer stalled"
            return created

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        at_start = wait_for(20)
        report = backups.backup(api.project, tmp_path / "busy.tar")
        at_end = wait_for(created + 20)  # and the writer went on after it
    finally:
        stop.set()
        thread.join()
    assert not failures, failures
    restored = backups.restore(tmp_path / "busy.tar", tmp_path / "restored", database_url=target_url)
    project = Project.open(tmp_path / "restored")
    in_backup = restored.tables["records"]
    assert at_start <= in_backup <= at_end and restored.tables == report.tables

    engine = create_engine(project.database_url)
    try:
        with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            records = set(conn.scalars(text("SELECT id FROM records")))
            created_by_history = set(conn.scalars(text(
                "SELECT entity_id FROM audit_entries WHERE entity_type = 'record' AND action = 'create'")))
            orphans = conn.scalar(text("SELECT count(*) FROM records c LEFT JOIN records p ON p.id = c.parent_id "
                                       "WHERE c.parent_id IS NOT NULL AND p.id IS NULL"))
            linked = set(conn.scalars(text("SELECT target_id FROM record_links WHERE kind = 'file'")))
    finally:
        engine.dispose()
    assert records == created_by_history  # every record with its history entry, no entry without its record
    assert orphans == 0
    assert linked <= set(content_shas(project.files_dir))  # every file a record uses came along


def run(*args: str) -> Any:
    return CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


def test_the_commands_keep_the_secrets_out_unless_asked(tmp_project: Project, tmp_path: Path) -> None:
    root = str(tmp_project.root)
    assert run("--project", root, "init").exit_code == 0
    secrets = tmp_project.root / ".secrets.toml"
    secrets.write_text('[ai]\napi_key = "sk-test"\n')
    secrets.chmod(0o600)
    out = run("--project", root, "backup", str(tmp_path / "plain.tar"))
    assert out.exit_code == 0 and "sqlite database at revision" in out.output
    with tarfile.open(tmp_path / "plain.tar") as tar:
        names = tar.getnames()
    assert "benchbook.db" in names and "benchbook.toml" in names and ".secrets.toml" not in names
    assert run("--project", root, "backup", "--with-secrets", str(tmp_path / "all.tgz")).exit_code == 0
    out = run("restore", str(tmp_path / "all.tgz"), str(tmp_path / "copy"))
    assert out.exit_code == 0, out.output
    copied = tmp_path / "copy" / ".secrets.toml"
    assert copied.read_text() == secrets.read_text() and stat.S_IMODE(copied.stat().st_mode) == 0o600
    # refusals: an existing backup file, a non-empty target folder, a file that is no backup
    out = run("--project", root, "backup", str(tmp_path / "plain.tar"))
    assert out.exit_code == 1 and "exists already" in out.output
    out = run("restore", str(tmp_path / "plain.tar"), str(tmp_path / "copy"))
    assert out.exit_code == 1 and "not an empty folder" in out.output
    (tmp_path / "junk.tar").write_bytes(b"not a tar archive")
    out = run("restore", str(tmp_path / "junk.tar"), str(tmp_path / "other"))
    assert out.exit_code == 1 and "not a readable backup archive" in out.output
    assert not (tmp_path / "other").exists()


def test_a_damaged_file_in_a_backup_fails_the_restore_and_leaves_nothing(tmp_project: Project,
                                                                       tmp_path: Path) -> None:
    run("--project", str(tmp_project.root), "init")
    (tmp_path / "a.txt").write_text("payload")
    out = run("--project", str(tmp_project.root), "files", "upload", "--file", str(tmp_path / "a.txt"))
    sha = json.loads(out.output)["sha256"]
    backups.backup(tmp_project, tmp_path / "b.tar")
    with tarfile.open(tmp_path / "b.tar") as src, tarfile.open(tmp_path / "bad.tar", "w") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read() if member.isfile() else None  # type: ignore[union-attr]
            if member.name.endswith(sha):
                data = b"tampered"
                member.size = len(data)
            dst.addfile(member, None if data is None else io.BytesIO(data))
    with pytest.raises(MaintenanceError, match="missing or damaged"):
        backups.restore(tmp_path / "bad.tar", tmp_path / "restored")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.tar", "bad.tar", "project"]


@pytest.mark.parametrize("member", ["../outside.txt", "/etc/benchbook-was-here", "link"])
def test_a_restore_refuses_members_that_would_leave_the_folder(tmp_path: Path, member: str) -> None:
    manifest = json.dumps({"format": 1, "database": "sqlite", "tables": {}, "files": []}).encode()
    with tarfile.open(tmp_path / "evil.tar", "w") as tar:
        for name, data in ((member, b"x"), ("backup.json", manifest)):
            info = tarfile.TarInfo(name)
            if name == "link":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    with pytest.raises(MaintenanceError, match="which a benchbook backup never does"):
        backups.restore(tmp_path / "evil.tar", tmp_path / "restored")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar"]


def test_a_sqlite_copy_is_made_while_a_transaction_is_open(tmp_project: Project, tmp_path: Path) -> None:
    """The online backup copies what is committed; an open write transaction is not in it."""
    run("--project", str(tmp_project.root), "init")
    db = tmp_project.root / "benchbook.db"
    writer = sqlite3.connect(db)
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO audit_batches (id, kind, created_at) VALUES ('uncommitted', 'server', '2026-01-01')")
        report = backups.backup(tmp_project, tmp_path / "b.tar")
    finally:
        writer.rollback()
        writer.close()
    assert report.tables["audit_batches"] == 0


def test_postgresql_backups_need_pg_dump(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump there
    project = Project(root=tmp_path, settings={"database": {"url": "postgresql+psycopg://u@127.0.0.1:1/none"}})
    with pytest.raises(MaintenanceError, match="pg_dump is not on PATH: install the PostgreSQL client tools"):
        backups.backup(project, tmp_path / "b.tar")
    assert os.listdir(tmp_path) == []


def test_what_backup_and_restore_refuse(tmp_project: Project, tmp_path: Path) -> None:
    run("--project", str(tmp_project.root), "init")
    cases = [
        (lambda: backups.backup(tmp_project, tmp_project.files_dir / "b.tar"), "which the backup archives"),
        (lambda: backups.backup(tmp_project, tmp_path / "no-such-folder" / "b.tar"), "is not a folder"),
        (lambda: backups.backup(Project(root=tmp_path, settings={"database": {"url": "mysql://u@h/db"}}),
                                tmp_path / "m.tar"), "cannot back up a mysql database"),
        (lambda: backups.backup(Project(root=tmp_path, settings={"database": {"url": f"sqlite:///{tmp_path}/x.db"}}),
                                tmp_path / "x.tar"), "no database at"),
        (lambda: backups.restore(tmp_path / "missing.tar", tmp_path / "r"), "no backup at"),
    ]
    for call, message in cases:
        with pytest.raises(MaintenanceError, match=message):
            call()
    backups.backup(tmp_project, tmp_path / "good.tar")
    with pytest.raises(MaintenanceError, match="only applies to PostgreSQL backups"):
        backups.restore(tmp_path / "good.tar", tmp_path / "r", database_url="postgresql+psycopg://u@h/db")
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(MaintenanceError, match="not an empty folder"):
        backups.restore(tmp_path / "good.tar", tmp_path / "a-file")
    for name, manifest in [("none.tar", None), ("newer.tar", {"format": 99, "benchbook": "9.0", "database": "sqlite",
                                                            "tables": {}, "files": []})]:
        with tarfile.open(tmp_path / name, "w") as tar:
            if manifest is not None:
                data = json.dumps(manifest).encode()
                info = tarfile.TarInfo("backup.json")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    with pytest.raises(MaintenanceError, match="is not a benchbook backup"):
        backups.restore(tmp_path / "none.tar", tmp_path / "r")
    with pytest.raises(MaintenanceError, match=r"written by a newer benchbook \(9.0\)"):
        backups.restore(tmp_path / "newer.tar", tmp_path / "r")
    assert not (tmp_path / "r").exists()


def test_content_a_backup_cannot_read_is_reported_and_the_restore_uses_its_own_database(
        tmp_project: Project, tmp_path: Path) -> None:
    root = str(tmp_project.root)
    run("--project", root, "init")
    shas = []
    for name in ("gone.txt", "damaged.txt"):
        (tmp_path / name).write_text(f"content of {name}")
        shas.append(json.loads(run("--project", root, "files", "upload", "--file", str(tmp_path / name)).output)["sha256"])
    gone, damaged = shas
    (tmp_project.files_dir / gone[:2] / gone).unlink()
    (tmp_project.files_dir / damaged[:2] / damaged).write_text("bit rot, and longer than before")
    config = tmp_project.root / "benchbook.toml"  # the database named explicitly
    config.write_text(config.read_text().replace("[database]", f'[database]\nurl = "{tmp_project.database_url}"'))
    out = run("--project", root, "backup", str(tmp_path / "b.tar"))
    assert out.exit_code == 0, out.output
    assert f"warning: file {gone} was not archived: missing from the files folder" in out.output
    assert f"warning: file {damaged} was not archived: its content does not match its sha256" in out.output
    findings = [f.message for f in doctor.examine(tmp_project) if f.check == "files" and f.severity == "error"]
    assert any(gone in m and "missing" in m for m in findings) and any(damaged in m and "damaged" in m for m in findings)
    report = backups.restore(tmp_path / "b.tar", tmp_path / "r")
    assert report.files == 0 and report.tables["files"] == 2
    restored = Project.open(tmp_path / "r")
    assert "url" not in restored.settings.get("database", {})
    assert restored.database_url == f"sqlite:///{tmp_path / 'r' / 'benchbook.db'}"


BENCHBOOK = [sys.executable, "-c", "from benchbook.cli.main import main; main()"]
PAUSED = """
import signal, sys
from benchbook.cli.main import main
from benchbook.maintenance import backup as backups

for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # as from a terminal, whatever started the tests
    if signal.getsignal(signum) is signal.SIG_IGN:
        signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
snapshot = backups.sqlite_snapshot


def paused(*args, **kwargs):
    found = snapshot(*args, **kwargs)
    print("snapshot taken", flush=True)
    sys.stdin.readline()
    return found


backups.sqlite_snapshot = paused
main()
"""
"""`benchbook backup` that stops once its snapshot is written (in its work folder), says so on
stdout and goes on when a line arrives on stdin: the point where it is killed in the tests."""


def paused_backup(project: Project, archive: Path) -> subprocess.Popen[str]:
    """A real `benchbook backup` process, returned once it waits after its snapshot."""
    proc = subprocess.Popen([sys.executable, "-c", PAUSED, "--project", str(project.root), "backup", str(archive)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line != "snapshot taken\n":
        _, err = proc.communicate()
        raise AssertionError(f"the backup did not reach its snapshot: {line!r} {err}")
    return proc


def work_folders(folder: Path) -> list[Path]:
    return sorted(folder.glob(".benchbook-backup-*"))


def test_backups_are_readable_by_their_owner_only_whatever_the_umask(tmp_project: Project, tmp_path: Path) -> None:
    root = str(tmp_project.root)
    assert run("--project", root, "init").exit_code == 0
    (tmp_project.root / ".secrets.toml").write_text('[ai]\napi_key = "sk-test"\n')
    (tmp_project.root / ".secrets.toml").chmod(0o600)
    for umask in (0o022, 0o000):
        for extra, name in (((), f"plain-{umask:o}.tar"), (("--with-secrets",), f"all-{umask:o}.tgz")):
            done = subprocess.run([*BENCHBOOK, "--project", root, "backup", *extra, str(tmp_path / name)],
                                  umask=umask, capture_output=True, text=True, check=False)
            assert done.returncode == 0, done.stderr
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, (umask, name)
    with tarfile.open(tmp_path / "all-22.tgz") as tar:
        assert ".secrets.toml" in tar.getnames()


def test_a_backup_is_dated_when_its_snapshot_was_taken(api: Any, tmp_path: Path, target_url: str | None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    make_schema(api, "run", [{"name": "title", "type": "string"}])
    name = "sqlite_snapshot" if make_url(api.project.database_url).get_backend_name() == "sqlite" else "pg_snapshot"
    snapshot = getattr(backups, name)
    after_snapshot: list[datetime] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        found = snapshot(*args, **kwargs)
        after_snapshot.append(datetime.now(UTC))
        return found

    monkeypatch.setattr(backups, name, timed)
    before = datetime.now(UTC)
    report = backups.backup(api.project, tmp_path / "b.tar")
    with tarfile.open(tmp_path / "b.tar") as tar:
        manifest = json.load(tar.extractfile("backup.json"))  # type: ignore[arg-type]
    created = datetime.fromisoformat(manifest["created_at"])
    assert before <= created <= after_snapshot[0] and report.created_at == created
    out = run("restore", str(tmp_path / "b.tar"), str(tmp_path / "r"), *(["--database-url", target_url]
                                                                        if target_url else []))
    assert out.exit_code == 0 and f"restored the backup of {manifest['created_at']}" in out.output, out.output


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 1)])
def test_a_backup_stopped_by_a_signal_removes_its_work_folder(tmp_project: Project, tmp_path: Path,
                                                              signum: int, status: int) -> None:
    run("--project", str(tmp_project.root), "init")
    target = tmp_path / "backups"
    target.mkdir()
    proc = paused_backup(tmp_project, target / "b.tar")
    [work] = work_folders(target)
    assert (work / "benchbook.db").stat().st_size > 0
    proc.send_signal(signum)
    _, err = proc.communicate()
    assert proc.returncode == status, err
    assert list(target.iterdir()) == [] and work_folders(tmp_project.root) == []


def test_a_killed_backup_leaves_a_work_folder_that_doctor_and_the_next_backup_remove(tmp_project: Project,
                                                                                     tmp_path: Path) -> None:
    root = str(tmp_project.root)
    run("--project", root, "init")
    target = tmp_path / "backups"
    target.mkdir()
    first = paused_backup(tmp_project, target / "first.tar")
    try:
        [work] = work_folders(target)
        # while it runs, neither doctor --fix nor another backup to the same folder touches its folder
        out = run("--project", root, "doctor", "--fix")
        assert out.exit_code == 0 and f"{work} is the work folder of a backup running now (pid {first.pid}" in out.output
        assert backups.backup(tmp_project, target / "beside.tar").swept == [] and work.is_dir()
        first.kill()  # SIGKILL: nothing runs in the process any more
    finally:
        first.kill()
        first.communicate()
    assert (work / "benchbook.db").is_file() and (tmp_project.root / f"{work.name}.json").is_file()
    out = run("--project", root, "doctor")
    assert out.exit_code == 1 and "WARNING backups     1 work folder(s) of backups that were killed" in out.output
    assert str(work) in out.output and work.is_dir()
    out = run("--project", root, "doctor", "--fix")
    assert out.exit_code == 0 and "done: removed 1 work folder(s)" in out.output, out.output
    assert not work.exists() and work_folders(tmp_project.root) == []

    second = paused_backup(tmp_project, target / "second.tar")
    [work] = work_folders(target)
    second.kill()
    second.communicate()
    out = run("--project", root, "backup", str(target / "next.tar"))
    assert out.exit_code == 0 and f"removed {work}, the work folder of a backup that was killed" in out.output
    assert sorted(p.name for p in target.iterdir()) == ["beside.tar", "next.tar"]
    assert work_folders(tmp_project.root) == []
