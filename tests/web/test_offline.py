"""The app keeps working when the server goes away: the service worker kept the shell, so a
reload still opens the app, and the status bar says the server cannot be reached."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbook.settings.config import Project
from tests.live_server import served


def test_shell_opens_without_the_server_and_says_so(browser: Any, tmp_path: Path) -> None:
    Project.init(tmp_path / "project")
    context = browser.new_context(viewport={"width": 1400, "height": 900}, service_workers="allow")
    try:
        page = context.new_page()
        with served(tmp_path / "project", tmp_path / "server.log") as (base, _port):
            page.goto(base + "/#/")
            page.wait_for_selector("text=no collections yet")
            page.wait_for_function("async () => !!(await navigator.serviceWorker.ready).active")
            page.reload()  # now under the worker's control: it keeps what it serves
            page.wait_for_selector("text=no collections yet")
            page.wait_for_load_state("networkidle")
        page.reload()
        page.wait_for_selector("header.top nav")
        page.wait_for_selector(".status-bar .offline")
        assert "Server unreachable" in page.locator(".status-bar").inner_text()
        assert "cannot be reached" in page.locator("main [role=alert]").inner_text()
    finally:
        context.close()
