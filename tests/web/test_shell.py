"""The app's shell in Chromium: navigation, the collections page, a new collection made through
the form, a bad address shown in place, and the keyboard shortcut for search."""
from __future__ import annotations

from typing import Any

import httpx

from tests.web.conftest import ISLANDS, PENGUINS
from tests.web.pages import look, open_app, settle


def test_home_lists_the_collections_with_counts(page: Any, demo_server: str) -> None:
    open_app(page, demo_server)
    cards = page.locator("ul[aria-label=collections] > li")
    assert cards.count() == 1
    card = cards.first.inner_text()
    assert "penguins" in card and "island" in card and "penguin" in card
    counts = [int(c.replace(",", "")) for c in page.locator("[data-testid=record-count]").all_inner_texts()]
    assert counts == [ISLANDS + PENGUINS]
    assert page.locator("nav[aria-label=Main] a[aria-current=page]").inner_text() == "Collections"
    look(page, "home")


def test_unknown_address_is_shown_in_place_and_the_rest_works(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/no/such/page")
    assert "names no page" in page.locator("main").inner_text()
    page.get_by_role("link", name="Schemas").first.click()
    settle(page)
    assert page.url.endswith("#/schemas")


def test_new_collection_form_creates_one_and_shows_field_errors(page: Any, empty_server: str) -> None:
    httpx.post(f"{empty_server}/api/schemas", json={"name": "sample", "fields": [{"name": "site", "type": "string"}]},
               headers={"origin": empty_server}).raise_for_status()
    open_app(page, empty_server)
    assert "no collections yet" in page.locator("main").inner_text()
    page.get_by_role("button", name="New collection").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("bad name!")
    dialog.get_by_label("sample").check()
    dialog.get_by_role("button", name="Create collection").click()
    dialog.locator("[role=alert]").first.wait_for()
    assert dialog.is_visible()
    dialog.get_by_label("Name").fill("field-2024")
    dialog.get_by_role("button", name="Create collection").click()
    page.wait_for_url("**#/c/field-2024*")
    listed = httpx.get(f"{empty_server}/api/collections").json()
    assert [(c["name"], c["schemas"]) for c in listed] == [("field-2024", ["sample"])]


def test_slash_focuses_the_search_box(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins")
    page.locator("body").press("/")
    assert page.evaluate("() => document.activeElement && document.activeElement.type") == "search"
