"""Browser fixtures for the web app's tests: Playwright for Python driving Debian's headless
``chromium`` (``executable_path``; no browser download), against the app as ``benchbook serve``
builds it, served by uvicorn on a real port (in a thread of the test process:
``tests/live_server.served_in_thread``; ``test_offline.py`` stops a real ``benchbook serve``).

- ``browser`` (one per test process) and ``page`` (a fresh context per test, 1400×900; the test
  fails if the page throws an uncaught error or logs a console error other than a failed request
  the test caused on purpose).
- ``demo_server`` (one per test module): a served demo project (3 islands, 344 penguins, their
  ``penguin-tag`` runs drained), its base URL.
- ``empty_server`` (one per test module): a served empty project.

Helpers for the tests are in :mod:`tests.web.pages` (``open_app``, ``shoot``, ``check_axe``).
Skipped, saying why, when ``chromium`` or the ``playwright`` package is missing.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchbook.demo import build_demo
from benchbook.persistence.db import open_database
from benchbook.runner import worker
from benchbook.settings.config import Project
from tests.live_server import served_in_thread
from tests.waiting import HANG

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PENGUINS = 344
ISLANDS = 3

if not os.access(CHROMIUM, os.X_OK):
    pytest.skip("chromium is not installed (Debian package 'chromium'; .ci/run installs it when apt-get "
                "works): the web app tests need a real headless browser", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the web app tests drive Chromium with Playwright "
                               "(pip install -e '.[test]')")
sync_api.expect.set_options(timeout=HANG * 1000)  # expect(...) polls until true; a false one fails after HANG


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the test process."""
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page (own cookies, storage and service workers) 1400×900 wide; fails the test on an
    uncaught script error. ``page.console_errors`` lists console errors for tests to inspect."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, service_workers="block")
    context.set_default_timeout(HANG * 1000)  # Playwright's actions and waits: only a hang reaches it
    opened = context.new_page()
    errors: list[str] = []
    console: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("console", lambda msg: console.append(msg.text) if msg.type == "error" else None)
    opened.console_errors = console
    try:
        yield opened
    finally:
        context.close()
    assert not errors, f"the page threw: {errors}"


def exact_totals(project: Path) -> None:
    """Give the project's record pages all the time they need to count their matches
    (``[limits] count_ms``, 25 ms by default): past it a page's total is a lower bound, so a page
    read on a busy machine would show another total than the API's exact count the tests compare
    it with. The "more than" display has its own test, which alters an answer in flight."""
    with (project / "benchbook.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[limits]\ncount_ms = {int(HANG * 1000)}\n")


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo project built once per test process (runs drained): each module serves a copy."""
    root = tmp_path_factory.mktemp("web-demo-template")
    exact_totals(Project.init(root / "project").root)
    project = Project.open(root / "project")
    assert build_demo(project) == ISLANDS + PENGUINS
    db = open_database(project.database_url)
    try:
        assert worker.for_database(db, project).drain().completed == PENGUINS
    finally:
        db.engine.dispose()
    return root / "project"


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory, demo_template: Path) -> Iterator[str]:
    """``benchbook serve`` over a fresh copy of the demo project; yields its base URL."""
    root = tmp_path_factory.mktemp("web-demo")
    shutil.copytree(demo_template, root / "project")
    with served_in_thread(root / "project") as base:
        yield base


@pytest.fixture(scope="module")
def empty_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``benchbook serve`` over a fresh empty project; yields its base URL."""
    root = tmp_path_factory.mktemp("web-empty")
    exact_totals(Project.init(root / "project").root)
    with served_in_thread(root / "project") as base:
        yield base
