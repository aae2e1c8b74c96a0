"""Import item 7: a progress bar on files over a few thousand rows; the last line gives created,
updated, unchanged and skipped, and the batch id."""
from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

from sqlalchemy import select

from benchbook.cli.local import PROGRESS_ROWS
from benchbook.config import Project
from benchbook.domain.context import Ctx
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import AuditBatch
from tests.import_helpers import collection, ok, query, schema


class Recorder:
    def __init__(self) -> None:
        self.phases: list[tuple[str, int]] = []
        self.done: dict[str, int] = {}

    def phase(self, name: str, total: int) -> None:
        self.phases.append((name, total))
        self.done[name] = 0

    def advance(self, n: int) -> None:
        self.done[self.phases[-1][0]] += n


def big_file(tmp_path: Path, rows: int) -> Path:
    start = date(2000, 1, 1)
    path = tmp_path / "big.csv"
    path.write_text("date,n\n" + "".join(f"{start + timedelta(days=i):%Y/%m/%d},{i}\n" for i in range(rows)))
    return path


def setup(project: Project) -> None:
    schema(project, "day", [{"name": "date", "type": "date"}, {"name": "n", "type": "integer"}])
    collection(project, "w", ["day"])


def test_the_domain_reports_each_phase(tmp_project: Project, tmp_path: Path) -> None:
    setup(tmp_project)
    table = read_table(big_file(tmp_path, 2345).read_bytes(), "big.csv")
    recorder = Recorder()
    db = open_database(tmp_project.database_url)
    try:
        with db.session() as session, session.begin():
            ctx = Ctx(session=session, actor="test", files_dir=tmp_project.files_dir)
            result = import_table(ctx, table, ImportOptions(collection="w", schema="day"), recorder)
    finally:
        db.engine.dispose()
    assert result.created == 2345 and result.commit
    assert recorder.phases == [("checking", 2345), ("writing", 2345)]
    assert recorder.done == {"checking": 2345, "writing": 2345}


def test_a_big_file_gets_a_bar_and_the_last_line_names_the_batch(tmp_project: Project, tmp_path: Path) -> None:
    setup(tmp_project)
    out = ok(tmp_project, "import", str(big_file(tmp_path, PROGRESS_ROWS + 1)), "-c", "w", "-s", "day")
    assert "writing big.csv" in out.stderr and "checking big.csv" in out.stderr
    last = out.stdout.splitlines()[-1]
    assert last.startswith(f"imported big.csv into w: created {PROGRESS_ROWS + 1:,}, updated 0, unchanged 0, "
                           "skipped 0 (batch ")
    batch_id = re.search(r"\(batch (\w+); undo: benchbook imports undo \1\)$", last)[1]  # type: ignore[index]
    assert query(tmp_project, select(AuditBatch.kind).where(AuditBatch.id == batch_id)) == [("import",)]


def test_a_small_file_gets_no_bar(tmp_project: Project, tmp_path: Path) -> None:
    setup(tmp_project)
    out = ok(tmp_project, "import", str(big_file(tmp_path, 10)), "-c", "w", "-s", "day")
    assert "writing" not in out.stderr and out.stdout.startswith("imported big.csv into w: created 10,")
