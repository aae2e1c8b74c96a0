"""``POST /file-access/zip`` (issue 14, item 12): a CSV of chosen columns and the records'
files in one zip, selected by the same record query as a list."""
from __future__ import annotations

import csv
import hashlib
import io
import zipfile
from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def upload(api: Any, name: str, content: bytes) -> str:
    return str(api.ok("POST", "/files", 201, files={"file": (name, content, "application/octet-stream")})["sha256"])


def lab(api: Any) -> dict[str, Any]:
    make_schema(api, "site", [{"name": "region", "type": "string"}], display_template="{region}")
    make_schema(api, "scan", [{"name": "code", "type": "string"}, {"name": "image", "type": "file"},
                              {"name": "extras", "type": "file_list"}], parent="site", display_template="{code}")
    make_collection(api, "lab", ["site", "scan"])
    north = make_record(api, "lab", "site", {"region": "North"})
    south = make_record(api, "lab", "site", {"region": "South"})
    a, b, c = upload(api, "a.png", b"image a"), upload(api, "b.png", b"image b"), upload(api, "notes.txt", b"notes")
    scans = [make_record(api, "lab", "scan", {"code": "S1", "image": a, "extras": [c]}, parent=north["id"]),
             make_record(api, "lab", "scan", {"code": "S2", "image": b}, parent=south["id"]),
             make_record(api, "lab", "scan", {"code": "S3", "image": a}, parent=north["id"])]
    return {"north": north, "south": south, "shas": (a, b, c), "scans": scans}


def open_zip(response: Any) -> tuple[zipfile.ZipFile, list[list[str]]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["content-disposition"].endswith('.zip"')
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    rows = list(csv.reader(io.StringIO(archive.read("records.csv").decode("utf-8"))))
    return archive, rows


def test_zip_holds_the_chosen_columns_and_the_files(api: Any) -> None:
    t = lab(api)
    a, b, c = t["shas"]
    archive, rows = open_zip(api.post("/file-access/zip", json={
        "collection": "lab", "schema": "scan", "columns": ["code", "region", "image", "extras"],
        "sort": ["code:desc"]}))
    assert rows == [["code", "region", "image", "extras"], ["S3", "North", a, ""], ["S2", "South", b, ""],
                    ["S1", "North", a, c]]
    names = set(archive.namelist()) - {"records.csv"}
    assert names == {f"files/{a}/a.png", f"files/{b}/b.png", f"files/{c}/notes.txt"}  # each file once
    assert archive.read(f"files/{a}/a.png") == b"image a"
    assert hashlib.sha256(archive.read(f"files/{c}/notes.txt")).hexdigest() == c


def test_zip_follows_the_record_query_and_can_leave_files_out(api: Any) -> None:
    t = lab(api)
    a = t["shas"][0]
    archive, rows = open_zip(api.post("/file-access/zip", json={
        "collection": "lab", "where": ["region=North"], "schema": "scan", "columns": ["id", "code"], "files": False}))
    assert [r[1] for r in rows[1:]] == ["S1", "S3"]
    assert archive.namelist() == ["records.csv"]
    archive, rows = open_zip(api.post("/file-access/zip", json={"collection": "lab", "columns": ["code", "image"],
                                                                   "where": ["code=S3"]}))
    assert rows == [["code", "image"], ["S3", a]] and f"files/{a}/a.png" in archive.namelist()


def test_zip_reads_inherited_fields_for_every_schema(api: Any) -> None:
    lab(api)
    _, rows = open_zip(api.post("/file-access/zip", json={"collection": "lab", "columns": ["code", "region"],
                                                           "sort": ["region", "code"], "files": False}))
    assert rows == [["code", "region"], ["S1", "North"], ["S3", "North"], ["", "North"], ["S2", "South"],
                    ["", "South"]]  # sites have no code: last within their region


def test_zip_defaults_to_the_csv_exports_columns(api: Any) -> None:
    lab(api)
    _, rows = open_zip(api.post("/file-access/zip", json={"collection": "lab"}))
    exported = list(csv.reader(io.StringIO(api.get("/collections/lab/export.csv").text)))
    assert rows[0] == exported[0] and [r[0] for r in rows] == [r[0] for r in exported]
    region = rows[0].index("region")
    assert {r[region] for r in rows[1:]} == {"North", "South"}  # scans too: read from their site


def test_zip_lists_files_the_store_no_longer_holds(api: Any) -> None:
    t = lab(api)
    b = t["shas"][1]
    (api.project.files_dir / b[:2] / b).unlink()
    response = api.post("/file-access/zip", json={"collection": "lab", "where": ["code=S2"], "columns": ["image"]})
    archive, _ = open_zip(response)
    assert archive.read("missing-files.txt").decode() == f"{b}\n"


def test_zip_refusals(api: Any) -> None:
    lab(api)
    unknown = api.post("/file-access/zip", json={"collection": "lab", "columns": ["code", "nope"]})
    assert unknown.status_code == 409 and unknown.json()["errors"][0]["loc"] == ["body", "columns", 1]
    nowhere = api.post("/file-access/zip", json={"collection": "nowhere"})  # everything is in the body
    assert nowhere.status_code == 409 and nowhere.json()["errors"][0]["loc"] == ["body", "collection"]
    assert api.post("/file-access/zip", json={"columns": ["id"]}).status_code == 422
