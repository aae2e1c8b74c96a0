"""`benchbook doctor` (issue #13 item 7): findings with how to fix them, `--fix` for the safe ones."""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from click.testing import CliRunner
from sqlalchemy import select, text

from benchbook.cli.main import build_cli
from benchbook.domain.ids import new_id
from benchbook.maintenance import backup_work, doctor
from benchbook.persistence import audit_days, entry_triggers, record_counts
from benchbook.persistence.db import alembic_config, open_database
from benchbook.persistence.field_indexes import field_index_name
from benchbook.persistence.tables import EDITS_INDEX, AuditEntry, Job, utcnow
from benchbook.runner import queue
from benchbook.settings.config import Project


def run(project: Project, *args: str) -> Any:
    return CliRunner().invoke(build_cli(), ["--project", str(project.root), *args], catch_exceptions=False)


def api_json(project: Project, *args: str) -> Any:
    out = run(project, *args)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def add_job(project: Project, status: str) -> str:
    db = open_database(project.database_url)
    try:
        with db.session() as s, s.begin():
            job = Job(id=new_id(), workflow_name="wf", record_id=new_id(), schema_name="run", trigger="manual",
                      status=status, created_at=utcnow(), started_at=utcnow(), problems=0, inputs={},
                      cancel_requested=False, depth=0, step_executions=[{"step": "a", "status": "completed"}])
            s.add(job)
        return job.id
    finally:
        db.engine.dispose()


def job(project: Project, job_id: str) -> Job:
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            found = s.get(Job, job_id)
            assert found is not None
            return found
    finally:
        db.engine.dispose()


def old(path: Path) -> Path:
    then = time.time() - doctor.GRACE - 60
    os.utime(path, (then, then))
    return path


def test_doctor_finds_and_fixes_a_missing_file_and_a_stuck_run(tmp_project: Project, tmp_path: Path) -> None:
    p = tmp_project
    run(p, "init")
    assert run(p, "doctor").exit_code == 0  # a fresh project is healthy
    out = run(p, "doctor", "--quick")
    assert out.exit_code == 0 and "PRAGMA quick_check: ok" in out.output
    api_json(p, "schemas", "create", "--name", "run", "--fields", '[{"name": "raw", "type": "file"}]')
    api_json(p, "collections", "create", "--name", "c", "--schemas", '["run"]')
    (tmp_path / "raw.csv").write_bytes(b"depth,value\n1,2\n")
    (tmp_path / "spare.bin").write_bytes(b"kept: recorded, though no record holds it")
    used = api_json(p, "files", "upload", "--file", str(tmp_path / "raw.csv"))["sha256"]
    spare = api_json(p, "files", "upload", "--file", str(tmp_path / "spare.bin"))["sha256"]
    api_json(p, "records", "create", "c", "--schema-name", "run", "--data", json.dumps({"raw": used}))
    # the damage: a used file's content gone, a run left running by a process that died, a
    # world-readable secrets file, an old temporary upload, old content no row knows
    (p.files_dir / used[:2] / used).unlink()
    stuck = add_job(p, "running")
    secrets = p.root / ".secrets.toml"
    secrets.write_text('[ai]\napi_key = "sk-test"\n')
    secrets.chmod(0o644)
    temp = p.files_dir / ".upload-abandoned"
    temp.write_bytes(b"half an upload")
    old(temp)
    stray_sha = "ab" * 32
    (p.files_dir / "ab").mkdir(exist_ok=True)
    stray = p.files_dir / "ab" / stray_sha
    stray.write_bytes(b"content of a rolled-back upload")
    old(stray)
    fresh_temp = p.files_dir / ".upload-in-flight"  # young: an upload may be on its way in
    fresh_temp.write_bytes(b"arriving")

    out = run(p, "doctor")
    assert out.exit_code == 1, out.output
    text_ = out.output
    assert f"file {used} (raw.csv, used by 1 record(s)) is missing" in text_
    assert "fix: upload the same content again" in text_
    assert "1 run(s) left running with no worker holding the run queue" in text_ and stuck in text_
    assert ".secrets.toml has mode 0644" in text_ and "fix: chmod 600" in text_
    assert ".upload-abandoned" in text_ and ".upload-in-flight" not in text_
    assert stray_sha in text_
    assert f"1 stored file(s) no record holds: {spare[:12]}" in text_
    assert "`benchbook doctor --fix` fixes 4 of them" in text_
    assert job(p, stuck).status == "running" and stat.S_IMODE(secrets.stat().st_mode) == 0o644  # nothing changed
    assert temp.exists() and stray.exists()

    out = run(p, "doctor", "--fix")
    assert out.exit_code == 1, out.output  # the missing file is not something doctor can make
    assert "done: marked 1 run(s) failed (interrupted)" in out.output
    assert "1 problem(s) left, 4 fixed" in out.output
    fixed = job(p, stuck)
    assert fixed.status == "failed" and fixed.finished_at is not None
    assert fixed.error_details is not None and fixed.error_details["kind"] == "interrupted"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert not temp.exists() and not stray.exists()
    assert fresh_temp.exists()  # too young to be touched
    assert (p.files_dir / spare[:2] / spare).exists()  # recorded: never deleted

    # the fix it printed: upload the same content again
    assert api_json(p, "files", "upload", "--file", str(tmp_path / "raw.csv"))["sha256"] == used
    out = run(p, "doctor")
    assert out.exit_code == 0, out.output
    assert "0 problem(s) left" in out.output


def test_runs_a_live_worker_holds_are_not_stuck(tmp_project: Project) -> None:
    run(tmp_project, "init")
    running = add_job(tmp_project, "running")
    db = open_database(tmp_project.database_url)
    try:
        assert queue.acquire(db.engine, "server:1234:live", 60.0) == (True, True)
        findings = doctor.examine(tmp_project, fix=True)
        runs = [f for f in findings if f.check == "runs"]
        assert [f.severity for f in runs] == ["ok"] and "under the worker server:1234:live" in runs[0].message
        assert job(tmp_project, running).status == "running"
        # once that lease has expired (its holder stopped renewing), the run is stuck
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE worker_leases SET expires_at = :t"), {"t": utcnow() - timedelta(minutes=5)})
        findings = doctor.examine(tmp_project, fix=True)
        assert [f.fixed for f in findings if f.check == "runs"] == ["marked 1 run(s) failed (interrupted)"]
        assert job(tmp_project, running).status == "failed"
    finally:
        db.engine.dispose()


def test_migrations_behind_are_upgraded_and_ahead_are_reported(tmp_project: Project) -> None:
    run(tmp_project, "init")
    db = open_database(tmp_project.database_url)
    try:
        cfg = alembic_config(tmp_project.database_url)
        with db.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "-1")
        behind = [f for f in doctor.examine(tmp_project) if f.check == "migrations"]
        assert [f.severity for f in behind] == ["warning"] and "the newest is" in behind[0].message
        fixed = [f for f in doctor.examine(tmp_project, fix=True) if f.check == "migrations"]
        assert fixed[0].fixed == "upgraded the database to the newest revision"
        assert [f.severity for f in doctor.examine(tmp_project) if f.check == "migrations"] == ["ok"]
        with db.engine.begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
        ahead = [f for f in doctor.examine(tmp_project, fix=True) if f.check == "migrations"]
        assert ahead[0].severity == "error" and "does not know" in ahead[0].message and ahead[0].fixed is None
    finally:
        db.engine.dispose()


def test_a_damaged_database_is_an_error_not_a_crash(tmp_project: Project) -> None:
    run(tmp_project, "init")
    path = tmp_project.root / "benchbook.db"
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(2 * page, len(data), page):  # every page after the first two: garbage
        data[offset:offset + 64] = b"\xde\xad\xbe\xef" * 16
    path.write_bytes(bytes(data))
    findings = doctor.examine(tmp_project)
    errors = [f for f in findings if f.severity == "error" and f.check in ("database", "migrations")]
    assert errors and any("restore" in f.fix for f in errors)
    assert run(tmp_project, "doctor").exit_code == 1


def test_doctor_checks_each_backend(api: Any) -> None:
    """The database checks answer on SQLite and PostgreSQL alike, and a missing file is found."""
    content = b"checked on every backend"
    sha = api.ok("POST", "/files", 201, files={"file": ("c.txt", content)})["sha256"]
    findings = doctor.examine(api.project)
    assert [f.severity for f in findings if f.check in ("database", "migrations")] == \
        ["ok"] * len([f for f in findings if f.check in ("database", "migrations")])
    assert not [f for f in findings if f.check == "files" and f.severity == "error"]
    (api.project.files_dir / sha[:2] / sha).unlink()
    missing = [f for f in doctor.examine(api.project) if f.check == "files" and f.severity == "error"]
    assert len(missing) == 1 and sha in missing[0].message
    api.ok("POST", "/files", 201, files={"file": ("c.txt", content)})
    assert not [f for f in doctor.examine(api.project) if f.check == "files" and f.severity == "error"]


@pytest.mark.parametrize("mode", [0o666, 0o646])
def test_a_config_others_may_write_is_made_private(tmp_project: Project, mode: int) -> None:
    config = tmp_project.root / "benchbook.toml"
    config.chmod(mode)
    found = [f for f in doctor.examine(tmp_project, fix=True) if f.check == "permissions" and f.severity != "ok"]
    assert found and found[0].fixed == f"chmod {mode & ~0o022:04o} {config}"
    assert stat.S_IMODE(config.stat().st_mode) == mode & ~0o022


def test_the_wal_open_folders_and_foreign_entries(tmp_project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    run(tmp_project, "init")
    (tmp_project.root / "plugins").chmod(0o777)
    (tmp_project.files_dir / "notes.txt").write_text("someone else's")
    monkeypatch.setattr(doctor, "WAL_NOTE_BYTES", 0)
    db = tmp_project.root / "benchbook.db"
    holder = sqlite3.connect(db)  # an open connection keeps the WAL (as a server does)
    try:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("INSERT INTO audit_batches (id, kind, created_at) VALUES ('b1', 'server', '2026-01-01')")
        holder.commit()
        assert (tmp_project.root / "benchbook.db-wal").stat().st_size > 0
        findings = doctor.examine(tmp_project, fix=True)
    finally:
        holder.close()
    wal = [f for f in findings if f.check == "wal"]
    assert wal[0].severity == "note" and wal[0].fixed and "the log is 0 bytes now" in wal[0].fixed
    opened = [f for f in findings if f.check == "permissions" and "plugins" in f.message]
    assert opened[0].severity == "warning" and opened[0].fixed == f"chmod 0775 {tmp_project.root / 'plugins'}"
    assert stat.S_IMODE((tmp_project.root / "plugins").stat().st_mode) == 0o775
    foreign = [f for f in findings if f.check == "files" and "not benchbook's" in f.message]
    assert foreign[0].severity == "note" and "notes.txt" in foreign[0].message
    assert (tmp_project.files_dir / "notes.txt").exists()


def test_no_database_is_an_error(tmp_project: Project) -> None:
    (tmp_project.root / "benchbook.db").unlink()  # a project folder whose database was never made
    findings = doctor.examine(tmp_project)
    assert [(f.check, f.severity) for f in findings if f.severity != "ok"] == [("database", "error")]
    assert "benchbook init" in findings[-1].fix
    assert not (tmp_project.root / "benchbook.db").exists()  # doctor made none


def found_and_fixed(project: Project, check: str, repair: str) -> doctor.Finding:
    """The one finding of ``check``, which ``--fix`` then repairs, saying ``repair``."""
    [found] = [f for f in doctor.examine(project) if f.check == check]
    [fixed] = [f for f in doctor.examine(project, fix=True) if f.check == check]
    assert fixed.fixed == repair
    return found


def test_missing_history_triggers_are_found_and_created_again(api: Any) -> None:
    """On each backend: a database without one of the triggers that keep record history (0017)
    is an error, which ``--fix`` repairs, and the trigger then does its work again."""
    engine = api.app.services.db.engine
    assert [f.severity for f in doctor.examine(api.project) if f.check == "history"] == ["ok"]
    drop = entry_triggers.drop_statements("postgresql" if engine.dialect.name == "postgresql" else "sqlite")[0]
    with engine.begin() as conn:
        conn.exec_driver_sql(drop)
    try:
        found = found_and_fixed(api.project, "history", "created the history triggers again")
        assert found.severity == "error" and entry_triggers.TRIGGERS[0] in found.message
    finally:
        with engine.begin() as conn:
            if entry_triggers.present(conn) != set(entry_triggers.TRIGGERS):
                entry_triggers.recreate(conn)
    assert [f.severity for f in doctor.examine(api.project) if f.check == "history"] == ["ok"]
    api.ok("POST", "/schemas", 201, json={"name": "doctored", "fields": [{"name": "v", "type": "integer"}]})
    api.ok("POST", "/collections", 201, json={"name": "doctored", "schemas": ["doctored"]})
    rec = api.ok("POST", "/collections/doctored/records", 201, json={"schema_name": "doctored", "data": {"v": 1}})
    api.ok("PATCH", f"/records/{rec['id']}", json={"data": {"v": 2}})
    with engine.connect() as conn:
        stored = conn.execute(select(AuditEntry.__table__.c.new_data).where(
            AuditEntry.entity_id == rec["id"], AuditEntry.action == "create")).scalar_one()
    assert list(stored["data"].values()) == [1]  # copied in by the trigger created again


def test_kept_record_counts_that_drift_are_counted_afresh(api: Any) -> None:
    """Kept counts (SQLite) that disagree with the records, or miss a trigger, are a warning
    that ``--fix`` repairs."""
    engine = api.app.services.db.engine
    if not record_counts.kept(engine.dialect.name):
        pytest.skip("PostgreSQL counts the records when asked (migration 0019 keeps counts on SQLite)")
    api.ok("POST", "/schemas", 201, json={"name": "counted", "fields": [{"name": "v", "type": "integer"}]})
    api.ok("POST", "/collections", 201, json={"name": "counted", "schemas": ["counted"]})
    for v in range(3):
        api.ok("POST", "/collections/counted/records", 201, json={"schema_name": "counted", "data": {"v": v}})
    assert [f.severity for f in doctor.examine(api.project) if f.check == "counts"] == ["ok"]
    history = api.ok("GET", "/analytics/audit/events", params={"action": "create", "entity_type": "record"})
    drops = [record_counts.drop_statements(engine.dialect.name)[0],
             record_counts.drop_statements(engine.dialect.name, days=True)[0],
             audit_days.drop_statements(engine.dialect.name)[0]]
    with engine.begin() as conn:
        conn.execute(text("UPDATE record_counts SET live = live + 5"))
        conn.execute(text("UPDATE record_days SET created = created + 2"))
        conn.execute(text("UPDATE audit_days SET entries = entries + 1 WHERE action = 'create' "
                          "AND entity_type = 'record'"))
        for drop in drops:
            conn.exec_driver_sql(drop)
    every = {*record_counts.TRIGGERS, *record_counts.DAY_TRIGGERS}
    try:
        found = found_and_fixed(api.project, "counts", "counted the records afresh")
        assert found.severity == "warning"
        assert record_counts.TRIGGERS[0] in found.message and record_counts.DAY_TRIGGERS[0] in found.message
        assert audit_days.TRIGGERS[0] in found.message
        assert "3 kept count(s) differ" in found.message
    finally:
        with engine.begin() as conn:
            if record_counts.present(conn) != every or audit_days.present(conn) != set(audit_days.TRIGGERS):
                record_counts.repair(conn)
                audit_days.repair(conn)
    assert [f.severity for f in doctor.examine(api.project) if f.check == "counts"] == ["ok"]
    assert api.ok("GET", "/collections/counted")["record_count"] == 3
    assert sum(i["count"] for i in api.ok("GET", "/analytics/records/growth")["items"]
               if i["dataset"] == "counted") == 3
    assert api.ok("GET", "/analytics/audit/events", params={"action": "create", "entity_type": "record"}) == history
    api.ok("POST", "/collections/counted/records", 201, json={"schema_name": "counted", "data": {"v": 9}})
    assert sum(i["count"] for i in api.ok("GET", "/analytics/records/growth")["items"]
               if i["dataset"] == "counted") == 4  # the day trigger counts again
    again = api.ok("GET", "/analytics/audit/events", params={"action": "create", "entity_type": "record"})
    assert sum(i["count"] for i in again["items"]) == sum(i["count"] for i in history["items"]) + 1
    assert api.ok("GET", "/collections/counted")["record_count"] == 4  # the trigger counts again


def test_missing_indexes_are_found_and_created_again(api: Any) -> None:
    """On each backend: a model's index and a field's index gone (data intact, queries slow) are
    a warning, which ``--fix`` repairs with the same definitions."""
    engine = api.app.services.db.engine
    api.ok("POST", "/schemas", 201, json={"name": "indexed", "fields": [{"name": "v", "type": "integer"}]})
    with engine.connect() as conn:
        fid = conn.execute(text("SELECT id FROM fields WHERE name = 'v'")).scalar_one()
        before = doctor.present_indexes(conn)
    field_index = field_index_name(fid)
    assert {"ix_records_listing", EDITS_INDEX, field_index} <= before
    assert [f.severity for f in doctor.examine(api.project) if f.check == "indexes"] == ["ok"]
    with engine.begin() as conn:
        for name in ("ix_records_listing", field_index):
            conn.exec_driver_sql(f'DROP INDEX "{name}"')
    found = found_and_fixed(api.project, "indexes", "created 2 index(es) again")
    assert found.severity == "warning" and "ix_records_listing" in found.message and field_index in found.message
    with engine.connect() as conn:
        assert doctor.present_indexes(conn) == before
    assert [f.severity for f in doctor.examine(api.project) if f.check == "indexes"] == ["ok"]


def test_doctor_removes_old_unmarked_backup_folders_and_follows_no_foreign_pointer(tmp_project: Project,
                                                                                   tmp_path: Path) -> None:
    """Work folders benchbook left before issue 33 (no owner.json) are stale once older than
    the grace; a young one may be a backup starting now. A pointer is followed only to a work
    folder of its own name."""
    p = tmp_project
    run(p, "init")
    unmarked, young = p.root / ".benchbook-backup-old", p.root / ".benchbook-backup-young"
    for folder in (unmarked, young):
        folder.mkdir()
        (folder / "benchbook.db").write_bytes(b"x" * 1000)
    then = time.time() - backup_work.UNMARKED_GRACE - 60
    os.utime(unmarked, (then, then))
    precious = tmp_path / "precious"
    precious.mkdir()
    (p.root / ".benchbook-backup-evil.json").write_text(json.dumps({"work": str(precious)}))
    (p.root / ".benchbook-backup-gone.json").write_text(json.dumps({"work": str(tmp_path / ".benchbook-backup-gone")}))
    found = [f for f in doctor.examine(p) if f.check == "backups"]
    assert [f.severity for f in found] == ["note", "warning"]
    assert f"{young} is the work folder of a backup running now (no owner.json yet)" in found[0].message
    assert "3 work folder(s) of backups that were killed, 1000 bytes" in found[1].message
    fixed = [f for f in doctor.examine(p, fix=True) if f.check == "backups" and f.fixed]
    assert [f.fixed for f in fixed] == ["removed 3 work folder(s), 1000 bytes"]
    assert sorted(x.name for x in p.root.glob(".benchbook-backup-*")) == [".benchbook-backup-young"]
    assert precious.is_dir()
