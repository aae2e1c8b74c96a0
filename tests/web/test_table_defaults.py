"""Issue 37 item 7 in Chromium: a collection opens on the schema holding its records (the demo's
344 penguins, not its first schema's 3 islands), a column's unit is in its header, and a field the
display template shows alone is not a second Name column."""
from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import PENGUINS
from tests.web.pages import open_app


def test_a_collection_opens_on_the_schema_with_the_most_records_with_units_in_headers(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins")
    expect(page.get_by_role("navigation", name="Schemas").locator("[aria-current=page]")).to_have_text("penguin")
    expect(page.locator("table.records-grid")).to_have_attribute("aria-label", "penguin records")
    assert f"{PENGUINS}" in page.locator("main").inner_text()
    headers = page.locator("table.records-grid thead th").all_inner_texts()
    assert any(h.startswith("Bill length (mm)") for h in headers), headers
    assert len(headers) == len(set(headers)), headers  # no column twice
    page.get_by_role("navigation", name="Schemas").get_by_role("link", name="island").click()
    expect(page.locator("table.records-grid")).to_have_attribute("aria-label", "island records")
    headers = page.locator("table.records-grid thead th").all_inner_texts()
    assert len(headers) == len(set(headers)), headers  # the island's name is its Name column, shown once
