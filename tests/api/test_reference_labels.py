"""References read by name (issue 35 item 2): exports write a reference by its target's label
where that label imports back to the same record (else the id; the ids are the column choice
``carrier.id``), an import names its rows from their targets' names, and search matches a
reference by its target's label. On both backends (the ``api`` fixture)."""
from __future__ import annotations

import csv
import io
import zipfile
from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def _world(api: Any) -> dict[str, Any]:
    make_schema(api, "airline", [{"name": "carrier", "type": "string"}, {"name": "name", "type": "string"}],
                display_template="{carrier}")
    make_schema(api, "flight", [
        {"name": "flight", "type": "integer"},
        {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
        {"name": "partners", "type": "reference_list", "restrictions": {"schema": "airline"}}],
        display_template="{carrier}{flight}")
    make_collection(api, "nyc", ["airline", "flight"])
    w = {code: make_record(api, "nyc", "airline", {"carrier": code, "name": f"{code} Airways"})
         for code in ("UA", "AA", "XX", "A, B")}
    w["XX2"] = make_record(api, "nyc", "airline", {"carrier": "XX"})  # a second airline named XX
    w["nameless"] = make_record(api, "nyc", "airline", {"name": "no code"})
    return w


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _flights(api: Any, w: dict[str, Any]) -> list[dict[str, Any]]:
    return [make_record(api, "nyc", "flight", data) for data in (
        {"flight": 1, "carrier": w["UA"]["id"], "partners": [w["AA"]["id"], w["A, B"]["id"]]},
        {"flight": 2, "carrier": w["nameless"]["id"]},
        {"flight": 3, "carrier": w["XX"]["id"]},
        {"flight": 4, "carrier": w["A, B"]["id"]})]


def test_exports_write_references_by_labels_that_import_back(api: Any) -> None:
    w = _world(api)
    _flights(api, w)
    params = {"schema": "flight", "sort": "flight:asc"}
    rows = _rows(api.get("/collections/nyc/export.csv", params=params).text)
    assert [r["natural_name"] for r in rows] == ["UA1", f"{w['nameless']['id']}2", "XX3", "A, B4"]
    # a label where it names the target alone; the id without a name, for a shared name, and in a
    # list for a name holding the list's separator (a single reference keeps it)
    assert [r["carrier"] for r in rows] == ["UA", w["nameless"]["id"], w["XX"]["id"], "A, B"]
    assert rows[0]["partners"] == f"AA, {w['A, B']['id']}"
    # the ids are a column choice
    chosen = _rows(api.get("/collections/nyc/export.csv",
                           params={**params, "columns": ["flight", "carrier", "carrier.id"]}).text)
    assert next((r["carrier"], r["carrier.id"]) for r in chosen) == ("UA", w["UA"]["id"])
    # the zip's records.csv reads the same
    body = {"collection": "nyc", "schema": "flight", "sort": ["flight:asc"], "columns": ["flight", "carrier"],
            "files": False}
    r = api.post("/file-access/zip", json=body)
    assert r.status_code == 200, r.text
    with zipfile.ZipFile(io.BytesIO(r.content)) as archive:
        zipped = _rows(archive.read("records.csv").decode())
    assert [z["carrier"] for z in zipped] == [r["carrier"] for r in rows]
    # imported back (labels resolve by name, ids as ids), each reference names the same record
    again = io.StringIO()
    csv.writer(again).writerows([["flight", "carrier", "partners"],
                                 *([r["flight"], r["carrier"], r["partners"]] for r in rows)])
    out = api.post("/collections/nyc/import", files={"file": ("again.csv", again.getvalue().encode())},
                   data={"schema": "flight"})
    assert out.status_code == 200 and out.json()["created"] == 4, out.text
    listed = api.ok("GET", "/collections/nyc/records", params={**params, "limit": 10})["items"]
    by_flight: dict[int, list[Any]] = {}
    for item in listed:
        by_flight.setdefault(item["data"]["flight"], []).append((item["data"]["carrier"], item["data"].get("partners")))
    assert all(len(set(map(str, pair))) == 1 for pair in by_flight.values()), by_flight


def test_a_deleted_target_is_exported_by_its_id(api: Any) -> None:
    w = _world(api)
    flight = make_record(api, "nyc", "flight", {"flight": 9, "carrier": w["AA"]["id"]})
    api.ok("DELETE", f"/records/{w['AA']['id']}", 204, params={"references": "keep"})
    [row] = _rows(api.get("/collections/nyc/export.csv", params={"schema": "flight"}).text)
    assert (row["id"], row["carrier"]) == (flight["id"], w["AA"]["id"])


def test_an_import_names_rows_from_their_targets(api: Any) -> None:
    w = _world(api)
    text = "flight,carrier\n1545,UA\n7,AA\n"
    out = api.post("/collections/nyc/import", files={"file": ("f.csv", text.encode())}, data={"schema": "flight"})
    assert out.status_code == 200, out.text
    listed = api.ok("GET", "/collections/nyc/records", params={"schema": "flight", "sort": "flight:asc"})["items"]
    assert [r["natural_name"] for r in listed] == ["AA7", "UA1545"]
    assert listed[1]["data"]["carrier"] == w["UA"]["id"]


def _found(api: Any, search: str, **params: Any) -> list[int]:
    items = api.ok("GET", "/collections/nyc/records", params={"schema": "flight", "search": search, **params})["items"]
    return sorted(r["data"]["flight"] for r in items)


def test_search_matches_a_reference_by_its_targets_label(api: Any, monkeypatch: Any) -> None:
    w = _world(api)
    api.ok("PATCH", "/schemas/flight", json={"display_template": "F{flight}"})  # no label in the names
    _flights(api, w)
    make_record(api, "nyc", "flight", {"flight": 1545, "carrier": w["AA"]["id"]})
    make_record(api, "nyc", "flight", {"flight": 77, "partners": [w["UA"]["id"]]})
    assert _found(api, "UA") == [1, 77]  # the carrier's label, or a partner's
    assert _found(api, "ua 1") == [1]  # words spread over the record and its targets
    assert _found(api, "AA 1545") == [1545]
    assert _found(api, "1545") == [1545]  # own values as before
    assert _found(api, "Airways") == []  # a target's other values are not its label
    assert _found(api, "nothing") == []
    total = api.ok("GET", "/collections/nyc/records", params={"schema": "flight", "search": "UA", "limit": 0})
    assert total["total"] == 2
    # the picker's list too
    picked = api.ok("GET", "/records", params={"schema": "flight", "search": "UA"})
    assert sorted(r["data"]["flight"] for r in picked) == [1, 77]
    # more targets than are listed by id: the referrers are found by a subquery
    monkeypatch.setattr("benchbook.domain.records.search.TARGETS_MOST", 0)
    assert _found(api, "UA") == [1, 77]
    assert _found(api, "ua 1") == [1]
