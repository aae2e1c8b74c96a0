"""The demo's workflow (``penguin-tag``): creating the penguins queues one run each, and a drain
(here ``benchbook demo --no-serve``'s own) tags every penguin through the built-in set-fields
plugin, each run one ``workflow`` history batch; a penguin created afterwards is tagged too."""
from __future__ import annotations

import json
from collections import Counter

from click.testing import CliRunner
from palmerpenguins import load_penguins
from sqlalchemy import select

from benchbook.cli.main import build_cli
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.tables import AuditBatch, Field, Job, Record
from benchbook.runner import worker
from benchbook.settings.config import Project


def cli(project: Project, *args: str) -> str:
    result = CliRunner().invoke(build_cli(), ["--project", str(project.root), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def tags(db: Database) -> Counter[str]:
    """Each tag the penguins hold, with how many hold it (untagged ones as ``None``)."""
    with db.session() as s:
        tag = s.scalar(select(Field.id).where(Field.name == "tag"))
        return Counter(data.get(tag) for data in s.scalars(select(Record.data).where(Record.parent_id.is_not(None))))


def test_demo_tags_every_penguin_with_its_workflow(tmp_project: Project) -> None:
    out = cli(tmp_project, "demo", "--no-serve")
    assert "workflow runs: 344 ran (344 completed, 0 failed, 0 cancelled)" in out
    assert (tmp_project.root / "workflows" / "penguin-tag.yaml").is_file()
    frame = load_penguins()
    expected = Counter(f"{row.species[:3]}-{row.island[:3]}-{row.year}" for row in frame.itertuples())
    db = open_database(tmp_project.database_url)
    try:
        assert tags(db) == expected
        with db.session() as s:
            assert Counter(s.scalars(select(Job.status))) == {"completed": 344}
            assert Counter(s.scalars(select(AuditBatch.kind))) == {"import": 1, "workflow": 344}
        islands = json.loads(cli(tmp_project, "records", "list", "penguins", "--schema", "island"))
        dream = next(r["id"] for r in islands["items"] if r["data"]["name"] == "Dream")
        cli(tmp_project, "records", "create", "penguins", "--schema-name", "penguin", "--parent-record-id", dream,
            "--data", '{"species": "Gentoo", "year": 2009}')
        worker.for_database(db, tmp_project).drain()  # the CLI may have run it already: then nothing waits
        assert tags(db)["Gen-Dre-2009"] == expected["Gen-Dre-2009"] + 1
    finally:
        db.engine.dispose()
