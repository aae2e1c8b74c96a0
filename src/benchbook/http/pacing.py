"""Pages of records do not crowd out the quick reads (issue 13: a single-record read stays
quick while others list and filter).

A server process runs its request handlers in threads that share one interpreter. Eight clients
paging through filtered records keep eight threads busy, and a request for one record (a few
milliseconds of work) then waits its turn among them. Datasette bounds the same thing with its
``num_sql_threads``. Here, at most ``[limits] page_requests`` requests that compute a page or a
summary over many records (:data:`PAGE_READS`) are being worked on at once; the others wait for
a place, in arrival order, before their handler starts. Every other request goes straight on.
A request holds its place until its response starts (the page is computed by then), so a slow
client reading a long answer holds no place. Figures: docs/performance.md *Pages paced*.
"""
from __future__ import annotations

import asyncio
import re
import weakref

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_READS = re.compile(
    r"/api/(?:collections/[^/]+/(?:records|record-counts)|records|analytics/.+)/?")
"""GET paths that read a page or a summary over many records: record lists (a collection's and
all collections'), the record counts of a collection, and the analytics."""


class PagingMiddleware:
    """Lets at most ``places`` requests of :data:`PAGE_READS` be handled at once (module
    docstring); ``places`` 0 or less lets every request through."""

    def __init__(self, app: ASGIApp, places: int) -> None:
        self.app = app
        self.places = places
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary())

    def gate(self) -> asyncio.Semaphore:
        """The semaphore of the running event loop (a server has one; a test client may start
        several over one app, and a semaphore waits only in the loop it was first waited in)."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self.places)
        return gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self.places <= 0 or scope["type"] != "http" or scope.get("method") != "GET"
                or not PAGE_READS.fullmatch(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        gate = self.gate()
        await gate.acquire()
        held = True

        async def sending(message: Message) -> None:
            nonlocal held
            if held and message["type"] == "http.response.start":
                held = False
                gate.release()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if held:
                gate.release()
