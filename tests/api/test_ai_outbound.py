"""Operations that make the server send a request elsewhere (issue 33 item 10): a page on
another site must not make the server fetch anything. They are marked in the OpenAPI document
(``x-benchbook-outbound: true``) and refused cross-site like writes (403), and ``GET
/ai/local/models`` asks only this computer or the hosts of ``[ai] allowed_hosts``. Raw requests
against fakes served for real on loopback, which record every request they get."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import tomlkit

from benchbook.http.document import load_document
from benchbook.http.guard import GuardMiddleware, outbound_operations
from tests.api.ai_fakes import (
    KEY,
    FakeModel,
    FakeRouter,
    FakeServer,
    ai,
    fake_model,
    fake_router,
    model_server,
    router_server,
)
from tests.api.test_ai_router import start_login

__all__ = ["ai", "fake_model", "fake_router", "model_server", "router_server"]  # fixtures

CROSS_SITE = [
    {"origin": "https://evil.example"},
    {"referer": "https://evil.example/page.html"},
    {"origin": "null"},
    {"sec-fetch-site": "cross-site"},  # <img referrerpolicy="no-referrer">: neither Origin nor Referer
    {"origin": "http://127.0.0.1.evil.example:8000"},
]
SAME_SITE = [
    {},  # a tool: curl, the command line
    {"origin": "http://127.0.0.1"},
    {"referer": "http://localhost:8000/ai"},
    {"sec-fetch-site": "same-origin"},
    {"sec-fetch-site": "none"},  # typed into the address bar
]


def _ids(headers: list[dict[str, str]]) -> list[str]:
    return [",".join(f"{k}={v}" for k, v in h.items()) or "no-headers" for h in headers]


def test_the_outbound_operations_are_the_ones_the_document_marks():
    marked = outbound_operations(load_document())
    found = {(method, o.path.pattern) for o in marked for method in o.methods}
    for method, path in [("GET", "/api/ai/local/models"), ("HEAD", "/api/ai/local/models"),
                         ("GET", "/api/ai/router/limits"), ("GET", "/api/ai/router/callback"),
                         ("POST", "/api/ai/chat")]:
        assert any(m == method and re.match(p, path) for m, p in found), (method, path)
    assert [o.return_from for o in marked if o.path.match("/api/ai/router/callback")] == ["model-router"]


def test_the_guard_reads_the_mark_not_a_list():
    """Any operation the document marks is guarded, whatever its path."""
    document = {"paths": {"/anything/{id}/new": {"get": {"x-benchbook-outbound": True}},
                          "/plain": {"get": {}}}}
    guard = GuardMiddleware(app=None, outbound=outbound_operations(document))  # type: ignore[arg-type]

    def scope(path: str, **headers: str) -> dict[str, Any]:
        return {"type": "http", "method": "GET", "path": path,
                "headers": [(b"host", b"127.0.0.1"), *((k.encode(), v.encode()) for k, v in headers.items())]}

    assert "cross-site" in guard.refusal(scope("/api/anything/7/new", origin="https://evil.example"))
    assert guard.refusal(scope("/api/plain", origin="https://evil.example")) is None
    assert guard.refusal(scope("/api/anything/7/new", origin="http://localhost:8000")) is None


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("headers", CROSS_SITE, ids=_ids(CROSS_SITE))
def test_a_cross_site_request_cannot_make_the_server_ask_a_model_server(ai, fake_model: FakeModel, method, headers):
    r = ai.request(method, "/ai/local/models", params={"base_url": fake_model.base_url}, headers=headers)
    assert r.status_code == 403, r.text
    if method == "GET":
        assert set(r.json()) == {"detail"} and "cross-site" in r.json()["detail"]
    assert fake_model.seen == []  # nothing was sent


@pytest.mark.parametrize("headers", SAME_SITE, ids=_ids(SAME_SITE))
def test_this_computers_pages_and_tools_still_list_the_models(ai, fake_model: FakeModel, headers):
    got = ai.ok("GET", "/ai/local/models", params={"base_url": fake_model.base_url}, headers=headers)
    assert [m["id"] for m in got["models"]] == fake_model.models
    assert [s.path for s in fake_model.seen] == ["/v1/models"]


@pytest.mark.parametrize("headers", CROSS_SITE, ids=_ids(CROSS_SITE))
def test_a_cross_site_request_cannot_make_the_server_ask_the_model_router(ai, fake_router: FakeRouter, headers):
    ai.ok("PATCH", "/ai/config", json={"api_key": KEY, "provider": "router"})
    r = ai.get("/ai/router/limits", headers=headers)
    assert r.status_code == 403 and "cross-site" in r.json()["detail"], r.text
    start_login(ai, fake_router)
    if "origin" in headers or "referer" in headers:  # the callback: below for a hidden origin
        r = ai.get("/ai/router/callback", params={"code": "code-123"}, headers=headers)
        assert r.status_code == 403 and "cross-site" in r.json()["detail"], r.text
    assert fake_router.seen == []
    # the waiting login was not used up: the router's own page can still complete it
    done = ai.get("/ai/router/callback", params={"code": "code-123"},
                  headers={"referer": f"{fake_router.url}/auth?x=1", "sec-fetch-site": "cross-site"})
    assert done.status_code == 200 and "close this tab" in done.text, done.text


def test_the_routers_login_page_may_send_the_browser_back_without_a_referer(ai, fake_router: FakeRouter):
    """The callback is where the router's login sends the browser: its own site, or no Origin or
    Referer at all (a router that sends none), is not refused; another site is."""
    start_login(ai, fake_router)
    r = ai.get("/ai/router/callback", params={"code": "code-123"}, headers={"sec-fetch-site": "cross-site"})
    assert r.status_code == 200, r.text


@pytest.fixture
def allowed_hosts(ai: Any) -> Iterator[Any]:
    """Writes ``[ai] allowed_hosts`` to the project's benchbook.toml (the ``ai`` fixture removes
    the ``[ai]`` table afterwards)."""
    path = ai.project.root / "benchbook.toml"

    def write(value: Any) -> None:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
        doc.setdefault("ai", tomlkit.table())["allowed_hosts"] = value
        path.write_text(tomlkit.dumps(doc), encoding="utf-8")

    yield write


@pytest.mark.parametrize("host", ["0.0.0.0", "example.invalid", "10.1.2.3", "[::]", "127.1", "localhost.example.com"])
def test_a_model_server_elsewhere_is_refused_before_anything_is_sent(ai, fake_model: FakeModel, host):
    """``0.0.0.0`` reaches this computer's servers on Linux without being a loopback address:
    the fake, listening on 127.0.0.1, would answer it, yet sees nothing."""
    port = fake_model.url.rsplit(":", 1)[1]
    r = ai.get("/ai/local/models", params={"base_url": f"http://{host}:{port}/v1"})
    assert r.status_code == 403, r.text
    assert "allowed_hosts" in r.json()["detail"] and set(r.json()) == {"detail"}
    assert fake_model.seen == []


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_this_computers_addresses_are_asked(ai, fake_model: FakeModel, host):
    port = fake_model.url.rsplit(":", 1)[1]
    r = ai.get("/ai/local/models", params={"base_url": f"http://{host}:{port}/v1"})
    assert r.status_code == 200, r.text
    assert [s.path for s in fake_model.seen] == ["/v1/models"]


def test_a_host_the_project_allows_is_asked(ai, fake_model: FakeModel, allowed_hosts):
    allowed_hosts(["gpu-box.lan", "0.0.0.0"])
    port = fake_model.url.rsplit(":", 1)[1]
    got = ai.ok("GET", "/ai/local/models", params={"base_url": f"http://0.0.0.0:{port}/v1"})
    assert [m["id"] for m in got["models"]] == fake_model.models
    assert [s.path for s in fake_model.seen] == ["/v1/models"]


def test_a_malformed_allowed_hosts_allows_no_other_host(ai, fake_model: FakeModel, allowed_hosts, caplog):
    allowed_hosts("0.0.0.0")  # a string, not a list
    port = fake_model.url.rsplit(":", 1)[1]
    r = ai.get("/ai/local/models", params={"base_url": f"http://0.0.0.0:{port}/v1"})
    assert r.status_code == 403, r.text
    assert fake_model.seen == [] and "allowed_hosts is not a list" in caplog.text


def test_a_redirect_from_the_model_server_is_not_followed(ai, fake_model: FakeModel):
    """A local server answering with a redirect elsewhere does not take the server there."""
    port = fake_model.url.rsplit(":", 1)[1]
    elsewhere = f"http://0.0.0.0:{port}/v1/models"
    redirecting = FakeServer(routes={("GET", "/models"): lambda seen: (302, {}, {"location": elsewhere})})
    with redirecting.running():
        r = ai.get("/ai/local/models", params={"base_url": redirecting.url + "/v1"})
    assert r.status_code == 502 and "302" in r.json()["detail"], r.text
    assert [s.path for s in redirecting.seen] == ["/v1/models"]
    assert fake_model.seen == []
