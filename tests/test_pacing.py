"""benchbook.http.pacing.PagingMiddleware: at most ``page_requests`` record pages are worked on at once,
the rest wait in arrival order; other requests never wait; a place is given back when the answer
starts or the handler fails. Driven with a stand-in ASGI app whose handlers wait to be let go."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from benchbook.http.pacing import PAGE_READS, PagingMiddleware
from benchbook.settings.limits import Limits
from tests import own_loop


class Handlers:
    """An ASGI app whose requests each wait for :meth:`finish` before answering."""

    def __init__(self) -> None:
        self.running: list[str] = []
        self.most = 0
        self.started: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope["path"]
        self.running.append(path)
        self.started.append(path)
        self.most = max(self.most, sum(1 for p in self.running if PAGE_READS.fullmatch(p)))
        gate = self.gates.setdefault(path, asyncio.Event())
        try:
            await gate.wait()
            if path.endswith("/fails"):
                raise RuntimeError("handler failed")
            await send({"type": "http.response.start", "status": 200, "headers": []})
            self.running.remove(path)
            await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": b"{}"})
        finally:
            if path in self.running:
                self.running.remove(path)

    def finish(self, path: str) -> None:
        self.gates.setdefault(path, asyncio.Event()).set()


def scope(path: str, method: str = "GET") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path}


async def nothing() -> dict[str, Any]:
    return {"type": "http.request"}


async def sent(message: dict[str, Any]) -> None:
    return None


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_pages_wait_for_a_place_in_arrival_order_and_quick_reads_never_wait() -> None:
    async def scenario() -> None:
        inner = Handlers()
        app = PagingMiddleware(inner, places=2)
        pages = [f"/api/collections/c{i}/records" for i in range(5)]
        tasks = [asyncio.create_task(app(scope(p), nothing, sent)) for p in pages]
        await settle()
        assert inner.started == pages[:2]
        quick = asyncio.create_task(app(scope("/api/records/01ABC"), nothing, sent))
        await settle()
        assert inner.started[-1] == "/api/records/01ABC"
        inner.finish("/api/records/01ABC")
        await quick
        for page in pages:
            inner.finish(page)
            await settle()
        await asyncio.gather(*tasks)
        assert [p for p in inner.started if p in pages] == pages
        assert inner.most == 2
    own_loop.run(scenario)


def test_a_place_is_given_back_when_the_answer_starts_or_the_handler_fails() -> None:
    async def scenario() -> None:
        inner = Handlers()
        app = PagingMiddleware(inner, places=1)
        failing = asyncio.create_task(app(scope("/api/analytics/records/fails"), nothing, sent))
        waiting = asyncio.create_task(app(scope("/api/records"), nothing, sent))
        await settle()
        assert inner.started == ["/api/analytics/records/fails"]
        inner.finish("/api/analytics/records/fails")
        with pytest.raises(RuntimeError):
            await failing
        await settle()
        assert inner.started[-1] == "/api/records"
        inner.finish("/api/records")
        await waiting
        third = asyncio.create_task(app(scope("/api/collections/c/record-counts"), nothing, sent))
        await settle()
        assert inner.started[-1] == "/api/collections/c/record-counts"
        inner.finish("/api/collections/c/record-counts")
        await third
    own_loop.run(scenario)


@pytest.mark.parametrize(("method", "path", "paced"), [
    ("GET", "/api/collections/lab/records", True), ("GET", "/api/collections/lab/records/", True),
    ("GET", "/api/records", True), ("GET", "/api/collections/lab/record-counts", True),
    ("GET", "/api/analytics/records/growth", True), ("POST", "/api/collections/lab/records", False),
    ("GET", "/api/records/01ABCDEF", False), ("GET", "/api/records/01ABCDEF/audit", False),
    ("GET", "/api/files/ab", False), ("GET", "/api/collections/lab/export.csv", False), ("GET", "/", False),
])
def test_which_requests_are_paced(method: str, path: str, paced: bool) -> None:
    async def scenario() -> bool:
        inner = Handlers()
        app = PagingMiddleware(inner, places=1)
        held = asyncio.create_task(app(scope("/api/collections/held/records"), nothing, sent))
        await settle()
        probe = asyncio.create_task(app(scope(path, method), nothing, sent))
        await settle()
        waited = path not in inner.started
        for p in ("/api/collections/held/records", path):
            inner.finish(p)
        await asyncio.gather(held, probe)
        return waited
    assert own_loop.run(scenario) is paced


def test_the_default_is_two_places() -> None:
    assert Limits().page_requests == 2


def test_one_app_serves_several_event_loops() -> None:
    inner = Handlers()
    app = PagingMiddleware(inner, places=1)

    async def contended() -> None:
        inner.gates.clear()
        first = asyncio.create_task(app(scope("/api/records"), nothing, sent))
        second = asyncio.create_task(app(scope("/api/collections/c/records"), nothing, sent))
        await settle()
        inner.finish("/api/records")
        await first
        inner.finish("/api/collections/c/records")
        await second
    own_loop.run(contended)
    own_loop.run(contended)  # a second loop, as a second test client over the same app
    assert inner.most == 1
