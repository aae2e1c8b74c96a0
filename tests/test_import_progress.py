"""Import item 7: a progress bar on files over a few thousand rows; the last line gives created,
updated, unchanged and skipped, and the batch id."""
from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from benchbook.cli.local import PROGRESS_ROWS
from benchbook.domain.context import Ctx
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import AuditBatch
from benchbook.settings.config import Project
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


def test_checked_rows_let_go_of_their_cells_unless_bad_rows_are_kept(tmp_project: Project, tmp_path: Path) -> None:
    """All or nothing, the cells of a checked row are never read again (no rejected-rows file):
    they are released step by step, so that a large file's cells and its checked rows are not all
    in memory at once; the rows' numbers and count stay. With ``skip_bad`` they are kept for the
    rejected rows, as they were."""
    setup(tmp_project)
    data = big_file(tmp_path, 2345).read_bytes() + b"not a date,x\n"
    db = open_database(tmp_project.database_url)
    try:
        for skip_bad in (False, True):
            table = read_table(data, "big.csv")
            numbers = [n for n, _ in table.rows]
            with db.session() as session, session.begin():
                ctx = Ctx(session=session, actor="test", files_dir=tmp_project.files_dir)
                result = import_table(ctx, table, ImportOptions(collection="w", schema="day", skip_bad=skip_bad))
                session.rollback()
            assert [n for n, _ in table.rows] == numbers and len(numbers) == 2346
            assert [len(p.numbers) for p in result.problems] == [1, 1]
            if skip_bad:
                assert all(cells for _, cells in table.rows) and result.rejected[0][1] == ["not a date", "x"]
            else:
                assert result.failed and not any(cells for _, cells in table.rows)
    finally:
        db.engine.dispose()


def test_an_import_large_enough_to_build_the_indexes_after_reads_its_rows_once_more(
        tmp_project: Project, tmp_path: Path, monkeypatch: Any) -> None:
    """Past ``deferred_indexes.MIN_ROWS`` (lowered here) the bulk create also reads every row
    for its schemas' names, element by element, from the import's view of its rows; the
    indexes are back afterwards and every row is in."""
    from sqlalchemy import text

    from benchbook.persistence import deferred_indexes

    setup(tmp_project)
    monkeypatch.setattr(deferred_indexes, "MIN_ROWS", 100)
    table = read_table(big_file(tmp_path, 2345).read_bytes(), "big.csv")
    db = open_database(tmp_project.database_url)
    try:
        with db.engine.connect() as conn:
            indexes = conn.execute(text("SELECT count(*) FROM sqlite_master WHERE type = 'index'")).scalar_one()
        with db.session() as session, session.begin():
            ctx = Ctx(session=session, actor="test", files_dir=tmp_project.files_dir)
            result = import_table(ctx, table, ImportOptions(collection="w", schema="day"))
        with db.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM sqlite_master WHERE type = 'index'")).scalar_one() == indexes
            assert conn.execute(text("SELECT count(*) FROM records")).scalar_one() == 2345
    finally:
        db.engine.dispose()
    assert result.created == 2345
