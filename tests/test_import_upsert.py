"""Import item 6: ``--key`` updates the records whose key matches and creates the rest, each
change in history, in one batch."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import select

from benchbook.persistence.tables import AuditBatch, AuditEntry
from benchbook.settings.config import Project
from tests.import_helpers import cli, collection, ok, query, records, schema, shown


@pytest.fixture
def days(tmp_project: Project, tmp_path: Path) -> Project:
    schema(tmp_project, "day", [{"name": "date", "type": "date"}, {"name": "station", "type": "integer"},
                                {"name": "temp", "type": "float"}, {"name": "note", "type": "string"}])
    collection(tmp_project, "w", ["day"])
    first = tmp_path / "first.csv"
    first.write_text("date,station,temp,note\n2012/01/01,1,3.5,cold\n2012/01/02,1,4,\n2012/01/01,2,1,x\n")
    ok(tmp_project, "import", str(first), "-c", "w", "-s", "day")
    return tmp_project


def test_matched_rows_update_and_the_rest_create_in_one_batch(days: Project, tmp_path: Path) -> None:
    before = {r.id for r in records(days)}
    second = tmp_path / "second.csv"
    # 2012-01-01/1 changes, 2012-01-02/1 is the same, 2012-01-01/2 clears its note, 2012-01-03/1 is new
    second.write_text("date,station,temp,note\n01/01/2012,1.0,5.5,cold\n2012-01-02,1,4,\n2012-01-01,2,1,\n"
                      "2012-01-03,1,2,new\n")
    out = ok(days, "import", str(second), "-c", "w", "-s", "day", "--key", "date,station")
    assert "created 1, updated 2, unchanged 1, skipped 0 (batch " in out.stdout
    batch_id = re.search(r"\(batch (\w+);", out.stdout)[1]  # type: ignore[index]
    after = {r.id for r in records(days)}
    assert before < after and len(after - before) == 1
    values = sorted(shown(days, "w", "day"), key=lambda d: (d["date"], d["station"]))
    assert values == [{"date": "2012-01-01", "station": 1, "temp": 5.5, "note": "cold"},
                      {"date": "2012-01-01", "station": 2, "temp": 1.0},
                      {"date": "2012-01-02", "station": 1, "temp": 4.0},
                      {"date": "2012-01-03", "station": 1, "temp": 2.0, "note": "new"}]
    entries = query(days, select(AuditEntry.action, AuditEntry.entity_id).where(AuditEntry.batch_id == batch_id))
    assert sorted(action for action, _ in entries) == ["create", "update", "update"]
    assert query(days, select(AuditBatch.kind, AuditBatch.label).where(AuditBatch.id == batch_id)) == [
        ("import", "second.csv")]
    history = cli(days, "audit", "get-batch-event", batch_id)
    assert history.exit_code == 0 and '"count": 3' in history.stdout


def test_key_problems(days: Project, tmp_path: Path) -> None:
    source = tmp_path / "bad.csv"
    source.write_text("date,station,temp\n2012-01-01,,1\n2012-01-05,1,2\n2012-01-05,1,3\n")
    out = cli(days, "import", str(source), "-c", "w", "-s", "day", "--key", "date,station")
    assert out.exit_code == 1
    assert "key: station has no value (1 row, line 2)" in out.output
    assert "key: the same date, station as line 3 (1 row, line 4)" in out.output
    ok(days, "import", str(source), "-c", "w", "-s", "day", "--key", "date,station", "--skip-bad")
    twice = tmp_path / "twice.csv"
    twice.write_text("date,temp\n2012-01-01,9\n")
    out = cli(days, "import", str(twice), "-c", "w", "-s", "day", "--key", "date")
    assert "key: 2 records have this date (1 row, line 2)" in out.output
    out = cli(days, "import", str(twice), "-c", "w", "-s", "day", "--key", "day")
    assert out.exit_code == 1 and "schema 'day' has no field 'day'" in out.output


def test_an_update_that_breaks_a_rule_is_a_problem_and_nothing_changes(days: Project, tmp_path: Path) -> None:
    ok(days, "schemas", "set-unique-keys", "day", "--keys", '[["date", "station"]]')
    source = tmp_path / "move.csv"
    source.write_text("note,date,station\ncold,2012-01-02,1\n")  # 'cold' names 2012-01-01/1: moved onto 01-02
    out = cli(days, "import", str(source), "-c", "w", "-s", "day", "--key", "note")
    assert out.exit_code == 1 and "already has these values for unique key (date, station)" in out.output
    assert sorted(d["date"] for d in shown(days, "w", "day")) == ["2012-01-01", "2012-01-01", "2012-01-02"]
