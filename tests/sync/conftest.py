"""An authority and devices as real projects served on loopback (uvicorn in threads of the test
process, ``tests/live_server.served_in_thread``), called over HTTP as a person's tools call them."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from benchbook.settings.config import Project
from tests import patient_http
from tests.conftest import migrated_copy
from tests.live_server import served_in_thread


@dataclass
class Side:
    """One served project: its folder, base URL and an HTTP client of its ``/api``."""

    root: Path
    url: str
    http: httpx.Client

    def ok(self, method: str, path: str, status: int = 200, **kwargs: Any) -> Any:
        """Call ``/api{path}`` and check the status; the JSON body (None for a 204)."""
        r = self.http.request(method, path, **kwargs)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return r.json() if r.content else None

    def sync(self) -> dict[str, Any]:
        """``POST /remote/sync``: the summary."""
        return self.ok("POST", "/remote/sync")  # type: ignore[no-any-return]


class Lab:
    """Projects served on demand: :meth:`project` makes and serves a new one."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path, stack: ExitStack) -> None:
        self._request, self._tmp, self._stack = request, tmp_path, stack

    def project(self, name: str) -> Side:
        """A new SQLite project ``name``, served; its client."""
        project = Project.init(self._tmp / name)
        config = project.root / "benchbook.toml"  # the actor of this side's changes: its name
        config.write_text(config.read_text().replace('[user]\n', f'[user]\nname = "{name}"\n', 1))
        migrated_copy(self._request, Path(str(make_url(project.database_url).database)))
        url = self._stack.enter_context(served_in_thread(project.root))
        http = self._stack.enter_context(patient_http.Client(base_url=url + "/api"))
        return Side(root=project.root, url=url, http=http)

    def follow(self, authority: Side, name: str) -> Side:
        """A new, empty project joined to ``authority`` as device ``name`` (a copy of it)."""
        invite = authority.ok("POST", "/sync/devices", 201, json={"name": name})["invite"]
        device = self.project(name)
        device.ok("POST", "/remote/connect", json={"url": authority.url, "invite": invite})
        return device


@pytest.fixture
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    with ExitStack() as stack:
        yield Lab(request, tmp_path, stack)
