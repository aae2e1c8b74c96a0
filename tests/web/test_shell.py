"""The app's shell in Chromium: navigation, the collections page, a new collection made through
the form, a bad address shown in place, and the keyboard shortcut for search."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.web.conftest import ISLANDS, PENGUINS, sync_api

expect = sync_api.expect
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
    http.post(f"{empty_server}/api/schemas", json={"name": "sample", "fields": [{"name": "site", "type": "string"}]},
               headers={"origin": empty_server}).raise_for_status()
    open_app(page, empty_server)
    assert "no collections yet" in page.locator("main").inner_text()
    page.get_by_role("button", name="New collection").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("!!!")  # nothing to make a name of: refused, the rule in words
    dialog.get_by_label("sample").check()
    dialog.get_by_role("button", name="Create collection").click()
    expect(dialog.locator(".field-error")).to_have_text(
        "A collection's name uses letters, digits, -, _ and ., and starts with a letter or digit.")
    # words typed as a person names things: the name is derived, shown, and used (issue 37 item 6)
    dialog.get_by_label("Name").fill("Lab samples 2024")
    expect(dialog.get_by_text("Saved as “lab-samples-2024”.")).to_be_visible()
    dialog.get_by_role("button", name="Create collection").click()
    page.wait_for_url("**#/c/lab-samples-2024*")
    listed = http.get(f"{empty_server}/api/collections").json()
    assert [(c["name"], c["schemas"]) for c in listed] == [("lab-samples-2024", ["sample"])]


def test_slash_focuses_the_search_box(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins")
    page.locator("body").press("/")
    assert page.evaluate("() => document.activeElement && document.activeElement.type") == "search"


def test_a_dialog_opens_on_its_first_field_and_gives_focus_back_when_closed(page: Any, empty_server: str) -> None:
    """Issue 37 item 9: Escape or Cancel used to drop focus to <body>."""
    open_app(page, empty_server)
    opener = page.get_by_role("button", name="New collection")
    for close in ("Escape", "Cancel", "Close"):
        opener.click()
        dialog = page.get_by_role("dialog")
        expect(dialog.get_by_label("Name")).to_be_focused()
        if close == "Escape":
            page.keyboard.press("Escape")
        else:
            dialog.get_by_role("button", name=close).click()
        expect(dialog).to_have_count(0)
        expect(opener).to_be_focused()


def test_the_app_has_an_icon_where_browsers_look_for_one(page: Any, demo_server: str) -> None:
    """Issue 37 item 12: /favicon.ico answered 404 on every load."""
    for path in ("/favicon.ico", "/static/favicon.svg"):
        got = http.get(f"{demo_server}{path}")
        assert (got.status_code, got.headers["content-type"]) == (200, "image/svg+xml")
    open_app(page, demo_server)
    assert page.locator("link[rel=icon]").get_attribute("href") == "/static/favicon.svg"
