"""Fakes for the AI tests, served for real over HTTP on loopback (a threaded ``http.server``):
an OpenAI-compatible model server answering from a script, and the hosted model router
(login code exchange, key limits). Both record every request they get."""
from __future__ import annotations

import base64
import hashlib
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from benchbook.domain.ai import router

KEY = "sk-test-9f8e7d6c5b4a39281706f5e4d3c2b1a0-KEYX"
"""The key the tests configure: it must never come back in an answer, a log or an error."""


@dataclass
class Seen:
    """One request a fake got."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Reply = tuple[int, Any] | tuple[int, Any, dict[str, str]]
"""A route's answer: status and JSON body, and headers of its own if any."""
Route = Callable[[Seen], Reply]


@dataclass
class FakeServer:
    """A loopback HTTP server answering JSON by route; ``url`` is its address."""

    routes: dict[tuple[str, str], Route] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    url: str = ""

    def answer(self, method: str, path: str) -> Route | None:
        route = self.routes.get((method, path))
        if route is None:  # a suffix match: the same fake serves /v1/... and /api/v1/...
            route = next((r for (m, p), r in self.routes.items() if m == method and path.endswith(p)), None)
        return route

    @contextmanager
    def running(self) -> Iterator[FakeServer]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                seen = Seen(self.command, self.path.split("?")[0], {k.lower(): v for k, v in self.headers.items()},
                            body)
                fake.seen.append(seen)
                route = fake.answer(self.command, seen.path)
                status, answer, *more = route(seen) if route else (404, {"error": {"message": f"no route {seen.path}"}})
                data = json.dumps(answer).encode() if not isinstance(answer, bytes) else answer
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (more[0] if more else {}).items():  # a route's own headers (a redirect's)
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)


def completion(content: str | None = None, calls: list[tuple[str, Any]] | None = None,
               usage: tuple[int, int] | None = (10, 5), call_ids: list[str] | None = None) -> dict[str, Any]:
    """A chat completion answer: text and/or tool calls ``(name, arguments)`` (arguments as
    an object, or as raw text when a string)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": (call_ids or [])[i] if call_ids else f"call_{i}_{name}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]
    answer: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}]}
    if usage is not None:
        answer["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                           "total_tokens": usage[0] + usage[1]}
    return answer


class FakeModel(FakeServer):
    """An OpenAI-compatible model server: ``script`` holds the answers to the next chat
    requests (``(status, body)``), ``models`` what ``/models`` lists."""

    def __init__(self) -> None:
        super().__init__()
        self.script: deque[Reply] = deque()
        self.models = ["llama3.2:3b", "qwen2.5:7b"]
        self.routes[("POST", "/chat/completions")] = self._chat
        self.routes[("GET", "/models")] = lambda seen: (200, {"object": "list", "data": [
            {"id": m, "object": "model", "created": 1700000000, "owned_by": "library"} for m in self.models]})

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def then(self, *answers: dict[str, Any] | Reply) -> FakeModel:
        for a in answers:
            self.script.append(a if isinstance(a, tuple) else (200, a))
        return self

    def _chat(self, seen: Seen) -> Reply:
        if not self.script:
            return 500, {"error": {"message": "the fake has no answer scripted"}}
        return self.script.popleft()

    def chats(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/chat/completions")]

    def reset(self) -> None:
        self.script.clear()
        self.seen.clear()


class FakeRouter(FakeServer):
    """The hosted model router: ``issue(code, challenge)`` as its login page would, then the
    exchange checks the verifier against the challenge (S256) and answers ``key``."""

    def __init__(self, key: str = KEY) -> None:
        super().__init__()
        self.key = key
        self.codes: dict[str, str] = {}
        self.routes[("POST", "/api/v1/auth/keys")] = self._exchange
        self.routes[("GET", "/api/v1/key")] = self._limits

    def issue(self, code: str, challenge: str) -> None:
        self.codes[code] = challenge

    def _exchange(self, seen: Seen) -> Reply:
        body = seen.body or {}
        challenge = self.codes.pop(body.get("code"), None)
        if challenge is None or body.get("code_challenge_method") != "S256":
            return 403, {"error": {"message": "invalid code"}}
        digest = hashlib.sha256(body.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != challenge:
            return 403, {"error": {"message": "code verifier does not match"}}
        return 200, {"key": self.key, "user_id": "user_1"}

    def _limits(self, seen: Seen) -> Reply:
        if seen.headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"error": {"message": f"invalid key {seen.headers.get('authorization')}"}}
        return 200, {"data": {"label": "sk-or-v1-abc...KEYX", "limit": 10.0, "limit_remaining": 7.5,
                              "usage": 2.5, "is_free_tier": False,
                              "rate_limit": {"requests": 10, "interval": "10s"}}}


def closed_port() -> int:
    """A loopback port nothing listens on (bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ fixtures
# A test module imports the ones it uses and lists them in its ``__all__`` (as
# tests/api/automation_helpers.py's are), so that pytest finds them.


@pytest.fixture(scope="session")
def model_server() -> Iterator[FakeModel]:
    with FakeModel().running() as fake:
        assert isinstance(fake, FakeModel)
        yield fake


@pytest.fixture(scope="session")
def router_server() -> Iterator[FakeRouter]:
    with FakeRouter().running() as fake:
        assert isinstance(fake, FakeRouter)
        yield fake


@pytest.fixture
def fake_model(model_server: FakeModel) -> FakeModel:
    model_server.reset()
    return model_server


@pytest.fixture
def fake_router(router_server: FakeRouter) -> FakeRouter:
    router_server.seen.clear()
    router_server.codes.clear()
    return router_server


@pytest.fixture
def ai(api: Any, router_server: FakeRouter, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The ``api`` with no AI settings, no key in the environment, no login waiting, and the
    model router at the fake's address; what a test sets is removed afterwards."""
    root: Path = api.project.root

    def clean() -> None:
        (root / ".secrets.toml").unlink(missing_ok=True)
        cfg = root / "benchbook.toml"
        doc = tomlkit.parse(cfg.read_text(encoding="utf-8"))
        doc.pop("ai", None)
        cfg.write_text(tomlkit.dumps(doc), encoding="utf-8")
        router._PENDING.clear()

    monkeypatch.delenv("BENCHBOOK_AI_KEY", raising=False)
    monkeypatch.setenv("BENCHBOOK_ROUTER_URL", router_server.url)
    clean()
    yield api
    clean()
