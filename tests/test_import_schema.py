"""Import item 2: ``--create-schema`` infers, shows and creates a schema; columns naming no
field are reported once, not per row."""
from __future__ import annotations

import json
from pathlib import Path

from benchbook.domain.imports.dates import DateRules
from benchbook.domain.imports.infer import field_name, infer_fields
from benchbook.settings.config import Project
from tests.import_helpers import DATA, cli, collection, ok, records, schema


def test_the_weather_series_gets_a_schema_with_types_and_choices(tmp_project: Project) -> None:
    out = ok(tmp_project, "import", str(DATA / "weather_daily_2012_2015.csv"), "-c", "weather", "--create-schema",
             "-s", "day")
    assert "schema day (inferred from weather_daily_2012_2015.csv):" in out.output  # shown
    assert "  weather: string, choices drizzle, fog, rain, snow, sun\n" in out.output
    assert "created 1,461," in out.stdout
    created = json.loads(ok(tmp_project, "schemas", "get", "day").stdout)
    fields = {f["name"]: (f["type"], f["restrictions"]) for f in created["fields"]}
    assert fields == {"date": ("date", {}), "precipitation": ("float", {}), "temp_max": ("float", {}),
                      "temp_min": ("float", {}), "wind": ("float", {}),
                      "weather": ("string", {"choices": ["drizzle", "fog", "rain", "snow", "sun"]})}
    assert created["display_template"] == "{date}"  # every day once: the records' natural names
    coll = json.loads(ok(tmp_project, "collections", "get", "weather").stdout)
    assert coll["schemas"] == ["day"] and coll["record_count"] == 1461
    assert {r.natural_name for r in records(tmp_project)} >= {"2012-01-01", "2015-12-31"}


def test_a_new_schema_is_added_to_an_existing_collection(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "site", [{"name": "name", "type": "string"}])
    collection(tmp_project, "lake", ["site"])
    source = tmp_path / "Sample Log.csv"
    source.write_text("Taken at,Depth (m),OK?,2nd reading,Count\n"
                      "2024-05-01 10:00,1.5,yes,x,3\n2024-05-02T11:30:00,2,no,,4\n")
    out = ok(tmp_project, "import", str(source), "-c", "lake", "--create-schema")
    assert "created 2," in out.stdout
    made = json.loads(ok(tmp_project, "schemas", "get", "sample_log").stdout)
    assert [(f["name"], f["type"], f["label"]) for f in made["fields"]] == [
        ("taken_at", "datetime", "Taken at"), ("depth_m", "float", "Depth (m)"), ("ok", "boolean", "OK?"),
        ("f_2nd_reading", "string", "2nd reading"), ("count", "integer", "Count")]
    assert json.loads(ok(tmp_project, "collections", "get", "lake").stdout)["schemas"] == ["site", "sample_log"]


def test_an_existing_schema_is_not_replaced(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "day", [{"name": "date", "type": "date"}])
    collection(tmp_project, "w", ["day"])
    source = tmp_path / "d.csv"
    source.write_text("date\n2012-01-01\n")
    out = cli(tmp_project, "import", str(source), "-c", "w", "-s", "day", "--create-schema")
    assert out.exit_code == 1 and "a schema named 'day' already exists" in out.output
    assert records(tmp_project) == []


def test_a_dry_run_shows_the_schema_and_creates_nothing(tmp_project: Project) -> None:
    out = ok(tmp_project, "import", str(DATA / "wine.csv"), "-c", "wines", "--create-schema", "--dry-run")
    assert "  od280_od315_of_diluted_wines: float  (column 'OD280/OD315 of diluted wines')" in out.output and "would import wine.csv" in out.stdout
    assert "created 178," in out.stdout and "(batch" not in out.stdout
    assert cli(tmp_project, "schemas", "get", "wine").exit_code != 0
    assert cli(tmp_project, "collections", "get", "wines").exit_code != 0


def test_unknown_columns_are_reported_once(tmp_project: Project, tmp_path: Path) -> None:
    schema(tmp_project, "day", [{"name": "date", "type": "date"}])
    collection(tmp_project, "w", ["day"])
    out = ok(tmp_project, "import", str(DATA / "weather_daily_2012_2015.csv"), "-c", "w", "-s", "day")
    lines = [line for line in out.output.splitlines() if "name no field" in line]
    assert lines == [("note: columns that name no field of schema 'day' were not imported: precipitation, "
                     "temp_max, temp_min, wind, weather")]
    assert "created 1,461," in out.stdout


def test_inference_rules() -> None:
    rows = 8
    values = {"flag": ["T", "f", "yes", "No"], "n": ["1", "-2", "0"], "x": ["1", "2.5", "1e3"],
              "mixed": ["1", "a"], "when": ["2012-01-01", "2012/01/02 10:00"], "few": ["a", "b"] * 4,
              "spread": ["a", "b", "c", "d"], "empty": []}
    fields = {f.column: f for f in infer_fields(list(values), values, DateRules(), rows)}
    assert {c: f.type for c, f in fields.items()} == {
        "flag": "boolean", "n": "integer", "x": "float", "mixed": "string", "when": "datetime", "few": "string",
        "spread": "string", "empty": "string"}
    assert fields["few"].restrictions == {"choices": ["a", "b"]}
    assert fields["spread"].restrictions == {}  # four values, none repeated: no choices
    assert field_name("Alcohol %") == "alcohol" and field_name("") == "column"
    twice = infer_fields(["A b", "a_b"], {}, DateRules(), 0)
    assert [f.name for f in twice] == ["a_b", "a_b_2"]
