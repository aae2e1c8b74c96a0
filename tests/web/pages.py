"""Helpers for the web app's browser tests: open a page of the app, keep screenshots of it at
1400 and 400 px wide as test artefacts, and run the vendored axe-core accessibility check at both
widths.

Screenshots go to ``$BENCHBOOK_WEB_ARTEFACTS`` (default ``test-artefacts/web`` at the repository's
root, ignored by git), named ``<name>-1400.png`` and ``<name>-400.png``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests import patient_http as http

ROOT = Path(__file__).resolve().parents[2]
AXE = Path(__file__).with_name("vendor") / "axe-core-4.14.1.min.js"
ARTEFACTS = Path(os.environ.get("BENCHBOOK_WEB_ARTEFACTS") or ROOT / "test-artefacts" / "web")


def open_app(page: Any, base: str, hash_path: str = "/") -> Any:
    """Load ``base/#<hash_path>`` and wait until the app has rendered its shell and no loading
    indicator is left in the main area. Returns the page."""
    page.goto(f"{base}/#{hash_path}")
    page.wait_for_selector("header.top nav")
    settle(page)
    return page


def settle(page: Any) -> None:
    """Wait until no request is in flight and ``main`` shows no loading indicator."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function("() => !document.querySelector('main .loading')")


WIDTHS = (1400, 400)
"""The widths every page is checked and shot at (px): a laptop and a phone."""


def shoot(page: Any, name: str, *, axe: bool = False) -> list[Path]:
    """Screenshots of the whole page at each of :data:`WIDTHS` (the viewport is put back after),
    kept under :data:`ARTEFACTS`; also checks that at 400 px nothing is wider than the window
    (the layout is usable on a narrow screen: no horizontal scrolling of the page itself) and,
    with ``axe``, runs :func:`check_axe` at each width first."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    paths = []
    try:
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_function(f"() => window.innerWidth === {width}")
            if axe:
                check_axe(page, f"{name} at {width} px")
            path = ARTEFACTS / f"{name}-{width}.png"
            page.screenshot(path=str(path), full_page=True)
            paths.append(path)
            if width == 400:
                overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 1, f"{name}: at 400 px the page is {overflow} px wider than the window"
    finally:
        page.set_viewport_size(size)
    return paths


def check_axe(page: Any, name: str) -> list[dict[str, Any]]:
    """Run axe-core (vendored, WCAG 2 A/AA and 2.1 AA rules) on the page as it is now; fails on
    any violation, whatever its impact, naming the rule and the first elements (issue 37: 0
    violations on every page, dialog and edit state). Returns the violations (none)."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa']}});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
    }""")
    assert not result, f"{name}: accessibility violations: {result}"
    return list(result)


def look(page: Any, name: str) -> None:
    """What every page test ends with: at each of :data:`WIDTHS`, :func:`check_axe` and a
    screenshot (:func:`shoot`)."""
    shoot(page, name, axe=True)


def api_records(base: str, **params: Any) -> dict[str, Any]:
    """A page of the demo's ``penguins`` records from the API at ``base`` (dict parameters sent as
    JSON, as a filter tree is): what a page of the app should show, read without the browser."""
    query = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in params.items()}
    response = http.get(f"{base}/api/collections/penguins/records", params=query)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result
