"""Helpers for the web app's browser tests: open a page of the app, keep screenshots of it at
1400 and 400 px wide as test artefacts, and run the vendored axe-core accessibility check.

Screenshots go to ``$BENCHBOOK_WEB_ARTEFACTS`` (default ``test-artefacts/web`` at the repository's
root, ignored by git), named ``<name>-1400.png`` and ``<name>-400.png``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
AXE = Path(__file__).with_name("vendor") / "axe-core-4.14.1.min.js"
ARTEFACTS = Path(os.environ.get("BENCHBOOK_WEB_ARTEFACTS") or ROOT / "test-artefacts" / "web")
SERIOUS = {"serious", "critical"}


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


def shoot(page: Any, name: str) -> list[Path]:
    """Screenshots of the whole page at 1400 and at 400 px wide (the viewport is put back after),
    kept under :data:`ARTEFACTS`; also checks that at 400 px nothing is wider than the window
    (the layout is usable on a narrow screen: no horizontal scrolling of the page itself)."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    paths = []
    for width in (1400, 400):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        path = ARTEFACTS / f"{name}-{width}.png"
        page.screenshot(path=str(path), full_page=True)
        paths.append(path)
        if width == 400:
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{name}: at 400 px the page is {overflow} px wider than the window"
    page.set_viewport_size(size)
    return paths


def check_axe(page: Any, name: str) -> list[dict[str, Any]]:
    """Run axe-core (vendored, WCAG 2 A/AA rules) on the page; fails on any serious or critical
    violation, naming the rule and the first elements. Returns all violations found."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
        const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21aa']}});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
    }""")
    serious = [v for v in result if v["impact"] in SERIOUS]
    assert not serious, f"{name}: accessibility violations: {serious}"
    return list(result)


def look(page: Any, name: str) -> None:
    """Both checks every page test ends with: :func:`shoot` and :func:`check_axe`."""
    check_axe(page, name)
    shoot(page, name)
