"""Issue 37 items 7 and 9 in Chromium: the records table's body is one Tab stop (the active row;
the checkboxes and links inside rows are not Tab stops), Space ticks the focused row as a click on
its checkbox does, arrow and page keys move the active row; Escape cancels a record's Edit as the
Cancel button does (after closing an open reference picker first); on a narrow screen the records
page's secondary controls fold behind one button so that the rows show on the first screen."""
from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests import patient_http as http
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
    expect(page.locator("table.records-grid tbody tr").nth(3)).to_have_attribute("tabindex", "0")
    expect(page.locator("table.records-grid tbody tr[tabindex='0']")).to_have_count(1)
    look(page, "records-keys")


def focused_name(page: Any) -> str:
    """The focused element's tag and text, e.g. ``BUTTON Edit values``."""
    text: str = page.evaluate("() => document.activeElement.tagName + ' ' + document.activeElement.textContent.trim()")
    return text


def test_escape_cancels_edit_and_the_focus_returns_to_edit_values(page: Any, demo_server: str) -> None:
    penguin = http.get(f"{demo_server}/api/collections/penguins/records",
                        params={"schema": "penguin", "limit": 1, "sort": "natural_name", "where": "sex=male"}).json()["items"][0]
    before = penguin["data"]["bill_length_mm"]
    open_app(page, demo_server, f"/r/{penguin['id']}")
    shown_before = page.locator("dd[data-field=bill_length_mm]").inner_text()
    page.get_by_role("button", name="Edit values").click()
    field = page.get_by_label("Bill length (mm)")
    field.fill("99.9")
    look(page, "record-editing")
    field.press("Escape")
    expect(page.get_by_role("button", name="Edit values")).to_be_focused()
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    assert page.locator("dd[data-field=bill_length_mm]").inner_text() == shown_before
    assert http.get(f"{demo_server}/api/records/{penguin['id']}").json()["data"]["bill_length_mm"] == before
    page.keyboard.press("Enter")  # Edit values again: the draft was dropped
    expect(page.get_by_label("Bill length (mm)")).to_have_value(str(before))
    # the Cancel button does the same, focus included
    page.get_by_label("Bill length (mm)").fill("12")
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("button", name="Edit values")).to_be_focused()
    assert http.get(f"{demo_server}/api/records/{penguin['id']}").json()["data"]["bill_length_mm"] == before


def probes(demo_server: str, schema: str) -> list[dict[str, Any]]:
    """Schema ``schema`` (a code and a reference to its own kind) and two records of it, P-1 and
    P-2, in a collection of their own; returns the two records."""
    origin = {"origin": demo_server}
    http.post(f"{demo_server}/api/schemas", headers=origin, json={
        "name": schema, "display_template": "{code}", "fields": [
            {"name": "code", "type": "string"}, {"name": "source", "type": "reference", "restrictions": {"schema": schema}}]},
    ).raise_for_status()
    http.post(f"{demo_server}/api/collections", headers=origin, json={"name": f"{schema}s", "schemas": [schema]}).raise_for_status()
    return [http.post(f"{demo_server}/api/collections/{schema}s/records", headers=origin,
                       json={"schema_name": schema, "data": {"code": code}}).json() for code in ("P-1", "P-2")]


def test_escape_closes_an_open_reference_picker_first_and_the_edit_stays(page: Any, demo_server: str) -> None:
    made = probes(demo_server, "probe")
    open_app(page, demo_server, f"/r/{made[1]['id']}")
    page.get_by_role("button", name="Edit values").click()
    page.get_by_label("code").fill("P-2 changed")
    picker = page.get_by_role("searchbox", name="source")
    picker.fill("P-1")
    picker.press("Enter")  # asks at once
    matches = page.get_by_role("list", name="records for source")
    expect(matches.get_by_role("button", name="P-1")).to_be_visible()
    picker.press("Escape")  # closes the list; the edit stays
    expect(matches).to_have_count(0)
    expect(page.get_by_role("button", name="Save")).to_be_visible()
    expect(picker).to_be_focused()
    expect(picker).to_have_value("P-1")
    picker.press("Escape")  # then clears what was typed; the edit still stays
    expect(picker).to_have_value("")
    expect(page.get_by_label("code")).to_have_value("P-2 changed")
    picker.press("Escape")  # with the picker closed and empty, Escape cancels the edit
    expect(page.get_by_role("button", name="Edit values")).to_be_focused()
    assert page.locator("dd[data-field=code]").inner_text() == "P-2"
    stored = http.get(f"{demo_server}/api/records/{made[1]['id']}").json()["data"]
    assert stored["code"] == "P-2" and not stored.get("source")


FULLY_SHOWN = """() => { const bar = document.querySelector('.status-bar');
  const bottom = bar ? bar.getBoundingClientRect().top : window.innerHeight;
  return [...document.querySelectorAll('table.records-grid tbody tr')].filter(r => {
    const box = r.getBoundingClientRect(); return box.top >= 0 && box.bottom <= bottom; }).length; }"""


def test_on_a_narrow_screen_the_controls_fold_behind_one_button(page: Any, demo_server: str) -> None:
    page.set_viewport_size({"width": 400, "height": 800})
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    toggle = page.get_by_role("button", name="Filters and columns")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    chooser = page.locator("details.column-chooser summary")
    expect(chooser).to_be_hidden()
    expect(page.get_by_role("button", name="Add condition")).to_be_hidden()
    expect(page.get_by_role("combobox", name="Saved view")).to_be_hidden()
    # what stays: the search box and New record; the rows start on the first screen
    expect(page.get_by_role("searchbox", name="Search records")).to_be_visible()
    expect(page.get_by_role("button", name="New record")).to_be_visible()
    shown = page.evaluate(FULLY_SHOWN)
    assert shown >= 5, f"{shown} rows fully on the first 400x800 screen"
    look(page, "records-narrow")

    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("button", name="Add condition")).to_be_visible()
    expect(page.get_by_role("combobox", name="Saved view")).to_be_visible()
    expect(page.get_by_role("link", name="Export CSV (344)")).to_be_visible()
    chooser.click()  # the controls work: take the Species column away
    page.locator("details.column-chooser").get_by_label("Species").uncheck()
    expect(page.locator("table.records-grid thead th[data-column=species]")).to_have_count(0)
    page.keyboard.press("Escape")
    expect(chooser).to_be_focused()
    look(page, "records-narrow-open")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(chooser).to_be_hidden()

    # wide, nothing is folded and the button is not there
    page.set_viewport_size({"width": 1400, "height": 900})
    expect(toggle).to_be_hidden()
    expect(chooser).to_be_visible()
    expect(page.get_by_role("button", name="Add condition")).to_be_visible()


def test_a_type_ahead_still_waiting_when_enter_asked_does_not_reopen_the_list_after_escape(
        page: Any, demo_server: str) -> None:
    """The picker asks 200 ms after the last key; Enter asks at once. The ask still waiting when
    Enter was pressed used to fire after an Escape had closed the list and open it again, so the
    next Escape closed it instead of clearing the text (seen on a busy machine). The page's clock
    is stopped here, so the waiting ask fires exactly when the test says, after the Escape."""
    made = probes(demo_server, "gauge")
    page.add_init_script("""window.asked = []; const fetched = window.fetch;
        window.fetch = (url, init) => { window.asked.push(String(url)); return fetched(url, init); };""")
    page.clock.install()
    open_app(page, demo_server, f"/r/{made[1]['id']}")
    page.get_by_role("button", name="Edit values").click()
    page.clock.pause_at(page.evaluate("Date.now()") + 1000)
    picker = page.get_by_role("searchbox", name="source")
    picker.fill("P-1")  # the type-ahead's ask now waits on the stopped clock
    picker.press("Enter")
    matches = page.get_by_role("list", name="records for source")
    expect(matches.get_by_role("button", name="P-1")).to_be_visible()
    picker.press("Escape")
    expect(matches).to_have_count(0)
    page.clock.run_for(1000)  # anything still waiting fires now, before the count below
    searches = page.evaluate("() => window.asked.filter((u) => u.includes('search=P-1')).length")
    assert searches == 1, "the type-ahead asked again after Escape closed the list"
    picker.press("Escape")
    expect(picker).to_have_value("")
    expect(page.get_by_label("code")).to_be_visible()
