"""Issue 37 items 7 and 9 in Chromium: the records table's body is one Tab stop (the active row;
the checkboxes and links inside rows are not Tab stops), Space ticks the focused row as a click on
its checkbox does, arrow and page keys move the active row."""
from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.web.pages import look, open_app

ACTIVE = """() => { const a = document.activeElement;
  return {tag: a.tagName, id: a.id || null, row: a.dataset ? a.dataset.id || null : null,
          label: a.labels && a.labels.length ? a.labels[0].textContent.trim() : a.getAttribute('aria-label')}; }"""


def row_ids(page: Any) -> list[str]:
    """The ids of the rows shown, top to bottom."""
    ids: list[str] = page.locator("table.records-grid tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")
    return ids


def test_the_rows_are_one_tab_stop_and_space_ticks_the_focused_row(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=natural_name")
    ids = row_ids(page)
    assert len(ids) == 50
    # the element before the rows: the header's last control (a sort button)
    page.locator("table.records-grid thead button.sort").last.focus()
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["row"] == ids[0]
    page.keyboard.press("Tab")  # one more Tab leaves the table: on to the pager's page number
    after = page.evaluate(ACTIVE)
    assert after["tag"] == "INPUT" and after["id"] == "page-number", after
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(ACTIVE)["row"] == ids[0]
    # the inner controls are not Tab stops
    inner = page.locator("table.records-grid tbody").evaluate(
        "b => [...b.querySelectorAll('a, input, button')].filter(e => e.tabIndex >= 0).length")
    assert inner == 0

    page.keyboard.press("Space")
    first = page.locator("table.records-grid tbody tr").nth(0)
    expect(first.get_by_role("checkbox")).to_be_checked()
    expect(page.locator(".records-actions .selection")).to_have_text("1 selected")
    expect(page.get_by_role("button", name="Delete selected…")).to_be_visible()
    assert page.evaluate(ACTIVE)["row"] == ids[0]  # the focus stays on the row

    page.keyboard.press("ArrowDown")
    assert page.evaluate(ACTIVE)["row"] == ids[1]
    page.keyboard.press("Space")
    expect(page.locator(".records-actions .selection")).to_have_text("2 selected")
    page.keyboard.press("Space")  # Space again unticks it
    expect(page.locator(".records-actions .selection")).to_have_text("1 selected")
    expect(page.locator("table.records-grid tbody tr").nth(1).get_by_role("checkbox")).not_to_be_checked()

    page.keyboard.press("PageDown")
    assert page.evaluate(ACTIVE)["row"] == ids[11]
    page.keyboard.press("End")
    assert page.evaluate(ACTIVE)["row"] == ids[-1]
    page.keyboard.press("PageUp")
    assert page.evaluate(ACTIVE)["row"] == ids[-11]
    page.keyboard.press("Home")
    assert page.evaluate(ACTIVE)["row"] == ids[0]
    page.keyboard.press("ArrowDown")
    # Tab out and back: the Tab stop is the row last moved to
    page.keyboard.press("Tab")
    assert page.evaluate(ACTIVE)["id"] == "page-number"
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(ACTIVE)["row"] == ids[1]
    # a click on a checkbox ticks as Space does, and makes its row the Tab stop
    page.locator("table.records-grid tbody tr").nth(3).get_by_role("checkbox").click()
    expect(page.locator(".records-actions .selection")).to_have_text("2 selected")
    assert page.locator("table.records-grid tbody tr").nth(3).get_attribute("tabindex") == "0"
    look(page, "records-keys")
