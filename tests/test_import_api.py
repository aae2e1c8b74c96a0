"""Import through the API: ``POST /collections/{name_or_id}/import`` (the extension operation),
the same import as ``benchbook import``, over the real app."""
from __future__ import annotations

from typing import Any

from tests.api.helpers import make_collection, make_schema
from tests.import_helpers import DATA

WEATHER = [{"name": "date", "type": "date", "required": True}, {"name": "temp_max", "type": "float"},
           {"name": "weather", "type": "string", "restrictions": {"choices": ["sun", "rain", "drizzle", "snow"]}}]


def upload(api: Any, collection: str, name: str, content: bytes, **form: str) -> Any:
    return api.post(f"/collections/{collection}/import", files={"file": (name, content)}, data=form)


def test_the_weather_series_imports_with_an_inferred_schema(api: Any) -> None:
    out = upload(api, "weather", "weather_daily_2012_2015.csv", (DATA / "weather_daily_2012_2015.csv").read_bytes(),
                 create_schema="true", schema="day")
    assert out.status_code == 200, out.text
    body = out.json()
    assert (body["created"], body["updated"], body["skipped"], body["schema"], body["created_collection"]) == (
        1461, 0, 0, "day", True)
    assert {f["name"]: f["type"] for f in body["inferred_fields"]}["date"] == "date"
    assert api.ok("GET", f"/audit/batches/{body['batch_id']}")["count"] == 1461
    assert api.ok("GET", "/collections/weather")["record_count"] == 1461


def test_problems_are_one_422_entry_each_and_nothing_is_written(api: Any) -> None:
    make_schema(api, "day", WEATHER)
    make_collection(api, "w", ["day"])
    out = upload(api, "w", "weather.csv", (DATA / "weather_daily_2012_2015.csv").read_bytes(), schema="day")
    assert out.status_code == 422
    body = out.json()
    assert body["detail"] == "63 rows have problems: nothing was imported (skip_bad imports the good rows)"
    [entry] = body["errors"]
    assert entry["loc"] == ["body", "file", "weather"] and entry["type"] == "not_in_choices"
    assert entry["msg"].startswith("weather: 'fog' not among the choices") and "(63 rows, lines " in entry["msg"]
    assert entry["input"] == "fog" and entry["ctx"]["count"] == 63 and len(entry["ctx"]["numbers"]) == 20
    assert api.ok("GET", "/collections/w")["record_count"] == 0


def test_skip_bad_stores_the_rejected_rows_as_a_file(api: Any) -> None:
    make_schema(api, "day", WEATHER)
    make_collection(api, "w", ["day"])
    content = b"date,temp_max,weather\n01/02/2012,3,sun\n13/02/2012,x,rain\n"
    body = upload(api, "w", "days.csv", content, schema="day", skip_bad="true", date_order="day_first").json()
    assert (body["created"], body["skipped"]) == (1, 1)
    assert body["problems"][0]["text"] == "temp_max: 'x' is not a number (1 row, line 3)"
    rejected = body["rejected_file"]
    assert rejected["filename"] == "days.rejected.csv"
    text = api.get(f"/files/{rejected['sha256']}").text
    assert text.splitlines()[1] == "13/02/2012,x,rain,3,temp_max: 'x' is not a number"
    assert api.ok("GET", "/collections/w/records")["items"][0]["data"]["date"] == "2012-02-01"


def test_upsert_and_dry_run_in_a_client_batch(api: Any) -> None:
    make_schema(api, "day", WEATHER)
    make_collection(api, "w", ["day"])
    first = b'[{"date": "2012-01-01", "temp_max": 1}]'
    assert upload(api, "w", "a.json", first, schema="day").json()["created"] == 1
    second = b'{"date": "2012-01-01", "temp_max": 2}\n{"date": "2012-01-02", "temp_max": 3}\n'
    dry = upload(api, "w", "b.ndjson", second, schema="day", key="date", dry_run="true").json()
    assert (dry["created"], dry["updated"], dry["batch_id"], dry["dry_run"]) == (1, 1, None, True)
    assert api.ok("GET", "/collections/w")["record_count"] == 1
    batch = api.ok("POST", "/audit/batches", 201, json={"label": "by hand"})
    out = api.post("/collections/w/import", files={"file": ("b.ndjson", second)}, data={"schema": "day", "key": "date"},
                   headers={"X-Service-Batch": batch["id"]})
    assert out.status_code == 200 and out.json()["batch_id"] == batch["id"]
    assert api.ok("GET", f"/audit/batches/{batch['id']}")["count"] == 2
    values = sorted(r["data"]["temp_max"] for r in api.ok("GET", "/collections/w/records")["items"])
    assert values == [2.0, 3.0]


def test_bad_requests(api: Any) -> None:
    make_schema(api, "day", WEATHER)
    make_collection(api, "w", ["day"])
    assert upload(api, "nowhere", "a.csv", b"date\n2012-01-01\n", schema="day").status_code == 404
    out = upload(api, "w", "a.csv", b"date\n2012-01-01\n")
    assert out.status_code == 422 and "name the schema" in out.json()["detail"]
    out = upload(api, "w", "a.csv", b"date\n2012-01-01\n", schema="day", date_order="sideways")
    assert out.status_code == 422
    out = upload(api, "w", "a.json", b"[1, 2]", schema="day")
    assert out.status_code == 422 and "expected an object" in out.json()["detail"]
    out = upload(api, "w", "day.csv", b"date\n2012-01-01\n", schema="day", create_schema="true")
    assert out.status_code == 409
    make_schema(api, "night", WEATHER)  # exists, but w is not for it: a clash with what is stored, as a write's
    out = upload(api, "w", "a.csv", b"date\n2012-01-01\n", schema="night")
    assert out.status_code == 409 and out.json()["detail"] == "collection 'w' is not for schema 'night'"
    no_file = api.post("/collections/w/import", files={"schema": (None, "day")})  # multipart without the file
    assert no_file.status_code == 422 and "file" in no_file.text


def test_the_generated_command_runs_the_same_import(tmp_project: Any) -> None:
    import json

    from tests.import_helpers import cli

    out = cli(tmp_project, "imports", "run", "weather", "--file", str(DATA / "weather_2012_01.xlsx"),
              "--create-schema", "--schema", "day")
    assert out.exit_code == 0, out.output
    body = json.loads(out.stdout)
    assert body["created"] == 31 and body["schema"] == "day"
    fields = {f["name"]: f["type"] for f in body["inferred_fields"]}
    assert fields["date"] == "date" and fields["observed_at"] == "datetime" and fields["serial_day"] == "integer"


def test_reference_and_file_columns_import_with_their_links(api: Any) -> None:
    """A file's reference and file cells are looked up when written (the rows keep their values
    by name for that: the others are written from their checked values alone)."""
    make_schema(api, "site", [{"name": "name", "type": "string"}])
    make_schema(api, "sample", [{"name": "depth", "type": "float"},
                                {"name": "home", "type": "reference", "restrictions": {"schema": "site"}},
                                {"name": "scan", "type": "file"}])
    make_collection(api, "lake", ["site", "sample"])
    site = api.ok("POST", "/collections/lake/records", 201, json={"schema_name": "site", "data": {"name": "North"}})
    sha = api.ok("POST", "/files", 201, files={"file": ("scan.png", b"\x89PNG", "image/png")})["sha256"]
    good = f"depth,home,scan\n1.5,{site['id']},{sha}\n2.5,{site['id']},\n".encode()
    out = upload(api, "lake", "samples.csv", good, schema="sample")
    assert out.status_code == 200 and out.json()["created"] == 2, out.text
    referrers = api.ok("GET", f"/records/{site['id']}/referrers")
    assert sorted(r["data"]["depth"] for r in referrers) == [1.5, 2.5]
    bad = f"depth,home,scan\n3.5,{'0' * 26},\n4.5,,{'f' * 64}\n".encode()
    out = upload(api, "lake", "samples.csv", bad, schema="sample")
    assert out.status_code == 422, out.text
    errors = out.json()["errors"]
    assert any(e["loc"][-1] == "scan" and e["type"] == "unknown_file" for e in errors), errors
    assert any(f"home: record {'0' * 26} does not exist" in e["msg"] for e in errors), errors
