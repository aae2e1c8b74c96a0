"""What the server says it serves is what it serves: the ``Allow`` header of a 405, and the
routes of a ``--sync-only`` server (spec *Authentication* 4, start options)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from benchbook.http.app import create_app
from benchbook.settings.config import Project

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")

# URL → the exact Allow value: the methods of the documented path the URL matches (a literal
# path before a templated one, as in OpenAPI), HEAD wherever there is a GET, each once.
ALLOW = [
    ("/collections", "GET, HEAD, POST"),
    ("/collections/deleted", "GET, HEAD"),
    ("/collections/no-such", "DELETE, GET, HEAD, PATCH"),
    ("/collections/no-such/restore", "POST"),
    ("/collections/no-such/records", "DELETE, GET, HEAD, POST"),
    ("/schemas/no-such/fields", "POST"),
    ("/schemas/no-such/fields/reorder", "PUT"),
    ("/plugins/refresh", "POST"),
    ("/health", "GET, HEAD"),
    ("/sync/files/missing", "POST"),  # also a {sha256} by its shape, which it can never be
]
# Literal paths that a templated one also matches: the router sends it the methods the literal
# path lacks (DELETE /collections/deleted is the collection named "deleted")
OVERLAPS = {"/collections/deleted", "/schemas/no-such/fields/reorder", "/plugins/refresh"}


@pytest.mark.parametrize(("path", "allow"), ALLOW)
def test_a_405_allow_lists_each_real_method_once(api, path, allow):
    refused = next(m for m in ("PUT", "POST", "GET", "PATCH") if m not in allow.split(", "))
    r = api.request(refused, path)
    assert r.status_code == 405 and r.json() == {"detail": "Method Not Allowed"}
    assert r.headers.get_list("allow") == [allow]


@pytest.mark.parametrize(("path", "allow"), ALLOW)
def test_the_methods_allow_lists_are_answered(api, path, allow):
    listed = allow.split(", ")
    for method in METHODS:
        status = api.request(method, path).status_code
        if method in listed:
            assert status != 405, f"{method} {path}: 405 though Allow: {allow}"
        elif path not in OVERLAPS:
            assert status == 405, f"{method} {path}: {status} though not in Allow: {allow}"


def test_head_is_answered_where_get_is(api):
    api.ok("POST", "/collections", 201, json={"name": "box"})
    assert api.request("HEAD", "/collections/box").status_code == 200
    assert api.request("HEAD", "/collections").status_code == 200
    r = api.request("HEAD", "/collections/box/restore")
    assert r.status_code == 405 and r.headers["allow"] == "POST"


@pytest.fixture(scope="module")
def sync_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = create_app(Project.init(tmp_path_factory.mktemp("sync-only")), sync_only=True)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield client
    app.services.db.engine.dispose()


def test_sync_only_serves_health(sync_client):
    r = sync_client.get("/api/health")
    assert r.status_code == 200 and r.json()["sync_only"] is True
    assert sync_client.head("/api/health").status_code == 200
    r = sync_client.delete("/api/health")
    assert r.status_code == 405 and r.headers.get_list("allow") == ["GET, HEAD"]


@pytest.mark.parametrize("path", [
    "/", "/static/app.js", "/docs", "/docs/", "/docs/index.html", "/openapi.json", "/api/openapi.json",
    "/api/ui", "/api/ui/", "/api/swagger.json", "/api/collections", "/api/records/0123abcd",
    "/api/audit/events", "/api/schemas", "/api/sync/devices", "/api/remote", "/api/remote/conflicts",
])
def test_sync_only_answers_404_for_everything_else(sync_client, path):
    for method in ("GET", "HEAD"):
        r = sync_client.request(method, path, follow_redirects=False)
        assert r.status_code == 404, f"{method} {path}: {r.status_code}"
        assert r.headers["content-type"] == "application/json" and len(r.headers["x-request-id"]) == 32
    assert sync_client.get(path, follow_redirects=False).json() == {"detail": "Not Found"}


def test_sync_only_refuses_writes_with_404(sync_client):
    r = sync_client.post("/api/collections", json={"name": "x"})
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}


def test_sync_only_keeps_the_host_guard(sync_client):
    r = sync_client.get("/api/health", headers={"host": "evil.example"})
    assert r.status_code == 403 and "Host" in r.json()["detail"]


def test_sync_only_serves_what_devices_call_and_asks_them_for_a_token(sync_client):
    for method, path in (("GET", "/api/sync/hello"), ("GET", "/api/sync/feed"), ("POST", "/api/sync/push"),
                         ("GET", "/api/sync/snapshot/catalog")):
        r = sync_client.request(method, path, json={"entries": []} if method == "POST" else None)
        assert r.status_code == 401 and "device token" in r.json()["detail"], (method, path, r.text)
    r = sync_client.post("/api/sync/join", json={"invite": "bbi_not-a-real-one"})
    assert r.status_code == 401 and "invite" in r.json()["detail"]
    for method, path in (("POST", "/api/sync/devices"), ("POST", "/api/sync/devices/laptop/revoke"),
                         ("POST", "/api/remote/sync"), ("POST", "/api/remote/connect")):
        assert sync_client.request(method, path, json={}).status_code == 404, (method, path)
