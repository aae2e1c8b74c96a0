"""Imports whose reference columns hold codes (issue 35 items 1 and 5), through the API on both
backends: cells resolve by key, natural name or id; the unresolved are one problem per column
naming the values with their counts; ``create_missing`` makes bare targets; ``create_schema``
types ``517.0`` as integer, reads ``NA`` as missing, and proposes (or with ``references=auto``
makes) reference columns; the dry run answers the display template and the first rows. The
CLI shows the same."""
from __future__ import annotations

import json
from typing import Any

from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_record, make_schema
from tests.import_helpers import ok
from tests.test_import_api import upload

FLIGHTS = (b"carrier,tailnum,arr_delay\n"
           b"UA,N14228,11\nAA,N619AA,NA\nUA,N14228,-3\nZZ,N14228,1\nUA,N000XX,2\nQQ,N000XX,5\nZZ,NA,7\n")


def world(api: Any) -> dict[str, str]:
    """airline (key ``carrier``, named by ``name``), plane (named by ``tailnum``), flight
    referencing both, all in collection ``nyc``."""
    make_schema(api, "airline", [{"name": "carrier", "type": "string"}, {"name": "name", "type": "string"}],
                display_template="{name}")
    api.ok("PUT", "/schemas/airline/unique-keys", json={"keys": [["carrier"]]})
    make_schema(api, "plane", [{"name": "tailnum", "type": "string"}, {"name": "seats", "type": "integer"}],
                display_template="{tailnum}")
    make_schema(api, "flight", [
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}},
        {"name": "arr_delay", "type": "integer"}])
    make_collection(api, "nyc", ["airline", "plane", "flight"])
    ids = {code: make_record(api, "nyc", "airline", {"carrier": code, "name": name})["id"]
           for code, name in (("UA", "United Air Lines Inc."), ("AA", "American Airlines Inc."))}
    ids.update({t: make_record(api, "nyc", "plane", {"tailnum": t, "seats": 100})["id"] for t in ("N14228", "N619AA")})
    return ids


def flights(api: Any) -> list[dict[str, Any]]:
    listed = api.ok("GET", "/collections/nyc/records", params={"schema": "flight", "limit": 100, "sort": "id"})
    return [r["data"] for r in listed["items"]]


def test_unresolved_codes_are_one_problem_per_column_with_values_and_counts(api: Any) -> None:
    world(api)
    body = upload(api, "nyc", "flights.csv", FLIGHTS, schema="flight").json()
    by_field = {e["loc"][-1]: e for e in body["errors"]}
    assert set(by_field) == {"carrier", "tailnum"} and len(body["errors"]) == 2
    carrier = by_field["carrier"]
    assert carrier["type"] == "reference_unknown" and carrier["ctx"]["count"] == 3
    assert carrier["msg"].startswith("carrier: 2 values name no 'airline' record within reach (by carrier, natural "
                                     "name or id): 'ZZ' (2 rows), 'QQ' (1 row); create_missing")
    assert by_field["tailnum"]["msg"].startswith("tailnum: 1 value name no 'plane' record within reach (by natural "
                                                 "name or id): 'N000XX' (2 rows)")
    assert flights(api) == []


def test_codes_resolve_and_create_missing_makes_bare_targets(api: Any) -> None:
    ids = world(api)
    body = upload(api, "nyc", "flights.csv", FLIGHTS, schema="flight", create_missing="true").json()
    assert body["created"] == 7 and body["problems"] == []
    made = {m["schema"]: m for m in body["created_missing"]}
    assert made["airline"]["field"] == "carrier" and sorted(made["airline"]["examples"]) == ["QQ", "ZZ"]
    assert made["plane"] == {"schema": "plane", "field": "tailnum", "count": 1, "examples": ["N000XX"],
                             "named_by": ["tailnum"]}
    planes = api.ok("GET", "/collections/nyc/records", params={"schema": "plane", "where": "tailnum=N000XX"})
    [bare] = planes["items"]
    assert bare["natural_name"] == "N000XX" and bare["data"] == {"tailnum": "N000XX"}
    zz = api.ok("GET", "/collections/nyc/records", params={"schema": "airline", "where": "carrier=ZZ"})["items"][0]
    rows = flights(api)
    qq = api.ok("GET", "/collections/nyc/records", params={"schema": "airline", "where": "carrier=QQ"})["items"][0]
    assert [r.get("carrier") for r in rows] == [ids["UA"], ids["AA"], ids["UA"], zz["id"], ids["UA"], qq["id"], zz["id"]]
    assert [r.get("tailnum") for r in rows] == [ids["N14228"], ids["N619AA"], ids["N14228"], ids["N14228"],
                                                bare["id"], bare["id"], None]
    assert [r.get("arr_delay") for r in rows] == [11, None, -3, 1, 2, 5, 7]  # NA is blank in an integer field
    batch = api.ok("GET", f"/audit/batches/{body['batch_id']}")
    assert batch["count"] == 7 + 3  # the bare records are in the import's batch


def test_ambiguous_names_are_a_problem_and_ids_work_too(api: Any) -> None:
    ids = world(api)
    make_record(api, "nyc", "plane", {"tailnum": "N14228", "seats": 1})  # two planes named alike, no key
    content = f"carrier,tailnum\nUnited Air Lines Inc.,N14228\n{ids['AA'][-8:]},{ids['N619AA']}\n".encode()
    body = upload(api, "nyc", "f.csv", content, schema="flight", skip_bad="true").json()
    assert body["created"] == 1 and body["skipped"] == 1
    [problem] = body["problems"]
    assert problem["kind"] == "reference_ambiguous" and problem["field"] == "tailnum"
    assert problem["message"] == "tailnum: 1 value name several 'plane' records each: 'N14228' (1 row); give their ids"
    assert flights(api) == [{"carrier": ids["AA"], "tailnum": ids["N619AA"]}]


def test_create_schema_infers_integers_missing_values_and_references(api: Any) -> None:
    world(api)
    content = (b"flight,dep_time,carrier,tailnum\n1545,517.0,UA,N14228\n1714,NA,AA,N619AA\n1545,542.0,UA,N14228\n"
               b"725,,UA,N619AA\n")
    body = upload(api, "nyc", "legs.csv", content, create_schema="true", dry_run="true").json()
    fields = {f["name"]: f for f in body["inferred_fields"]}
    assert fields["dep_time"]["type"] == "integer" and fields["flight"]["type"] == "integer"
    assert fields["carrier"]["type"] == "string" and fields["carrier"]["reference"] == "airline"
    assert fields["tailnum"]["reference"] == "plane"
    assert any("column 'carrier': each of its 2 values names one 'airline' record" in n for n in body["notes"])
    assert body["display_template"] is None and body["batch_id"] is None
    assert body["preview"][0] == {"flight": "1545", "dep_time": "517.0", "carrier": "UA", "tailnum": "N14228"}
    body = upload(api, "nyc", "legs.csv", content, create_schema="true", references="auto").json()
    assert body["created"] == 4
    schema = api.ok("GET", "/schemas/legs")
    types = {f["name"]: (f["type"], f.get("restrictions") or {}) for f in schema["fields"]}
    assert types["carrier"] == ("reference", {"schema": "airline"}) and types["tailnum"][0] == "reference"
    listed = api.ok("GET", "/collections/nyc/records", params={"schema": "legs", "where": "carrier=AA"})
    assert [(r["data"]["flight"], r["data"].get("dep_time")) for r in listed["items"]] == [(1714, None)]


def test_the_cli_dry_run_shows_schema_template_rows_and_proposals(tmp_project: Project, tmp_path: Any) -> None:
    ok(tmp_project, "schemas", "create", "--name", "airline", "--display-template", "{carrier}",
       "--fields", '[{"name": "carrier", "type": "string"}]')
    ok(tmp_project, "collections", "create", "--name", "nyc", "--schemas", '["airline"]')
    for code in ("UA", "AA"):
        ok(tmp_project, "records", "create", "nyc", "--schema-name", "airline", "--data", f'{{"carrier": "{code}"}}')
    path = tmp_path / "legs.csv"
    path.write_bytes(b"leg,carrier,dep_time\nA1,UA,517.0\nA2,AA,NA\nA3,UA,600\n")
    out = ok(tmp_project, "import", str(path), "-c", "nyc", "--create-schema", "--dry-run")
    assert "  carrier: string (names 'airline' records: --references auto)" in out.output
    assert "  dep_time: integer" in out.output and "display template: {leg}" in out.output
    assert "first 3 rows:\n  leg=A1, carrier=UA, dep_time=517.0\n" in out.output
    out = ok(tmp_project, "import", str(path), "-c", "nyc", "--create-schema", "--references", "auto")
    assert "  carrier: reference -> airline" in out.output and "created 3" in out.output
    shown = ok(tmp_project, "records", "list", "nyc", "--schema", "legs", "--where", "carrier=UA")
    assert sorted(r["data"]["leg"] for r in json.loads(shown.stdout)["items"]) == ["A1", "A3"]
    made = json.loads(ok(tmp_project, "records", "create", "nyc", "--schema-name", "legs",
                         "--data", '{"leg": "A9", "carrier": "AA"}').stdout)  # --data takes the key too
    aa = json.loads(ok(tmp_project, "records", "list", "nyc", "--schema", "airline", "--where", "carrier=AA").stdout)
    assert made["data"]["carrier"] == aa["items"][0]["id"]
