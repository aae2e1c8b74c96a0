"""Host and Origin checks (spec *Authentication* 3), error envelopes and request ids."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("host", ["evil.example", "192.168.1.5:8000", "localhost.evil.com"])
def test_foreign_host_is_refused(api, host):
    r = api.get("/collections", headers={"host": host})
    assert r.status_code == 403 and "Host" in r.json()["detail"] and r.headers["x-request-id"]


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:9000"])
def test_local_hosts_pass(api, host):
    assert api.get("/collections", headers={"host": host}).status_code == 200


def test_cross_site_writes_are_refused(api):
    r = api.post("/collections", json={"name": "x"}, headers={"origin": "https://evil.example"})
    assert r.status_code == 403 and "cross-site" in r.json()["detail"]
    r = api.post("/collections", json={"name": "x"}, headers={"referer": "https://evil.example/page"})
    assert r.status_code == 403
    assert api.get("/collections", headers={"origin": "https://evil.example"}).status_code == 200
    ok = api.post("/collections", json={"name": "x"}, headers={"origin": "http://localhost:8000"})
    assert ok.status_code == 201


def test_every_response_has_a_request_id(api):
    for r in (api.get("/collections"), api.get("/collections/none"), api.post("/collections", json={})):
        assert len(r.headers["x-request-id"]) == 32


def test_documents_and_pages(api):
    c = api.client
    assert c.get("/openapi.json").json()["openapi"] == "3.0.3"
    assert c.get("/api/openapi.json").status_code == 200
    docs = c.get("/docs/")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()


def test_web_page_is_the_app_and_keeps_the_host_rule(api):
    c = api.client
    page = c.get("/", headers={"host": "127.0.0.1:8000"})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "<title>benchbook</title>" in page.text
    assert '<script type="module" src="/static/app.js"></script>' in page.text
    for path in ("/static/app.js", "/static/lib/api.js", "/static/pages/collections.js",
                 "/static/vendor/preact-10.29.8.module.js", "/sw.js"):
        script = c.get(path)
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript"), path
    for path in ("/static/../openapi.yaml", "/static/lib/../../routes.py", "/static/.hidden", "/static/lib//api.js",
                 "/static/lib", "/static/missing.js"):
        assert c.get(path).status_code == 404, path
    for path in ("/", "/static/app.js", "/docs/", "/openapi.json"):
        forged = c.get(path, headers={"host": "evil.example"})
        assert forged.status_code == 403, path
        assert forged.headers["content-type"] == "application/json", path
        body = forged.json()
        assert list(body) == ["detail"] and isinstance(body["detail"], str), body
        assert "'evil.example' is not this computer" in body["detail"], body
        assert "<html" not in forged.text and len(forged.headers["x-request-id"]) == 32


def test_unknown_route_and_method(api):
    assert api.get("/nothing-here").status_code == 404
    r = api.request("PUT", "/collections")
    assert r.status_code == 405


def test_the_abandon_watch_takes_no_body_message_from_the_app(api):
    """Each request's disconnect watch (benchbook/http/abandonment.py) reads ``receive()`` itself only
    once the app has read the whole body: a body sent in pieces arrives whole."""
    pieces = [b'{"la', b'bel": "in ', b'pieces"}']
    r = api.post("/audit/batches", content=iter(pieces), headers={"content-type": "application/json"})
    assert r.status_code == 201 and r.json()["label"] == "in pieces", r.text


@pytest.mark.parametrize("path", ["/docs", "/docs/", "/openapi.json", "/"])
def test_the_root_paths_are_guarded_like_the_api(api, path):
    """The guard is the outermost middleware: the paths outside /api (the document, its Swagger
    UI, the web app) are refused for a foreign Host with the same envelope and request id."""
    r = api.client.get(path, headers={"host": "evil.example"}, follow_redirects=False)
    assert r.status_code == 403 and "Host" in r.json()["detail"] and len(r.headers["x-request-id"]) == 32
    assert len(api.client.get(path, follow_redirects=False).headers["x-request-id"]) == 32


def test_the_app_middlewares_stand_in_their_documented_order(api):
    """app.edge_middlewares lists them outermost first, and the built stack keeps that order,
    the guard before anything that answers."""
    from benchbook.http.app import GuardMiddleware, RootPathsMiddleware, edge_middlewares

    listed = [m for m, _ in edge_middlewares(api.app.services, {"paths": {}}, allow_remote=False, sync_only=False,
                                             limits=api.project.limits)]
    assert listed[:2] == [GuardMiddleware, RootPathsMiddleware]
    stacked = [getattr(m, "func", m) for m in api.app.middleware.middlewares]
    ours = [m for m in stacked if m in listed]
    assert ours == listed
