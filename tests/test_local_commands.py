"""Local commands: `benchbook demo` (real data) and `benchbook import` (CSV, all or nothing)."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import func, select

from benchbook.cli.main import build_cli
from benchbook.demo import build_demo
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import AuditBatch, AuditEntry, Record
from benchbook.settings.config import Project


def run(project: Project, *args: str) -> object:
    return CliRunner().invoke(build_cli(), ["--project", str(project.root), *args], catch_exceptions=False)


def count(project: Project, statement: object) -> int:
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            return int(s.scalar(statement) or 0)
    finally:
        db.engine.dispose()


def test_demo_builds_the_penguins_with_history(tmp_project: Project) -> None:
    assert build_demo(tmp_project) == 347
    assert build_demo(tmp_project) == 0  # idempotent
    assert count(tmp_project, select(func.count()).select_from(Record)) == 347
    entries = select(func.count()).select_from(AuditEntry).where(AuditEntry.entity_type == "record",
                                                                 AuditEntry.action == "create")
    assert count(tmp_project, entries) == 347
    assert count(tmp_project, select(func.count()).select_from(AuditBatch).where(AuditBatch.kind == "import")) == 1
    out = run(tmp_project, "records", "list", "penguins", "--schema", "island", "--sort", "name")
    assert '"Biscoe"' in out.output and '"Torgersen"' in out.output


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_import_creates_records_in_one_batch(tmp_project: Project, tmp_path: Path) -> None:
    run(tmp_project, "schemas", "create", "--name", "sample",
        "--fields", '[{"name": "site", "type": "string", "required": true}, {"name": "depth", "type": "float"}]')
    run(tmp_project, "collections", "create", "--name", "lake", "--schemas", '["sample"]')
    csv_file = write(tmp_path / "samples.csv", "site,depth\nNorth,1.5\nSouth,\n")
    out = run(tmp_project, "import", str(csv_file), "--collection", "lake", "--schema", "sample")
    assert out.exit_code == 0 and "created 2," in out.output
    db = open_database(tmp_project.database_url)
    try:
        with db.session() as s:
            record_ids = set(s.scalars(select(Record.id)))
            creates = s.execute(select(AuditEntry.entity_id, AuditEntry.batch_id)
                                .where(AuditEntry.entity_type == "record", AuditEntry.action == "create")).all()
            batches = s.execute(select(AuditBatch.id, AuditBatch.kind)).all()
            batched = s.execute(select(AuditEntry.entity_type, AuditEntry.entity_id)
                                .where(AuditEntry.batch_id.is_not(None))).all()
    finally:
        db.engine.dispose()
    assert len(record_ids) == 2
    # one create entry per record, and all of them in one batch
    assert sorted(entity_id for entity_id, _ in creates) == sorted(record_ids)
    batch_ids = {batch_id for _, batch_id in creates}
    assert len(batch_ids) == 1 and None not in batch_ids, creates
    assert batches == [(batch_ids.pop(), "import")]
    # the batch holds the import's record creations and nothing else (not the schema or collection)
    assert sorted(batched) == sorted(("record", record_id) for record_id in record_ids)


def test_bad_rows_are_reported_and_nothing_is_written(tmp_project: Project, tmp_path: Path) -> None:
    run(tmp_project, "schemas", "create", "--name", "sample",
        "--fields", '[{"name": "site", "type": "string", "required": true}, {"name": "depth", "type": "float"}]')
    run(tmp_project, "collections", "create", "--name", "lake", "--schemas", '["sample"]')
    csv_file = write(tmp_path / "bad.csv", "site,depth\nNorth,1.5\n,2\nEast,deep\n")
    out = CliRunner().invoke(build_cli(), ["--project", str(tmp_project.root), "import", str(csv_file),
                                           "--collection", "lake", "--schema", "sample"])
    assert out.exit_code == 1
    assert "line 3" in out.output and "line 4" in out.output and "nothing was imported" in out.output
    assert count(tmp_project, select(func.count()).select_from(Record)) == 0


def test_export_round_trips_through_import(tmp_project: Project, tmp_path: Path) -> None:
    build_demo(tmp_project)
    exported = tmp_path / "penguins.csv"
    out = run(tmp_project, "records", "export-csv", "penguins", "--output", str(exported))
    assert out.exit_code == 0
    run(tmp_project, "collections", "create", "--name", "copy", "--schemas", '["island", "penguin"]')
    out = run(tmp_project, "import", str(exported), "--collection", "copy")
    assert out.exit_code == 0, out.output
    original = run(tmp_project, "records", "export-csv", "penguins").output.splitlines()
    copied = run(tmp_project, "records", "export-csv", "copy").output.splitlines()
    strip = lambda line: line.split(",", 3)[3]
    assert original[0] == copied[0] and len(original) == len(copied) == 348
    assert sorted(map(strip, original[1:])) == sorted(map(strip, copied[1:]))
