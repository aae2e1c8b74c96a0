"""AI settings (``GET|PATCH /ai/config``) and the local model server's models: where each
setting is kept, what null and ``""`` do, the key's file and hint, the environment's key."""
from __future__ import annotations

import logging
import stat
import tomllib

import pytest

from tests.api.ai_fakes import KEY, FakeModel, ai, closed_port, fake_model, model_server, router_server

__all__ = ["ai", "fake_model", "model_server", "router_server"]  # fixtures


def test_nothing_set_is_the_default_and_not_configured(ai):
    assert ai.ok("GET", "/ai/config") == {
        "configured": False, "source": "default", "provider": "openai", "model": "",
        "base_url": "https://api.openai.com/v1", "key_hint": None}


def test_settings_go_to_benchbook_toml_and_the_key_to_a_private_secrets_file(ai):
    root = ai.project.root
    before = (root / "benchbook.toml").read_text(encoding="utf-8")
    got = ai.ok("PATCH", "/ai/config", json={"provider": "openai", "model": "gpt-4o-mini", "api_key": KEY,
                                              "base_url": "https://llm.example.org/v1/"})
    assert got == {"configured": True, "source": "project", "provider": "openai", "model": "gpt-4o-mini",
                   "base_url": "https://llm.example.org/v1", "key_hint": KEY[-4:]}
    assert ai.ok("GET", "/ai/config") == got
    text = (root / "benchbook.toml").read_text(encoding="utf-8")
    assert KEY not in text and text.startswith(before.rstrip("\n"))  # comments and the rest kept as they were
    assert tomllib.loads(text)["ai"] == {"provider": "openai", "model": "gpt-4o-mini",
                                         "base_url": "https://llm.example.org/v1"}
    secrets = root / ".secrets.toml"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert tomllib.loads(secrets.read_text(encoding="utf-8")) == {"ai": {"api_key": KEY}}


def test_null_or_omitted_leaves_a_setting_and_empty_clears_it(ai):
    ai.ok("PATCH", "/ai/config", json={"provider": "local", "model": "llama3.2:3b", "api_key": KEY,
                                       "base_url": "http://127.0.0.1:9999/v1"})
    got = ai.ok("PATCH", "/ai/config", json={"provider": None, "model": None, "api_key": None, "base_url": None})
    assert (got["provider"], got["model"], got["key_hint"], got["base_url"]) == (
        "local", "llama3.2:3b", KEY[-4:], "http://127.0.0.1:9999/v1")
    assert ai.ok("PATCH", "/ai/config", json={})["model"] == "llama3.2:3b"
    got = ai.ok("PATCH", "/ai/config", json={"base_url": "", "api_key": ""})
    assert got["base_url"] == "http://localhost:11434/v1" and got["key_hint"] is None
    assert got["configured"] is True  # a local server needs no key
    assert "api_key" not in tomllib.loads((ai.project.root / ".secrets.toml").read_text())["ai"]
    got = ai.ok("PATCH", "/ai/config", json={"provider": "", "model": ""})
    assert got == {"configured": False, "source": "default", "provider": "openai", "model": "",
                   "base_url": "https://api.openai.com/v1", "key_hint": None}


def test_router_provider_chats_at_the_router_address(ai, router_server):
    got = ai.ok("PATCH", "/ai/config", json={"provider": "router", "model": "meta/llama"})
    assert got["base_url"] == f"{router_server.url}/api/v1" and got["configured"] is False


def test_the_environment_key_is_used_when_the_project_has_none(ai, monkeypatch):
    monkeypatch.setenv("BENCHBOOK_AI_KEY", "env-key-0123456789-ENVK")
    got = ai.ok("PATCH", "/ai/config", json={"model": "m"})
    assert (got["source"], got["key_hint"], got["configured"]) == ("environment", "ENVK", True)
    got = ai.ok("PATCH", "/ai/config", json={"api_key": KEY})
    assert (got["source"], got["key_hint"]) == ("project", KEY[-4:])
    assert ai.ok("PATCH", "/ai/config", json={"api_key": ""})["source"] == "environment"


def test_a_pasted_key_loses_its_surrounding_spaces(ai):
    assert ai.ok("PATCH", "/ai/config", json={"api_key": f" {KEY}\n"})["key_hint"] == KEY[-4:]
    assert tomllib.loads((ai.project.root / ".secrets.toml").read_text())["ai"]["api_key"] == KEY


def test_a_short_key_gets_no_hint(ai):
    got = ai.ok("PATCH", "/ai/config", json={"api_key": "short-key", "model": "m"})
    assert got["key_hint"] is None and got["configured"] is True


@pytest.mark.parametrize(("body", "where"), [
    ({"provider": "acme"}, "provider"),
    ({"base_url": "ftp://example.org"}, "base_url"),
    ({"base_url": "http://"}, "base_url"),
    ({"api_key": "two words"}, "api_key"),
    ({"api_key": "   "}, "api_key"),
    ({"api_key": "k" * 1001}, "api_key"),
    ({"model": "x" * 201}, "model"),
    ({"temperature": 1}, "temperature"),
])
def test_bad_settings_are_refused_naming_the_setting(ai, body, where):
    r = ai.patch("/ai/config", json=body)
    assert r.status_code == 422, r.text
    assert any(where in map(str, e["loc"]) or where in e["msg"] for e in r.json()["errors"]), r.json()
    if "api_key" in body:
        assert body["api_key"] not in r.text
    assert ai.ok("GET", "/ai/config")["source"] == "default"  # nothing was written


def test_local_models_lists_the_servers_models(ai, fake_model: FakeModel):
    got = ai.ok("GET", "/ai/local/models", params={"base_url": fake_model.base_url})
    assert got == {"base_url": fake_model.base_url, "models": [
        {"id": "llama3.2:3b", "owned_by": "library", "created": 1700000000},
        {"id": "qwen2.5:7b", "owned_by": "library", "created": 1700000000}]}
    assert fake_model.seen[-1].path == "/v1/models"


def test_local_models_sends_no_key(ai, fake_model: FakeModel):
    ai.ok("PATCH", "/ai/config", json={"api_key": KEY})
    ai.ok("GET", "/ai/local/models", params={"base_url": fake_model.base_url})
    assert KEY not in str(fake_model.seen[-1].headers)


def test_local_models_without_a_server_is_502_naming_the_address(ai):
    address = f"http://127.0.0.1:{closed_port()}/v1"
    r = ai.get("/ai/local/models", params={"base_url": address})
    assert r.status_code == 502 and address in r.json()["detail"], r.text
    assert "cannot be reached" in r.json()["detail"]


def test_local_models_default_address_is_the_usual_local_server(ai, monkeypatch):
    from benchbook.domain.ai import config

    assert config.DEFAULT_LOCAL == "http://localhost:11434/v1"
    r = ai.get("/ai/local/models", params={"base_url": "not a url"})
    assert r.status_code == 422


def test_local_models_with_an_empty_address_asks_the_default_one(ai, fake_model: FakeModel, monkeypatch):
    """The document's pattern admits an empty ``base_url`` (as the settings do: empty is the
    default), so the server takes it to mean the default address."""
    from benchbook.domain.ai import config

    monkeypatch.setattr(config, "DEFAULT_LOCAL", fake_model.base_url)
    assert ai.ok("GET", "/ai/local/models", params={"base_url": ""})["base_url"] == fake_model.base_url


# ----------------------------------------------------------- the key in errors and logs (issue 33 item 5)

@pytest.mark.parametrize("key", [KEY, [KEY], {"nested": [{"deeper": KEY}]}, [KEY, 'quote"d\\' + KEY]],
                         ids=["string", "list", "nested", "escaped"])
def test_a_validation_error_never_echoes_the_key(ai, key, caplog: pytest.LogCaptureFixture):
    """A 422 listed the body as ``input`` (and jsonschema quoted it in ``msg``), key included,
    also when the key came as a list. Secrets are the properties the document marks
    ``writeOnly``/``format: password``; what they hold is ``[redacted]`` at every depth."""
    caplog.set_level(logging.DEBUG)
    r = ai.patch("/ai/config", json={"api_key": key, "modle": "x"})
    assert r.status_code == 422, r.text
    assert KEY not in r.text and "sk-test" not in r.text, r.text
    errors = r.json()["errors"]
    extra = next(e for e in errors if e["type"] == "additionalProperties")
    assert extra["input"] == {"api_key": "[redacted]", "modle": "x"}  # the rest of the input is kept
    assert "modle" in extra["msg"]
    assert KEY not in caplog.text
    assert ai.ok("GET", "/ai/config")["source"] == "default"  # nothing was written


def test_a_key_under_a_non_secret_name_of_a_secret_body_is_redacted_too(ai):
    """The whole body is not an object: the error's ``input`` is the list, the key inside it."""
    r = ai.patch("/ai/config", json=[{"api_key": KEY}])
    assert r.status_code == 422 and KEY not in r.text, r.text
    assert r.json()["errors"][0]["input"] == [{"api_key": "[redacted]"}]


def test_the_secret_properties_come_from_the_document():
    from benchbook.http.document import load_document
    from benchbook.http.redaction import secret_names

    document = load_document()
    assert "api_key" in secret_names(document)
    assert secret_names({"properties": {"token": {"type": "string", "format": "password"},
                                        "name": {"type": "string"}},
                         "items": {"properties": {"pin": {"writeOnly": True}}}}) == {"token", "pin"}


def test_a_500_logs_no_key(ai, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    """A failure whose message quotes the request's key, or the project's stored key, is logged
    (traceback and all) with the key taken out; the answer is the plain 500 envelope."""
    from benchbook.domain.ai import config

    ai.ok("PATCH", "/ai/config", json={"api_key": KEY})
    stored = KEY
    sent = "sk-another-0123456789abcdef-SENT"

    def broken(root, changes, env=None):
        raise RuntimeError(f"bug while saving {changes!r} over {stored}")

    monkeypatch.setattr(config, "update", broken)
    caplog.set_level(logging.DEBUG)
    r = ai.patch("/ai/config", json={"api_key": sent, "model": "m"})
    assert r.status_code == 500 and set(r.json()) == {"detail", "request_id"}, r.text
    assert "bug while saving" in caplog.text and "RuntimeError" in caplog.text  # still useful
    assert sent not in caplog.text and stored not in caplog.text, caplog.text
    assert sent not in r.text and stored not in r.text
