"""Input limits (issue #13, item 1; docs/limits.md): configurable in ``[limits]`` of
benchbook.toml, enforced before a body is read whole, refused in the spec's envelope."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text
from starlette.testclient import TestClient

from benchbook.http.app import create_app
from benchbook.settings.config import Project
from benchbook.settings.limits import DEFAULT, Limits, current, use
from tests.api.helpers import make_collection, make_record, make_schema
from tests.conftest import Api

SMALL = {"body_bytes": 4096, "upload_bytes": 10_000, "url_bytes": 2000, "header_bytes": 4000,
         "value_length": 50, "list_items": 5, "text_length": 300, "json_depth": 8, "filter_leaves": 4,
         "filter_depth": 3, "filter_values": 10, "page_size": 30}


def _app(project: Project, table: dict[str, Any]) -> Iterator[Api]:
    configured = Project(root=project.root, settings={**project.settings, "limits": table})
    app = create_app(configured)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield Api(client, configured, app)
    app.services.db.engine.dispose()


@pytest.fixture
def small(tmp_project: Project) -> Iterator[Api]:
    """An app (SQLite) whose project sets every limit low."""
    yield from _app(tmp_project, SMALL)


def _setup(api: Api) -> None:
    make_schema(api, "s", [{"name": "title", "type": "string"}, {"name": "n", "type": "integer"},
                           {"name": "tags", "type": "tags"}])
    make_collection(api, "c", ["s"])


def _detail(r: Any, status: int) -> str:
    assert r.status_code == status, r.text[:500]
    assert r.headers["content-type"].startswith("application/json")
    assert len(r.headers["x-request-id"]) == 32
    detail = r.json()["detail"]
    assert isinstance(detail, str)
    return detail


# ------------------------------------------------------------------------------ configuration

def test_the_limits_table_is_read_and_checked(tmp_project):
    assert tmp_project.limits == DEFAULT
    assert Limits.from_table({"body_bytes": 10}).body_bytes == 10
    for bad in ({"body_bytes": 0}, {"body_bytes": "1"}, {"body_bytes": True}, {"nope": 1}, {"json_depth": 10_000}):
        with pytest.raises(ValueError, match=r"\[limits\]"):
            Limits.from_table(bad)
    (tmp_project.root / "benchbook.toml").write_text("[limits]\nvalue_length = 7\n")
    assert Project.open(tmp_project.root).limits.value_length == 7


def test_current_limits_are_per_context():
    assert current() == DEFAULT
    with use(Limits(value_length=3)):
        assert current().value_length == 3
    assert current() == DEFAULT


# ---------------------------------------------------------------------------------- bodies

def test_a_body_over_the_limit_is_413_from_its_content_length(small):
    body = json.dumps({"name": "c2", "description": "x" * 200, "pad": "y" * 5000})
    detail = _detail(small.post("/collections", content=body, headers={"content-type": "application/json"}), 413)
    assert "4096" in detail and "body_bytes" in detail
    assert small.get("/collections/c2").status_code == 404


def test_a_streamed_json_body_without_a_content_length_is_never_read(small):
    def chunks() -> Iterator[bytes]:
        yield b'{"name": "c2", "description": "'
        for _ in range(100):
            yield b"x" * 100
        yield b'"}'
    r = small.post("/collections", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code in (413, 422), r.text  # Connexion reads no JSON body without a length
    assert small.get("/collections/c2").status_code == 404


def test_an_upload_over_its_limit_is_413_and_leaves_nothing_on_disk(small):
    files_dir = small.project.files_dir
    before = sorted(p.name for p in files_dir.rglob("*"))
    r = small.post("/files", files={"file": ("big.bin", b"z" * 20_000)})
    assert "upload_bytes" in _detail(r, 413)

    def chunks() -> Iterator[bytes]:
        yield b'--B\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'
        for _ in range(30):
            yield b"z" * 1000
        yield b"\r\n--B--\r\n"
    r = small.post("/files", content=chunks(), headers={"content-type": "multipart/form-data; boundary=B"})
    assert "upload_bytes" in _detail(r, 413)
    assert sorted(p.name for p in files_dir.rglob("*")) == before
    # uploads have their own limit, above body_bytes
    assert small.post("/files", files={"file": ("ok.bin", b"z" * 8000)}).status_code == 201


def test_a_long_request_target_is_414_and_many_headers_431(small):
    assert "url_bytes" in _detail(small.get("/records", params={"search": "x" * 2100}), 414)
    assert "header_bytes" in _detail(small.get("/records", headers={"x-pad": "p" * 5000}), 431)
    assert small.get("/records", params={"search": "x" * 100}).status_code == 200


# ------------------------------------------------------------------------------ JSON bodies

def test_json_nesting_and_body_strings_are_bounded(small):
    _setup(small)
    deep = {"name": "c2", "description": "d"}
    inner: Any = "x"
    for _ in range(10):
        inner = [inner]
    r = small.post("/collections/c/records", json={"schema_name": "s", "data": {"title": inner}})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "too_deep"
    r = small.post("/collections", json={**deep, "description": "d" * 301})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "description"]
    assert r.json()["errors"][0]["type"] == "string_too_long"
    assert small.post("/collections", json={**deep, "description": "d" * 300}).status_code == 201


def test_record_values_are_bounded(small):
    _setup(small)
    r = small.post("/collections/c/records", json={"schema_name": "s", "data": {"title": "t" * 51}})
    assert r.status_code == 422, r.text
    entry = r.json()["errors"][0]
    assert entry["loc"] == ["body", "data", "title"] and entry["type"] == "too_long" and "value_length" in entry["msg"]
    r = small.post("/collections/c/records", json={"schema_name": "s", "data": {"tags": list("abcdef")}})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "too_many"
    rec = make_record(small, "c", "s", {"title": "t" * 50, "tags": list("abcde")})
    r = small.patch(f"/records/{rec['id']}", json={"data": {"title": "t" * 51}})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "data", "title"]


def test_a_record_is_bounded_as_a_whole(tmp_project):
    for api in _app(tmp_project, {"record_length": 400, "value_length": 300}):
        make_schema(api, "w", [{"name": f"t{i}", "type": "string"} for i in range(3)])
        make_collection(api, "c", ["w"])
        r = api.post("/collections/c/records", json={"schema_name": "w", "data": {"t0": "a" * 300, "t1": "b" * 300}})
        assert r.status_code == 422 and "record_length" in r.json()["errors"][0]["msg"], r.text
        assert r.json()["errors"][0]["loc"] == ["body", "data"]
        rec = make_record(api, "c", "w", {"t0": "a" * 300})
        r = api.patch(f"/records/{rec['id']}", json={"data": {"t1": "b" * 300}})
        assert r.status_code == 422


def test_records_stored_past_the_limit_match_no_filter(tmp_project):
    """A value stored before the limits existed would cost its size once per leaf on SQLite."""
    for api in _app(tmp_project, {}):
        _setup(api)
        big = make_record(api, "c", "s", {"title": "x" * 5000, "n": 1})
        small_one = make_record(api, "c", "s", {"title": "x", "n": 1})
    for api in _app(tmp_project, {"record_length": 1000}):
        assert api.ok("GET", "/collections/c/records")["total"] == 2  # still listed and readable
        assert api.ok("GET", f"/records/{big['id']}")["data"]["n"] == 1
        tree = json.dumps({"or": [{"field": "title", "op": "contains", "value": "x"}] * 50})
        found = api.ok("GET", "/collections/c/records", params={"filter": tree})
        if api.app.services.db.engine.dialect.name == "sqlite":
            assert [r["id"] for r in found["items"]] == [small_one["id"]]


def test_a_record_exactly_at_the_length_limit_still_matches_filters(tmp_project):
    """The limit is a most: a record whose stored values are exactly ``record_length`` characters
    is written and found like any other; one character more is skipped by filters on SQLite."""
    for api in _app(tmp_project, {}):
        _setup(api)
        at = make_record(api, "c", "s", {"title": "x" * 500, "n": 1})["id"]
        over = make_record(api, "c", "s", {"title": "x" * 501, "n": 1})["id"]
        with api.app.services.db.engine.connect() as conn:
            sizes = dict(conn.execute(text("SELECT id, length(data) FROM records")).all())
        assert sizes[over] == sizes[at] + 1
    for api in _app(tmp_project, {"record_length": sizes[at]}):
        r = api.patch(f"/records/{at}", json={"data": {"n": 2}})  # the same length: still writable
        assert r.status_code == 200, r.text
        tree = json.dumps({"field": "title", "op": "contains", "value": "x"})
        found = api.ok("GET", "/collections/c/records", params={"filter": tree})
        assert [r["id"] for r in found["items"]] == [at]


def test_the_default_value_limit_refuses_a_huge_string(api):
    _setup(api)
    r = api.post("/collections/c/records", json={"schema_name": "s", "data": {"title": "t" * 100_001}})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "too_long"
    assert api.ok("GET", "/collections/c/records")["total"] == 0


# ---------------------------------------------------------------------------------- filters

def _tree(leaves: int) -> str:
    return json.dumps({"or": [{"field": "n", "op": "eq", "value": i} for i in range(leaves)]})


def test_filter_leaves_depth_and_values_follow_the_configuration(small):
    _setup(small)
    make_record(small, "c", "s", {"n": 2})
    assert small.ok("GET", "/collections/c/records", params={"filter": _tree(4)})["total"] == 1
    r = small.get("/collections/c/records", params={"filter": _tree(5)})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "filter_too_large"
    assert "filter_leaves" in r.json()["errors"][0]["msg"]
    deep = {"and": [{"and": [{"and": [{"and": [{"field": "n", "op": "eq", "value": 1}]}]}]}]}
    r = small.get("/collections/c/records", params={"filter": json.dumps(deep)})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "filter_too_deep"
    many = {"field": "n", "op": "in", "value": list(range(11))}
    r = small.get("/collections/c/records", params={"filter": json.dumps(many)})
    assert r.status_code == 422 and "filter_values" in r.json()["errors"][0]["msg"]
    r = small.get("/audit/events", params={"filter": json.dumps({"or": [{"field": "action", "op": "eq",
                                                                          "value": "create"}] * 5})})
    assert r.status_code == 422


def test_a_filter_of_1000_leaves_is_422_even_where_the_url_allows_it(tmp_project):
    for api in _app(tmp_project, {"url_bytes": 1_000_000}):
        _setup(api)
        leaves = ",".join(f'{{"field":"n","op":"eq","value":{i}}}' for i in range(1000))
        r = api.get("/collections/c/records?filter=" + '{"or":[' + leaves + "]}")
        assert r.status_code == 422 and r.json()["errors"][0]["type"] == "filter_too_large", r.text[:300]


# ------------------------------------------------------------------------------ page sizes

def test_page_size_is_configurable_and_documented(small):
    _setup(small)
    assert small.get("/collections/c/records", params={"limit": 30}).status_code == 200
    r = small.get("/collections/c/records", params={"limit": 31})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "limit"]
    assert small.get("/audit", params={"limit": 31}).status_code == 422
    assert small.get("/audit/events", params={"limit": 31}).status_code == 422
    assert small.get("/jobs", params={"limit": 31}).status_code == 200  # the spec's 500 stands
    doc = small.client.get("/openapi.json").json()
    assert doc["components"]["parameters"]["RecordLimit"]["schema"]["maximum"] == 30


def test_default_document_states_the_limits(api):
    doc = api.client.get("/openapi.json").json()
    assert doc["components"]["parameters"]["RecordLimit"]["schema"]["maximum"] == DEFAULT.page_size
    assert "docs/limits.md" in doc["info"]["description"]
    upload = doc["paths"]["/files"]["post"]["responses"]
    assert "413" in upload
    for item in doc["paths"].values():  # any operation may meet the URL and header limits
        for method, operation in item.items():
            if method in ("get", "put", "post", "patch", "delete"):
                assert {"414", "431"} <= set(operation["responses"]), operation["operationId"]
                assert ("413" in operation["responses"]) == ("requestBody" in operation), operation["operationId"]


# ---------------------------------------------------------------------------- a live server

def test_a_live_server_answers_long_targets_and_repeated_origins_in_the_envelope(tmp_path):
    """uvicorn itself answers a request target of 64 KiB or more with a plain-text 400 under
    httptools: ``benchbook serve`` runs h11 with room past the limits, so benchbook answers; a
    request h11 refuses (Host twice) gets the envelope from benchbook's h11 protocol."""
    import socket

    from tests import patient_http as http
    from tests.live_server import served
    from tests.waiting import HANG

    # the log in a file, not a pipe: the access log line is 70 KB
    with served(tmp_path / "project", tmp_path / "server.log") as (root, port):
        base = root + "/api"
        with socket.create_connection(("127.0.0.1", port), timeout=HANG) as conn:
            conn.sendall(b"GET /api/records?search=" + b"x" * 70_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Connection: close\r\n\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 414"), head
        assert "url_bytes" in json.loads(body)["detail"]
        r = http.post(base + "/collections", json={"name": "x"},
                       headers=[("origin", "https://evil.example"), ("origin", "http://127.0.0.1")])
        assert r.status_code == 400
        assert http.get(base + "/collections/x").status_code == 404
        # a second Host never reaches the app (h11 refuses the request): still the envelope
        with socket.create_connection(("127.0.0.1", port), timeout=HANG) as conn:
            body = b'{"name": "y"}'
            conn.sendall(b"POST /api/collections HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 13\r\n\r\n" + body)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), head
        assert b"content-type: application/json" in head.lower()
        assert "more than once (such as Host)" in json.loads(body)["detail"]
        assert http.get(base + "/collections/y").status_code == 404


def test_serve_names_a_bad_limits_key_instead_of_a_traceback(tmp_path):
    from click.testing import CliRunner

    from benchbook.cli.main import build_cli

    Project.init(tmp_path)
    (tmp_path / "benchbook.toml").write_text("[limits]\nbody_bytes = 0\n")
    result = CliRunner().invoke(build_cli(), ["serve", "--project", str(tmp_path)])
    assert result.exit_code == 1 and "[limits] body_bytes" in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------------------ imported files

def test_an_import_past_its_rows_or_bytes_is_422_naming_the_setting(tmp_project):
    """``import_rows`` and ``import_bytes`` (docs/limits.md): an import's rows wait in memory
    until all are checked, so a file past either is refused before any is checked."""
    for api in _app(tmp_project, {"import_rows": 3, "import_bytes": 200}):
        _setup(api)
        three = "title,n\n" + "".join(f"t{i},{i}\n" for i in range(3))
        r = api.post("/collections/c/import", files={"file": ("three.csv", three.encode())}, data={"schema": "s"})
        assert r.status_code == 200 and r.json()["created"] == 3, r.text
        four = three + "t3,3\n"
        r = api.post("/collections/c/import", files={"file": ("four.csv", four.encode())}, data={"schema": "s"})
        detail = _detail(r, 422)
        assert "four.csv has more than 3 rows" in detail and "[limits] import_rows" in detail
        wide = "title,n\n" + "x" * 190 + ",1\n"
        r = api.post("/collections/c/import", files={"file": ("wide.csv", wide.encode())}, data={"schema": "s"})
        detail = _detail(r, 422)
        assert f"wide.csv is {len(wide)} bytes" in detail and "[limits] import_bytes" in detail
        assert api.get("/collections/c/records").json()["total"] == 3


def test_an_import_body_is_bounded_by_import_bytes_not_body_bytes(tmp_project):
    """``POST /collections/{name}/import`` carries a file: its body may pass ``body_bytes`` up to
    ``import_bytes`` and a form's allowance (413 past that, naming ``import_bytes``); the file
    itself is held to ``import_bytes`` exactly (422)."""
    from benchbook.http.request_limits import FORM_ALLOWANCE

    for api in _app(tmp_project, {"body_bytes": 4096, "import_bytes": 20_000}):
        _setup(api)
        rows = "title,n\n" + "".join(f"{'t' * 90}{i},{i}\n" for i in range(150))  # about 14,000 bytes
        assert 4096 < len(rows) < 20_000
        r = api.post("/collections/c/import", files={"file": ("big.csv", rows.encode())}, data={"schema": "s"})
        assert r.status_code == 200 and r.json()["created"] == 150, r.text
        r = api.post("/collections/c/records", content=b"{" + b" " * 5000 + b"}",
                     headers={"content-type": "application/json"})
        assert "[limits] body_bytes" in _detail(r, 413)  # other bodies keep body_bytes
        over = rows + "x" * 8000 + ",1\n"
        r = api.post("/collections/c/import", files={"file": ("over.csv", over.encode())}, data={"schema": "s"})
        assert f"over.csv is {len(over):,} bytes" in _detail(r, 422)
        huge = b"title,n\n" + b"y" * (20_000 + FORM_ALLOWANCE)
        r = api.post("/collections/c/import", files={"file": ("huge.csv", huge)}, data={"schema": "s"})
        detail = _detail(r, 413)
        assert "[limits] import_bytes" in detail and "an imported file" in detail
        assert api.get("/collections/c/records").json()["total"] == 150
