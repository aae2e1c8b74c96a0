"""Import item 1: CSV, TSV, Excel, JSON and NDJSON files; encoding and delimiter sniffed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.domain.errors import Invalid
from benchbook.domain.imports.readers import read_table
from benchbook.settings.config import Project
from tests.import_helpers import DATA, cli, collection, ok, records, schema, shown

WEATHER_FIELDS = [{"name": "date", "type": "date", "required": True}, {"name": "precipitation", "type": "float"},
                  {"name": "temp_max", "type": "float"}, {"name": "temp_min", "type": "float"},
                  {"name": "wind", "type": "float"}, {"name": "weather", "type": "string"}]


@pytest.fixture
def weather(tmp_project: Project) -> Project:
    schema(tmp_project, "day", WEATHER_FIELDS)
    collection(tmp_project, "weather", ["day"])
    return tmp_project


@pytest.mark.parametrize("name", ["weather_2012_01.tsv", "weather_2012_01.json", "weather_2012_01.ndjson",
                                  "weather_2012_01.xlsx"])
def test_each_format_imports_the_same_month(weather: Project, name: str) -> None:
    out = ok(weather, "import", str(DATA / name), "-c", "weather", "-s", "day")
    assert "created 31," in out.stdout
    days = shown(weather, "weather", "day")
    assert [d["date"] for d in days] == [f"2012-01-{n:02d}" for n in range(1, 32)]
    assert days[0] == {"date": "2012-01-01", "precipitation": 0.0, "temp_max": 6.3, "temp_min": 0.1, "wind": 4.5,
                       "weather": "sun"}


def test_the_full_csv_series_imports_with_its_slash_dates(weather: Project) -> None:
    out = ok(weather, "import", str(DATA / "weather_daily_2012_2015.csv"), "-c", "weather", "-s", "day")
    assert "created 1,461," in out.stdout
    assert len(records(weather, "day")) == 1461
    last = json.loads(ok(weather, "records", "list", "weather", "--offset", "1460").stdout)["items"]
    assert [r["data"]["date"] for r in last] == ["2015-12-31"]


def test_a_windows_1252_semicolon_file_is_sniffed(tmp_project: Project) -> None:
    table = read_table((DATA / "stations_cp1252.csv").read_bytes(), "stations_cp1252.csv")
    assert table.delimiter == ";" and table.encoding not in (None, "utf-8")
    assert table.columns == ["station", "opened", "altitude_m", "active"]
    assert table.rows[0] == (2, ["Zürich Fluntern", "01.03.1864", "556", "yes"])
    schema(tmp_project, "station", [{"name": "station", "type": "string"}, {"name": "opened", "type": "date"},
                                    {"name": "altitude_m", "type": "integer"}, {"name": "active", "type": "boolean"}])
    collection(tmp_project, "net", ["station"])
    ok(tmp_project, "import", str(DATA / "stations_cp1252.csv"), "-c", "net", "-s", "station")
    rows = {r["station"]: r for r in shown(tmp_project, "net", "station")}
    assert rows["Genève Cointrin"] == {"station": "Genève Cointrin", "opened": "1949-12-13", "altitude_m": 411,
                                       "active": True}


def test_content_decides_when_the_name_has_no_extension(weather: Project, tmp_path: Path) -> None:
    for source, target in (("weather_2012_01.json", "a"), ("weather_2012_01.ndjson", "b"),
                           ("weather_2012_01.xlsx", "c")):
        (tmp_path / target).write_bytes((DATA / source).read_bytes())
    assert read_table((tmp_path / "a").read_bytes(), "a").format == "json"
    assert read_table((tmp_path / "b").read_bytes(), "b").format == "ndjson"
    assert read_table((tmp_path / "c").read_bytes(), "c").format == "xlsx"


def test_json_rows_are_numbered_by_their_line(tmp_path: Path) -> None:
    text = '[\n  {"a": 1},\n\n  {"a": 2,\n   "b": "x"}\n]\n'
    table = read_table(text.encode(), "x.json")
    assert table.columns == ["a", "b"]
    assert table.rows == [(2, {0: 1}), (4, {0: 2, 1: "x"})]  # sparse: the first object has no "b"


def test_excel_sheets_by_name_or_position() -> None:
    data = (DATA / "weather_2012_01.xlsx").read_bytes()
    assert read_table(data, "w.xlsx", sheet="Notes").columns == ["about"]
    assert read_table(data, "w.xlsx", sheet="2").columns == ["about"]
    assert read_table(data, "w.xlsx").unit == "row"
    with pytest.raises(Invalid, match="no sheet 'Summary'.*January, Notes"):
        read_table(data, "w.xlsx", sheet="Summary")


def test_unreadable_files_are_clear_errors(weather: Project, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[{"a": 1}, {"a": }]')
    out = cli(weather, "import", str(broken), "-c", "weather", "-s", "day")
    assert out.exit_code == 1 and "broken.json: line 1: not valid JSON" in out.output
    not_objects = tmp_path / "list.json"
    not_objects.write_text("[1, 2]")
    assert "expected an object" in cli(weather, "import", str(not_objects), "-c", "weather", "-s", "day").output
    fake = tmp_path / "fake.xlsx"
    fake.write_bytes(b"not a workbook")
    assert "cannot be read as an Excel workbook" in cli(weather, "import", str(fake), "-c", "weather",
                                                        "-s", "day").output
    empty = tmp_path / "empty.csv"
    empty.write_text("\n\n")
    assert "holds no rows" in cli(weather, "import", str(empty), "-c", "weather", "-s", "day").output


def test_a_row_wider_than_the_header_is_a_problem_of_that_row(weather: Project, tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    wide.write_text("date,weather\n2012-01-01,sun\n2012-01-02,rain,extra\n")
    out = cli(weather, "import", str(wide), "-c", "weather", "-s", "day")
    assert out.exit_code == 1
    assert "the row has 3 cells, the header 2 (1 row, line 3)" in out.output


@pytest.mark.parametrize(("name", "content"), [
    ("rows.csv", "a,b\n1,2\n3,4\n5,6\n"),
    ("rows.tsv", "a\tb\n1\t2\n3\t4\n\n5\t6\n"),
    ("rows.json", '[{"a": 1}, {"a": 2}, {"a": 3}]'),
    ("rows.ndjson", '{"a": 1}\n{"a": 2}\n\n{"a": 3}\n'),
    ("wide.csv", "a\n1\n2,9\n3\n"),  # a row wider than the header counts too
])
def test_every_format_counts_its_rows_against_the_limit(name: str, content: str) -> None:
    from benchbook.settings.limits import DEFAULT, use

    with use(DEFAULT.__class__(import_rows=3)):
        assert len(read_table(content.encode(), name).rows) + len(read_table(content.encode(), name).problems) == 3
    with use(DEFAULT.__class__(import_rows=2)), pytest.raises(Invalid, match=f"{name} has more than 2 rows"):
        read_table(content.encode(), name)


def test_a_workbook_counts_its_rows_against_the_limit() -> None:
    from benchbook.settings.limits import DEFAULT, use

    data = (DATA / "weather_2012_01.xlsx").read_bytes()
    with use(DEFAULT.__class__(import_rows=31)):
        assert len(read_table(data, "w.xlsx").rows) == 31
    with use(DEFAULT.__class__(import_rows=30)), pytest.raises(Invalid, match="more than 30 rows"):
        read_table(data, "w.xlsx")


def test_the_command_applies_the_projects_limits_and_asks_the_size_before_reading(
        weather: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomlkit

    settings = weather.root / "benchbook.toml"
    doc = tomlkit.parse(settings.read_text())
    doc["limits"] = {"import_rows": 30}
    settings.write_text(tomlkit.dumps(doc))
    out = cli(weather, "import", str(DATA / "weather_2012_01.tsv"), "-c", "weather", "-s", "day")
    assert out.exit_code == 1 and "weather_2012_01.tsv has more than 30 rows" in out.output
    assert "[limits] import_rows in benchbook.toml" in out.output and records(weather) == []

    big = tmp_path / "big.csv"
    big.write_text("date,weather\n" + "2012-01-01,sun\n" * 100)
    doc["limits"] = {"import_bytes": 1000}
    settings.write_text(tomlkit.dumps(doc))
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail("read") if self == big else read(self))
    out = cli(weather, "import", str(big), "-c", "weather", "-s", "day")
    assert out.exit_code == 1 and f"big.csv is {big.stat().st_size:,} bytes" in out.output
    monkeypatch.undo()

    doc["limits"] = {"import_rows": 0}
    settings.write_text(tomlkit.dumps(doc))
    out = cli(weather, "import", str(big), "-c", "weather", "-s", "day")
    assert out.exit_code == 1 and "[limits] import_rows" in out.output and "Traceback" not in out.output
