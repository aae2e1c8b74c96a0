"""Import item 4: problems summarised one line per distinct problem; ``--skip-bad`` imports the
good rows and writes the bad ones beside the input; without it nothing is written."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.domain.imports.problems import ProblemLog
from benchbook.settings.config import Project
from tests.import_helpers import DATA, cli, collection, ok, records, schema

FIELDS = [{"name": "date", "type": "date", "required": True}, {"name": "temp_max", "type": "float"},
          {"name": "weather", "type": "string", "restrictions": {"choices": ["sun", "rain", "drizzle", "snow"]}}]


@pytest.fixture
def weather(tmp_project: Project) -> Project:
    schema(tmp_project, "day", FIELDS)
    collection(tmp_project, "w", ["day"])
    return tmp_project


def test_the_summary_line_shape() -> None:
    log = ProblemLog()
    for number in range(2, 1463):
        log.add(number, f"date: '2012/13/{number % 28 + 1:02d}' is not a date", field="date", kind="date_parsing")
    [only] = log.summaries
    assert only.text() == "date: '2012/13/03' is not a date (1,461 rows, lines 2, 3, 4, …)"
    assert only.as_json()["count"] == 1461 and only.as_json()["numbers"][:3] == [2, 3, 4]
    log.add(7, "key: 2 records have this date", field="key")
    assert log.summaries[1].text("row") == "key: 2 records have this date (1 row, row 7)"


def test_a_series_with_bad_values_is_summarised_and_nothing_is_written(weather: Project) -> None:
    out = cli(weather, "import", str(DATA / "weather_daily_2012_2015.csv"), "-c", "w", "-s", "day")
    assert out.exit_code == 1
    problem_lines = [line for line in out.output.splitlines() if line.endswith(")") and "have problems" not in line]
    # fog is not a choice: 63 rows, one line
    assert problem_lines[0].startswith("weather: 'fog' not among the choices") and "(63 rows, lines " in \
        problem_lines[0]
    assert len(problem_lines) == 1
    assert "63 of 1,461 rows have problems: nothing was imported (--skip-bad imports the good rows)" in out.output
    assert records(weather) == []


def test_a_bad_date_column_is_one_line(weather: Project, tmp_path: Path) -> None:
    source = tmp_path / "us.csv"
    source.write_text("date,temp_max\n" + "".join(f"13/{d:02d}/2012,1\n" for d in range(1, 21)))
    out = cli(weather, "import", str(source), "-c", "w", "-s", "day", "--monthfirst")
    assert out.exit_code == 1
    assert "date: '13/01/2012' is not a date (20 rows, lines 2, 3, 4, …)" in out.output
    assert out.output.count("is not a date") == 1


def test_skip_bad_imports_the_good_rows_and_writes_the_bad_ones(weather: Project, tmp_path: Path) -> None:
    source = tmp_path / "days.csv"
    source.write_text("date,temp_max,weather\n2012-01-01,3,sun\n2012-01-02,warm,sun\n,4,rain\n2012-01-04,5,fog\n"
                      "2012-01-05,6,snow\n")
    out = ok(weather, "import", str(source), "-c", "w", "-s", "day", "--skip-bad")
    assert "created 2, updated 0, unchanged 0, skipped 3 (batch " in out.stdout
    rejected = tmp_path / "days.rejected.csv"
    assert f"3 bad rows written to {rejected}" in out.output
    assert rejected.read_text().splitlines() == [
        "date,temp_max,weather,_line,_problem",
        "2012-01-02,warm,sun,3,temp_max: 'warm' is not a number",
        ",4,rain,4,date: a value is required",
        "2012-01-04,5,fog,5,\"weather: 'fog' not among the choices ['sun', 'rain', 'drizzle', 'snow']\""]
    assert len(records(weather)) == 2
    # fixed, the rejected file imports (its _line and _problem columns are not fields)
    rejected.write_text(rejected.read_text().replace("warm", "7").replace(",4,rain", "2012-01-03,4,rain")
                        .replace("fog", "sun"))
    again = ok(weather, "import", str(rejected), "-c", "w", "-s", "day")
    assert "created 3," in again.stdout and "name no field" not in again.output
    assert len(records(weather)) == 5


def test_skip_bad_drops_rows_the_set_based_create_refuses(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "site", [{"name": "code", "type": "string"}])
    ok(tmp_project, "schemas", "set-unique-keys", "site", "--keys", '[["code"]]')
    collection(tmp_project, "c", ["site"])
    source = tmp_path / "sites.json"
    source.write_text(json.dumps([{"code": "A"}, {"code": "B"}, {"code": "A"}]))
    out = cli(tmp_project, "import", str(source), "-c", "c", "-s", "site")
    assert out.exit_code == 1 and "already has these values for unique key (code) (1 row, line 1)" in out.output
    assert records(tmp_project) == []
    out = ok(tmp_project, "import", str(source), "-c", "c", "-s", "site", "--skip-bad")
    assert "created 2," in out.stdout and "skipped 1" in out.stdout
    assert (tmp_path / "sites.rejected.ndjson").read_text().startswith('{"code": "A", "_line": 1, "_problem": ')


def test_problems_of_several_kinds_each_get_a_line(weather: Project, tmp_path: Path) -> None:
    source = tmp_path / "mixed.csv"
    source.write_text("date,temp_max,weather\n2012-01-01,x,sun\n2012-02-30,y,sun\n,1,sun\n,2,hail\n")
    out = cli(weather, "import", str(source), "-c", "w", "-s", "day")
    lines = [line for line in out.output.splitlines() if line.endswith(")") and "have problems" not in line]
    assert lines == ["temp_max: 'x' is not a number (2 rows, lines 2, 3)",  # the most rows first, then as met
                     "date: a value is required (2 rows, lines 4, 5)",
                     "date: '2012-02-30' is not a date (1 row, line 3)",
                     "weather: 'hail' not among the choices ['sun', 'rain', 'drizzle', 'snow'] (1 row, line 5)"]
    assert "4 of 4 rows have problems" in out.output
