"""httpx's request functions with :data:`tests.waiting.HANG` as their timeout, for tests that call
a live server: httpx's own default (5 s) is a race with the machine's load, which a busy server
loses; a test's bound is for a hang only (docs/testing.md)."""
from __future__ import annotations

from functools import partial

import httpx

from tests.waiting import HANG

get = partial(httpx.get, timeout=HANG)
post = partial(httpx.post, timeout=HANG)
put = partial(httpx.put, timeout=HANG)
patch = partial(httpx.patch, timeout=HANG)
delete = partial(httpx.delete, timeout=HANG)
request = partial(httpx.request, timeout=HANG)
Client = partial(httpx.Client, timeout=HANG)
