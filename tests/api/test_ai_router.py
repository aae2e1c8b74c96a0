"""The model router: login with OAuth PKCE (S256) against a fake router on loopback, the key
saved like any other, its limits read back; and, after everything the AI part does, the key in
no answer, log line, history entry or error text."""
from __future__ import annotations

import base64
import hashlib
import logging
import stat
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from benchbook.domain.ai import router
from tests.api.ai_fakes import (
    KEY,
    FakeModel,
    FakeRouter,
    ai,
    closed_port,
    completion,
    fake_model,
    fake_router,
    model_server,
    router_server,
)

__all__ = ["ai", "fake_model", "fake_router", "model_server", "router_server"]  # fixtures


def start_login(ai: Any, fake: FakeRouter, code: str = "code-123") -> dict[str, Any]:
    """What the router's login page does: remember the challenge and hand out a code."""
    got = ai.ok("GET", "/ai/router/auth-url")
    query = parse_qs(urlsplit(got["url"]).query)
    fake.issue(code, query["code_challenge"][0])
    return {**got, "query": query}


def test_login_round_trip_with_pkce_saves_the_routers_key(ai, fake_router: FakeRouter):
    login = start_login(ai, fake_router)
    url, query = urlsplit(login["url"]), login["query"]
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{fake_router.url}/auth"
    assert query["callback_url"] == [login["callback_url"]] == ["http://127.0.0.1/api/ai/router/callback"]
    assert query["code_challenge_method"] == ["S256"] and login["code_challenge_method"] == "S256"
    challenge = query["code_challenge"][0]
    assert len(challenge) == 43 and "=" not in challenge and set(challenge) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    r = ai.get("/ai/router/callback", params={"code": "code-123"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html"), r.text
    assert "close this tab" in r.text and KEY not in r.text
    exchange = fake_router.seen[-1]
    assert exchange.method == "POST" and exchange.path == "/api/v1/auth/keys"
    assert exchange.body["code"] == "code-123" and exchange.body["code_challenge_method"] == "S256"
    verifier = exchange.body["code_verifier"]
    assert 43 <= len(verifier) <= 128
    assert base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode() == challenge

    got = ai.ok("GET", "/ai/config")
    assert (got["provider"], got["source"], got["key_hint"]) == ("router", "project", KEY[-4:])
    assert got["base_url"] == f"{fake_router.url}/api/v1"
    assert stat.S_IMODE((ai.project.root / ".secrets.toml").stat().st_mode) == 0o600

    assert ai.ok("GET", "/ai/router/limits") == {
        "label": "sk-or-v1-abc...KEYX", "limit": 10.0, "limit_remaining": 7.5, "usage": 2.5,
        "is_free_tier": False, "rate_limit": {"requests": 10, "interval": "10s"}}
    assert fake_router.seen[-1].headers["authorization"] == f"Bearer {KEY}"

    again = ai.get("/ai/router/callback", params={"code": "code-123"})  # a verifier is used once
    assert again.status_code == 409 and "auth-url" in again.json()["detail"]


def test_the_callback_address_follows_the_requests_host(ai, fake_router: FakeRouter):
    got = ai.ok("GET", "/ai/router/auth-url", headers={"host": "localhost:8123"})
    assert got["callback_url"] == "http://localhost:8123/api/ai/router/callback"


def test_a_callback_without_a_login_waiting_is_409(ai, fake_router: FakeRouter):
    r = ai.get("/ai/router/callback", params={"code": "whatever"})
    assert r.status_code == 409 and "GET /ai/router/auth-url" in r.json()["detail"]
    assert fake_router.seen == []


def test_a_login_expires(ai, fake_router: FakeRouter, monkeypatch: pytest.MonkeyPatch):
    start_login(ai, fake_router)
    monkeypatch.setattr(router, "LOGIN_TTL", -1)
    assert ai.get("/ai/router/callback", params={"code": "code-123"}).status_code == 409


def test_a_newer_login_replaces_the_waiting_one(ai, fake_router: FakeRouter):
    start_login(ai, fake_router, "old")
    start_login(ai, fake_router, "new")
    assert ai.get("/ai/router/callback", params={"code": "old"}).status_code == 502  # the old verifier is gone
    start_login(ai, fake_router, "newest")
    assert ai.get("/ai/router/callback", params={"code": "newest"}).status_code == 200


def test_a_refused_code_is_502_and_saves_nothing(ai, fake_router: FakeRouter):
    ai.ok("GET", "/ai/router/auth-url")
    r = ai.get("/ai/router/callback", params={"code": "never-issued"})
    assert r.status_code == 502 and "refused the login code (403)" in r.json()["detail"]
    assert ai.ok("GET", "/ai/config")["key_hint"] is None


def test_a_router_that_is_down_is_502_naming_the_address(ai, monkeypatch: pytest.MonkeyPatch):
    address = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("BENCHBOOK_ROUTER_URL", address)
    ai.ok("GET", "/ai/router/auth-url")
    r = ai.get("/ai/router/callback", params={"code": "c"})
    assert r.status_code == 502 and address in r.json()["detail"] and "cannot be reached" in r.json()["detail"]
    ai.ok("PATCH", "/ai/config", json={"api_key": KEY})
    r = ai.get("/ai/router/limits")
    assert r.status_code == 502 and address in r.json()["detail"]


def test_limits_need_a_key_the_router_accepts(ai, fake_router: FakeRouter):
    r = ai.get("/ai/router/limits")
    assert r.status_code == 409 and "auth-url" in r.json()["detail"]
    ai.ok("PATCH", "/ai/config", json={"api_key": "sk-some-other-key-0000"})
    r = ai.get("/ai/router/limits")
    assert r.status_code == 502 and "refused the API key (401)" in r.json()["detail"]
    assert "sk-some-other-key-0000" not in r.text


def test_chat_through_the_router_uses_its_key_and_address(ai, fake_router: FakeRouter, fake_model: FakeModel,
                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCHBOOK_ROUTER_URL", fake_model.url)  # the fake model serves /api/v1/chat/completions too
    ai.ok("PATCH", "/ai/config", json={"provider": "router", "model": "meta-llama/llama-3.1-8b", "api_key": KEY})
    fake_model.then(completion("Routed."))
    got = ai.ok("POST", "/ai/chat", json={"messages": [{"role": "user", "content": "hi"}]})
    assert got["messages"] == [{"role": "assistant", "content": "Routed."}]
    assert fake_model.chats()[-1].path == "/api/v1/chat/completions"
    assert ai.ok("GET", "/ai/usage")["by_model"][0]["provider"] == "router"


def test_the_key_is_in_no_answer_log_history_or_error(ai, fake_router: FakeRouter, fake_model: FakeModel,
                                                      caplog: pytest.LogCaptureFixture):
    """Everything the AI part does, with the key set; then look everywhere it could have leaked
    (the fakes echo it in their error bodies on purpose)."""
    caplog.set_level(logging.DEBUG)  # every logger, the HTTP clients' own included
    bodies: list[str] = []

    def call(method: str, path: str, **kw: Any) -> Any:
        r = ai.request(method, path, **kw)
        bodies.append(f"{method} {path} {r.status_code} {r.headers} {r.text}")
        return r

    login = start_login(ai, fake_router)
    bodies.append(str(login))
    call("GET", "/ai/router/callback", params={"code": "code-123"})
    call("GET", "/ai/router/limits")
    call("PATCH", "/ai/config", json={"provider": "openai", "model": "fake-model", "base_url": fake_model.base_url,
                                      "api_key": KEY})
    call("PATCH", "/ai/config", json={"api_key": KEY + " with a space"})
    call("GET", "/ai/config")
    fake_model.then(completion("Looking.", [("list_collections", {}), ("get_record", {"record_id": "01ZZZZ"}),
                                            ("no_such_tool", {})]),
                    completion("Done."),
                    (401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}),
                    (429, {"error": {"message": f"slow down, {KEY}"}}),
                    (500, {"error": {"message": f"crashed with {KEY}"}}))
    for _ in range(4):
        call("POST", "/ai/chat", json={"messages": [{"role": "user", "content": "hi"}]})
    call("GET", "/ai/local/models", params={"base_url": fake_model.base_url})
    ai.ok("PATCH", "/ai/config", json={"base_url": f"http://127.0.0.1:{closed_port()}/v1"})
    call("POST", "/ai/chat", json={"messages": [{"role": "user", "content": "hi"}]})
    call("GET", "/ai/usage")
    call("GET", "/audit", params={"limit": 500})
    call("GET", "/audit/events", params={"limit": 100})
    call("GET", "/openapi.json")

    assert [b.split(" ")[2] for b in bodies[1:]] == [
        "200", "200", "200", "422", "200", "200", "502", "502", "502", "200", "502", "200", "200", "200", "200"]
    leaks = [b for b in bodies if KEY in b]
    assert leaks == []
    assert KEY not in caplog.text
    for record in caplog.records:
        assert KEY not in record.getMessage() and KEY not in str(record.exc_info or "")
    assert "AI settings changed: api_key set" in caplog.text  # the changes are logged, not the values
