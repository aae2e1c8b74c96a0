"""History in Chromium: an edit found in the feed, its entry's changes side by side, the revert
plan, the revert applied and checked through the API; a batch opens to its entries; text search;
the storage page and restore-all's plan."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.web.pages import look, open_app


def a_penguin(base: str, sex: str) -> dict[str, Any]:
    return dict(http.get(f"{base}/api/collections/penguins/records",
                          params={"schema": "penguin", "limit": 1, "where": f"sex={sex}", "sort": "natural_name:desc"}).json()["items"][0])


def test_revert_an_edit_from_its_history(page: Any, demo_server: str) -> None:
    penguin = a_penguin(demo_server, "female")
    before = penguin["data"]["body_mass_g"]
    http.patch(f"{demo_server}/api/records/{penguin['id']}", headers={"origin": demo_server},
                json={"data": {"body_mass_g": 9999}}).raise_for_status()
    open_app(page, demo_server, f"/history?record={penguin['id']}")
    line = page.locator("details.entry", has_text="update").first
    line.wait_for()
    line.locator("summary").click()
    assert "9999" in line.inner_text() and str(before) in line.inner_text()
    look(page, "history")
    line.get_by_role("link", name="Open this entry (revert it)").click()
    plan = page.get_by_role("table", name="revert plan")
    plan.wait_for()
    row = plan.locator("tr[data-status=revert]")
    assert row.count() == 1 and "9999" in row.inner_text() and str(before) in row.inner_text()
    look(page, "entry")
    page.get_by_role("button", name="Revert").click()
    page.locator(".ok-box").wait_for()
    assert http.get(f"{demo_server}/api/records/{penguin['id']}").json()["data"]["body_mass_g"] == before


def test_a_batch_opens_to_its_entries_and_text_search_filters(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/history?q=palmerpenguins")  # the import's batch label
    batch = page.locator("[data-testid=batch-event]", has_text="palmerpenguins")
    batch.locator("summary").first.click()
    batch.locator(".batch-entries details.entry").first.wait_for()
    assert batch.locator(".batch-entries details.entry").count() >= 10
    batch.get_by_role("link", name="Open this batch").click()
    page.get_by_role("navigation", name="pages of the batch").wait_for()
    assert "palmerpenguins" in page.locator("h1").inner_text()
    assert page.locator(".entries details.entry").count() == 50
    look(page, "batch")
    page.go_back()
    page.wait_for_url("**#/history?q=palmerpenguins")
    page.get_by_label("Find text in the changes").fill("Torgersen")
    page.get_by_role("button", name="Search the history").click()
    page.wait_for_url("**q=Torgersen*")
    page.wait_for_function("() => document.querySelector('.page-head .muted') && !document.querySelector('main .loading')")
    expected = http.get(f"{demo_server}/api/audit/events", params={"q": "Torgersen"}).json()["total"]
    words = f"{expected:,} {'event' if expected == 1 else 'events'}"  # "1 event", "1,000 events"
    page.wait_for_function(f"() => document.querySelector('.page-head .muted').textContent.startsWith('{words}')")


def test_storage_figures_and_the_restore_all_plan(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/history/storage")
    figures = page.get_by_role("definition").first
    assert figures.inner_text()
    assert "Database file" in page.locator("main").inner_text()
    page.get_by_role("button", name="Show the plan").click()
    page.locator("[aria-label='restore-all plan']").wait_for()
    look(page, "storage")
