"""No 500 from input (issue #13, item 2): text no database stores, deep nesting, huge filters,
duplicate Host/Origin headers, restores of things that are not deleted, and ``loc`` naming where
a bad value came from. Each case was a 500, a silent store or an inconsistent status before."""
from __future__ import annotations

import json
import re

import pytest

from tests.api.helpers import make_collection, make_record, make_schema

JSON = {"content-type": "application/json"}


def _setup(api):
    make_schema(api, "s", [{"name": "title", "type": "string"}, {"name": "n", "type": "integer"},
                           {"name": "tags", "type": "tags"}])
    make_collection(api, "c", ["s"])


def _locs(r):
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["detail"] == "Request validation failed" or isinstance(body["detail"], str)
    return [e["loc"] for e in body.get("errors", [])]


# ------------------------------------------------------------------ NUL and lone surrogates

@pytest.mark.parametrize("text", ["\\ud800", "a\\udfffb", "\\u0000", "x\\u0000"])
def test_unstorable_text_in_a_record_value_is_422(api, text):
    _setup(api)
    raw = '{"schema_name": "s", "data": {"title": "' + text + '"}}'
    r = api.post("/collections/c/records", content=raw.encode(), headers=JSON)
    assert ["body", "data", "title"] in _locs(r)
    assert api.ok("GET", "/collections/c/records")["total"] == 0


def test_unstorable_text_in_a_tags_item_is_422(api):
    _setup(api)
    raw = '{"schema_name": "s", "data": {"tags": ["ok", "bad\\u0000"]}}'
    r = api.post("/collections/c/records", content=raw.encode(), headers=JSON)
    assert r.status_code == 422, r.text


@pytest.mark.parametrize("key", ["description", "label"])
@pytest.mark.parametrize("text", ["\\ud83d", "\\u0000"])
def test_unstorable_text_in_collection_and_schema_labels_is_422(api, key, text):
    raw = '{"name": "c2", "' + key + '": "lab ' + text + '"}'
    r = api.post("/collections", content=raw.encode(), headers=JSON)
    assert ["body", key] in _locs(r)
    r = api.post("/schemas", content=raw.encode(), headers=JSON)
    assert ["body", key] in _locs(r)
    assert api.get("/collections/c2").status_code == 404


def test_unstorable_text_in_an_update_is_422(api):
    _setup(api)
    rec = make_record(api, "c", "s", {"title": "fine"})
    raw = '{"data": {"title": "bad \\u0000"}}'
    r = api.patch(f"/records/{rec['id']}", content=raw.encode(), headers=JSON)
    assert ["body", "data", "title"] in _locs(r)
    raw = '{"description": "\\udc00"}'
    assert api.patch("/collections/c", content=raw.encode(), headers=JSON).status_code == 422
    assert api.ok("GET", f"/records/{rec['id']}")["data"]["title"] == "fine"


def test_a_json_key_with_a_lone_surrogate_is_422(api):
    _setup(api)
    raw = '{"schema_name": "s", "data": {"\\ud800": 1}}'
    r = api.post("/collections/c/records", content=raw.encode(), headers=JSON)
    assert r.status_code == 422, r.text


def test_nul_in_a_query_or_path_parameter_is_422(api):
    _setup(api)
    assert ["query", "search"] in _locs(api.get("/collections/c/records?search=a%00b"))
    assert _locs(api.get("/collections/c%00x"))
    assert _locs(api.get("/records/01AB%00CD"))


def test_nul_in_an_uploaded_file_name_is_422(api):
    body = (b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="bad\x00name.txt"\r\n'
            b"Content-Type: text/plain\r\n\r\ncontent\r\n--XyZ--\r\n")
    r = api.post("/files", content=body, headers={"content-type": "multipart/form-data; boundary=XyZ"})
    assert ["body", "file", "filename"] in _locs(r)


def test_filters_refuse_nul_as_values_do(api):
    _setup(api)
    tree = json.dumps({"field": "title", "op": "eq", "value": "a\x00"})
    assert api.get("/collections/c/records", params={"filter": tree}).status_code == 422


# ----------------------------------------------------------------------------- deep nesting

@pytest.mark.parametrize("depth", [150, 1000, 5000])
def test_deeply_nested_record_data_is_422(api, depth):
    _setup(api)
    raw = '{"schema_name": "s", "data": {"title": ' + "[" * depth + "]" * depth + "}}"
    r = api.post("/collections/c/records", content=raw.encode(), headers=JSON)
    assert r.status_code == 422, r.text[:300]
    assert r.json()["errors"][0]["type"] == "too_deep"


@pytest.mark.parametrize("depth", [150, 1000, 5000])
def test_deeply_nested_restore_all_filter_is_422(api, depth):
    raw = '{"filter": ' + '{"and": [' * depth + '{"field": "action", "op": "eq", "value": "delete"}' + \
          "]}" * depth + "}"
    r = api.post("/audit/restore-all", content=raw.encode(), headers=JSON)
    assert r.status_code == 422, r.text[:300]


def test_a_deeply_nested_workflow_is_422(api):
    for content in ("[" * 3000 + "]" * 3000, "a: " + "{x: " * 3000 + "1" + "}" * 3000):
        r = api.put("/workflows/deep", json={"content": content})
        assert r.status_code == 422 and "nested too deep" in r.text, r.text[:300]


def test_a_filter_nested_past_its_depth_in_the_body_names_the_body(api):
    tree = {"field": "action", "op": "eq", "value": "delete"}
    for _ in range(40):
        tree = {"and": [tree]}
    r = api.post("/audit/restore-all", json={"filter": tree})
    locs = _locs(r)
    assert locs and locs[0][:2] == ["body", "filter"], locs


# ---------------------------------------------------------------------------- huge filters

def test_a_record_filter_of_many_leaves_is_422_not_500(api):
    _setup(api)
    tree = json.dumps({"or": [{"field": "n", "op": "eq", "value": i} for i in range(101)]}, separators=(",", ":"))
    r = api.get("/collections/c/records", params={"filter": tree})
    assert r.json()["errors"][0]["type"] == "filter_too_large", r.text[:300]
    assert "101" not in r.json()["errors"][0]["msg"] and "100" in r.json()["errors"][0]["msg"]


def test_a_restore_all_filter_of_1000_leaves_is_422_naming_the_body(api):
    tree = {"or": [{"field": "entity_id", "op": "eq", "value": f"X{i}"} for i in range(1000)]}
    r = api.post("/audit/restore-all", json={"filter": tree})
    assert _locs(r) == [["body", "filter"]]
    assert r.json()["errors"][0]["type"] == "filter_too_large"
    assert api.get("/audit/restore-all", params={"filter": json.dumps(tree["or"][0])}).status_code == 200


def test_restore_all_filter_errors_name_where_the_filter_came_from(api):
    bad = {"field": "nope", "op": "eq", "value": "x"}
    assert _locs(api.post("/audit/restore-all", json={"filter": bad})) == [["body", "filter"]]
    assert _locs(api.get("/audit/restore-all", params={"filter": json.dumps(bad)})) == [["query", "filter"]]
    assert _locs(api.post("/audit/restore-all", json={"filter": {"or": [bad]}})) == [["body", "filter", "or", 0]]


def test_history_and_run_filters_are_bounded_too(api):
    leaves = {"or": [{"field": "action", "op": "eq", "value": "delete"}] * 101}
    assert api.get("/audit/events", params={"filter": json.dumps(leaves)}).status_code == 422
    many = {"field": "entity_id", "op": "in", "value": [f"X{i}" for i in range(1001)]}
    r = api.post("/audit/restore-all", json={"filter": many})
    assert _locs(r) == [["body", "filter"]] and "1000" in r.json()["errors"][0]["msg"]


# --------------------------------------------------------------------- long URLs and headers

def test_a_long_request_target_gets_the_envelope(api):
    r = api.get("/collections", params={"q": "x" * 20_000})
    assert r.status_code == 414 and "url_bytes" in r.json()["detail"]
    assert len(r.headers["x-request-id"]) == 32


@pytest.mark.parametrize("name", ["host", "origin", "referer"])
def test_a_repeated_host_origin_or_referer_is_400(api, name):
    local = "127.0.0.1" if name == "host" else "http://127.0.0.1"
    headers = [(name, local), (name, "https://evil.example" if name != "host" else "evil.example")]
    if name != "host":
        headers.append(("host", "127.0.0.1"))
    r = api.post("/collections", json={"name": "x"}, headers=headers)
    assert r.status_code == 400 and "more than once" in r.json()["detail"], r.text
    assert len(r.headers["x-request-id"]) == 32
    assert api.get("/collections/x").status_code == 404


def test_a_second_origin_does_not_hide_a_foreign_first_one(api):
    headers = [("origin", "https://evil.example"), ("origin", "http://127.0.0.1")]
    r = api.post("/collections", json={"name": "x"}, headers=headers)
    assert r.status_code == 400
    assert api.get("/collections/x").status_code == 404


# ------------------------------------------------------------- restoring what is not deleted

def test_restoring_anything_that_is_not_deleted_is_409(api):
    _setup(api)
    rec = make_record(api, "c", "s", {"title": "live"})
    for path in ("/collections/c/restore", "/schemas/s/restore", "/schemas/s/fields/title/restore",
                 f"/records/{rec['id']}/restore"):
        r = api.post(path)
        assert r.status_code == 409, (path, r.text)
        assert "not deleted" in r.json()["detail"]
    for path in ("/collections/nope/restore", "/schemas/nope/restore", "/schemas/s/fields/nope/restore",
                 "/records/01ZZZZZZZZZZZZZZZZZZZZZZZZ/restore"):
        assert api.post(path).status_code == 404, path


# ------------------------------------------------------------- a body without Content-Type

def _operations_with_a_body() -> list[tuple[str, str, str]]:
    """``(method, path, media type)`` of every operation of the OpenAPI document that takes a
    request body (read from the document, so a new operation is covered as it is added)."""
    from benchbook.http.document import load_document

    return sorted((method.upper(), path, next(iter(op["requestBody"]["content"])))
                  for path, item in load_document()["paths"].items() for method, op in item.items()
                  if isinstance(op, dict) and "requestBody" in op)


BODY_OPERATIONS = _operations_with_a_body()


def test_the_document_has_json_body_operations_to_check():
    assert sum(media == "application/json" for _, _, media in BODY_OPERATIONS) >= 25


@pytest.mark.parametrize(("method", "path", "media"), BODY_OPERATIONS, ids=[f"{m} {p}" for m, p, _ in BODY_OPERATIONS])
def test_a_body_without_content_type_is_415_naming_the_media_type(api, method, path, media):
    """Issue 33 item 3: valid JSON sent without ``Content-Type`` was handed to the handler as
    bytes (a 500, ``TypeError: byte indices must be integers``). Every operation that takes a
    body now answers 415 ``{detail}`` naming the media type it takes, and documents the 415."""
    from benchbook.http.document import load_document

    url = re.sub(r"\{[^}]+\}", "abcd", path.replace("{sha256}", "ab" * 32))  # a sha256 must look like one
    r = api.request(method, url, content=b"{}")  # httpx sends Content-Length, no Content-Type
    assert "content-type" not in {k.lower() for k in r.request.headers}
    assert r.status_code == 415, r.text
    assert set(r.json()) == {"detail"} and media in r.json()["detail"]
    assert "415" in load_document()["paths"][path][method.lower()]["responses"]


def test_valid_json_without_content_type_changes_nothing(api):
    for body in ({"name": "c1", "schemas": []}, {"model": "m"}):
        path, method = ("/collections", "POST") if "name" in body else ("/ai/config", "PATCH")
        r = api.request(method, path, content=json.dumps(body).encode())
        assert r.status_code == 415, r.text
    assert api.get("/collections/c1").status_code == 404
    assert api.ok("GET", "/ai/config")["model"] == ""


def test_a_chunked_body_without_content_type_is_415_and_an_empty_request_passes(api):
    r = api.post("/audit/batches", content=iter([b'{"label": "a"}']))  # chunked: no Content-Length
    assert r.status_code == 415, r.text
    assert api.post("/audit/batches").status_code == 201  # no body at all: nothing to type
