"""Issue 37 items 1, 2 and 5 in Chromium: a history line names the record it is about (natural
name, schema, collection) and says a small edit as before → after; an entry's page names what it
is about instead of its id; reverting an edit of two fields with one unticked puts back only the
ticked one (the API's `fields`)."""
from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests import patient_http as http
from tests.web.pages import look, open_app


def test_an_edit_reads_by_name_and_reverts_only_the_ticked_field(page: Any, demo_server: str) -> None:
    api = f"{demo_server}/api"
    penguin = http.get(f"{api}/records", params={"schema": "penguin", "limit": 1, "search": "Biscoe"}).json()
    penguin = penguin[0] if penguin else http.get(f"{api}/records", params={"schema": "penguin", "limit": 1}).json()[0]
    before = http.get(f"{api}/records/{penguin['id']}").json()["data"]
    edited = http.patch(f"{api}/records/{penguin['id']}", json={"data": {"bill_length_mm": 77.7, "flipper_length_mm": 333}})
    edited.raise_for_status()
    name = edited.json()["natural_name"]
    entry = http.get(f"{api}/records/{penguin['id']}/audit").json()["items"][0]
    assert entry["action"] == "update"

    open_app(page, demo_server, f"/history?record={penguin['id']}")
    line = page.locator("details.entry > summary").first
    expect(line).to_contain_text(f"penguin {name} in penguins")
    expect(line).to_contain_text("→ 77.7")

    open_app(page, demo_server, f"/history/entry/{entry['id']}")
    what = page.locator("dl.props dd").nth(2)
    expect(what).to_contain_text(name)
    assert penguin["id"] not in what.inner_text()
    plan = page.get_by_role("table", name="revert plan")
    flipper = plan.get_by_role("checkbox", name="Put back Flipper length")
    expect(flipper).to_be_checked()
    flipper.uncheck()
    look(page, "entry-revert-ticks")
    page.get_by_role("button", name="Revert", exact=True).click()
    expect(page.locator(".ok-box")).to_contain_text("Reverted")
    expect(page.locator(".notice")).to_contain_text("Reverted: Bill length")  # by label, not field name
    after = http.get(f"{api}/records/{penguin['id']}").json()["data"]
    assert after["bill_length_mm"] == before["bill_length_mm"]  # ticked: put back
    assert after["flipper_length_mm"] == 333  # unticked: kept
