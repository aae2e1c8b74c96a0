"""``GET /collections/{name}/export.csv?columns=…`` (issue 16 item 2: export exactly what the
records table shows): chosen columns in order, inherited fields and ``ref.target`` joins
included, an unknown column refused at its position before any row is sent."""
from __future__ import annotations

import csv
import io
from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def rows_of(response: Any) -> list[list[str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.text)))


def lab(api: Any) -> dict[str, Any]:
    make_schema(api, "site", [{"name": "region", "type": "string"}], display_template="{region}")
    make_schema(api, "scan", [{"name": "code", "type": "string"}, {"name": "depth", "type": "float"}],
                parent="site", display_template="{code}")
    make_collection(api, "lab", ["site", "scan"])
    north = make_record(api, "lab", "site", {"region": "North"})
    south = make_record(api, "lab", "site", {"region": "South"})
    return {"scans": [make_record(api, "lab", "scan", {"code": "S1", "depth": 1.5}, parent=north["id"]),
                      make_record(api, "lab", "scan", {"code": "S2"}, parent=south["id"])]}


def test_chosen_columns_in_order_with_an_inherited_field(api: Any) -> None:
    t = lab(api)
    rows = rows_of(api.get("/collections/lab/export.csv",
                           params=[("schema", "scan"), ("sort", "code:desc"), ("columns", "region"),
                                   ("columns", "code"), ("columns", "id"), ("columns", "depth")]))
    s1, s2 = t["scans"]
    assert rows == [["region", "code", "id", "depth"], ["South", "S2", s2["id"], ""],
                    ["North", "S1", s1["id"], "1.5"]]


def test_without_columns_the_export_is_unchanged(api: Any) -> None:
    lab(api)
    rows = rows_of(api.get("/collections/lab/export.csv", params={"schema": "scan"}))
    assert rows[0] == ["id", "schema_name", "parent_record_id", "natural_name", "code", "depth"]
    assert len(rows) == 3


def test_an_unknown_column_is_refused_at_its_position(api: Any) -> None:
    lab(api)
    r = api.get("/collections/lab/export.csv", params=[("schema", "scan"), ("columns", "code"),
                                                        ("columns", "nope")])
    assert r.status_code == 404, r.text  # names no column
    locs = [e["loc"] for e in r.json()["errors"]] if "errors" in r.json() else [r.json()]
    assert ["query", "columns", 1] in locs, r.json()
