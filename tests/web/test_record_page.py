"""The record page in Chromium: breadcrumb, editing with the API's message next to the field,
a file uploaded and previewed (image and CSV), references with labels, history."""
from __future__ import annotations

import base64
from typing import Any

import pytest

from tests import patient_http as http
from tests.waiting import until
from tests.web.pages import look, open_app, settle

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg==")


def first_penguin(base: str) -> dict[str, Any]:
    body = http.get(f"{base}/api/collections/penguins/records",
                     params={"schema": "penguin", "limit": 1, "sort": "natural_name", "where": "sex=male"}).json()
    return dict(body["items"][0])


def test_open_a_penguin_edit_a_value_and_see_the_error_in_place(page: Any, demo_server: str) -> None:
    penguin = first_penguin(demo_server)
    open_app(page, demo_server, f"/r/{penguin['id']}")
    crumbs = page.get_by_role("navigation", name="Breadcrumb").inner_text()
    assert "penguins" in crumbs and penguin["natural_name"] in crumbs
    island = page.get_by_role("navigation", name="Breadcrumb").get_by_role("link").nth(1).inner_text()
    assert island in {"Torgersen", "Biscoe", "Dream"}
    page.get_by_role("button", name="Edit values").click()
    page.get_by_label("Bill length (mm)").fill("long")
    page.get_by_label("Study year").fill("1800")
    page.get_by_role("button", name="Save").click()
    bill_error = page.locator(".field.invalid", has=page.get_by_label("Bill length (mm)")).locator(".field-error")
    bill_error.wait_for()
    assert "not a number" in bill_error.inner_text()
    assert "minimum" in page.locator(".field.invalid", has=page.get_by_label("Study year")).locator(".field-error").inner_text()
    assert page.get_by_role("button", name="Save").is_enabled()  # the rest of the page still works
    page.get_by_label("Bill length (mm)").fill("41.5")
    page.get_by_label("Study year").fill("2008")
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Edit values").wait_for()
    stored = http.get(f"{demo_server}/api/records/{penguin['id']}").json()["data"]
    assert stored["bill_length_mm"] == 41.5 and stored["year"] == 2008
    assert page.locator("dd[data-field=bill_length_mm]").inner_text().startswith("41.5")
    history = page.locator("section[aria-labelledby=history-h] details.entry").first
    history.wait_for()
    assert "update" in history.inner_text() and "41.5" in history.inner_text()
    look(page, "record")


@pytest.fixture(scope="module")
def lab(demo_server: str) -> dict[str, Any]:
    """A collection of its own with a file field and a reference field, one record in it."""
    origin = {"origin": demo_server}
    http.post(f"{demo_server}/api/schemas", headers=origin, json={
        "name": "sample", "display_template": "{code}", "fields": [
            {"name": "code", "type": "string"}, {"name": "scan", "type": "file"},
            {"name": "table", "type": "file"}, {"name": "source", "type": "reference", "restrictions": {"schema": "sample"}}]},
    ).raise_for_status()
    http.post(f"{demo_server}/api/collections", headers=origin, json={"name": "lab", "schemas": ["sample"]}).raise_for_status()
    made = [http.post(f"{demo_server}/api/collections/lab/records", headers=origin,
                       json={"schema_name": "sample", "data": {"code": code}}).json() for code in ("S-1", "S-2")]
    return {"first": made[0], "second": made[1]}


def shown(page: Any, locator: Any) -> None:
    """Wait for ``locator`` (until :data:`tests.waiting.HANG`); when it does not show, fail with what the page shows
    instead (a "Preview failed" alert, the values) and its console errors, so that a failure on
    a busy CI machine says which request went wrong."""
    try:
        locator.wait_for()
    except Exception as exc:
        raise AssertionError(f"{locator} did not show ({type(exc).__name__}); the page shows:\n"
                             f"{page.locator('main').inner_text()[:3000]}\n"
                             f"console errors: {page.console_errors}") from exc


def test_upload_an_image_and_a_csv_and_preview_them(page: Any, demo_server: str, lab: dict[str, Any],
                                                    tmp_path: Any) -> None:
    image = tmp_path / "scan.png"
    image.write_bytes(PNG)
    table = tmp_path / "weights.csv"
    table.write_text("day,weight\n2024-01-01,3.5\n2024-01-02,3.7\n")
    open_app(page, demo_server, f"/r/{lab['first']['id']}")
    page.get_by_role("button", name="Edit values").click()
    page.get_by_label("scan").set_input_files(str(image))
    page.get_by_label("table").set_input_files(str(table))
    page.get_by_role("button", name="Save").click()  # enabled once both uploads are done
    page.locator("button:has-text('Edit values'), .record-form [role=alert]").first.wait_for()
    assert page.get_by_role("button", name="Edit values").count() == 1, page.locator("main").inner_text()
    shown(page, page.get_by_role("img", name="preview of scan.png"))
    assert page.get_by_role("img", name="preview of scan.png").evaluate("img => img.naturalWidth") == 2
    preview = page.get_by_role("table", name="first rows of weights.csv")
    shown(page, preview)  # as the image: both previews load at once, slow on a busy machine
    assert preview.locator("tbody tr").count() == 2 and "3.7" in preview.inner_text()
    data = http.get(f"{demo_server}/api/records/{lab['first']['id']}").json()["data"]
    assert data["scan"] and data["table"]


def test_save_waits_for_a_file_still_uploading(page: Any, demo_server: str, lab: dict[str, Any],
                                               tmp_path: Any) -> None:
    """A file picked just before Save would be lost if Save went first: while an upload is in
    progress the button says so and is disabled, and Enter in a field does not save either."""
    record = http.post(f"{demo_server}/api/collections/lab/records", headers={"origin": demo_server},
                        json={"schema_name": "sample", "data": {"code": "S-9"}}).json()
    table = tmp_path / "slow.csv"
    table.write_text("day,weight\n2024-01-01,3.5\n")
    held: list[Any] = []
    page.route("**/api/files", lambda route: held.append(route))  # the upload waits until the test lets it go
    open_app(page, demo_server, f"/r/{record['id']}")
    page.get_by_role("button", name="Edit values").click()
    page.get_by_label("code").fill("S-9b")
    page.get_by_label("table").set_input_files(str(table))
    waiting = page.get_by_role("button", name="Uploading…")
    waiting.wait_for()
    assert waiting.is_disabled() and page.get_by_role("button", name="Save").count() == 0
    page.get_by_label("code").press("Enter")
    until(lambda: held or page.wait_for_timeout(50), "the save request to be held")  # the wait lets Playwright route it
    assert len(held) == 1
    assert http.get(f"{demo_server}/api/records/{record['id']}").json()["data"]["code"] == "S-9"  # not saved
    held[0].continue_()
    page.get_by_role("button", name="Save").click()
    page.get_by_role("button", name="Edit values").wait_for()
    data = http.get(f"{demo_server}/api/records/{record['id']}").json()["data"]
    assert data["code"] == "S-9b" and data["table"]


def test_reference_picker_links_a_record_with_its_label(page: Any, demo_server: str, lab: dict[str, Any]) -> None:
    open_app(page, demo_server, f"/r/{lab['second']['id']}")
    page.get_by_role("button", name="Edit values").click()
    page.get_by_label("source").fill("S-1")
    page.get_by_role("button", name="Find").click()
    page.get_by_role("list", name="records for source").get_by_role("button", name="S-1").click()
    page.get_by_role("button", name="Save").click()
    link = page.locator("dd[data-field=source] a")
    link.wait_for()
    assert link.inner_text() == "S-1"
    link.click()
    page.wait_for_function("() => document.querySelector('main h1') && document.querySelector('main h1').textContent === 'S-1'")
    settle(page)
    page.locator("section[aria-labelledby=referrers-h]").get_by_role("link", name="S-2").wait_for()


def test_reference_picker_saves_a_typed_name_as_the_record_it_names(page: Any, demo_server: str,
                                                                    lab: dict[str, Any]) -> None:
    open_app(page, demo_server, f"/r/{lab['first']['id']}")
    page.get_by_role("button", name="Edit values").click()
    page.get_by_label("source").fill("S-2")
    page.get_by_role("button", name="Use as typed").click()
    page.get_by_role("button", name="Save").click()
    link = page.locator("dd[data-field=source] a")
    shown(page, link)
    assert link.inner_text() == "S-2"
    assert http.get(f"{demo_server}/api/records/{lab['first']['id']}").json()["data"]["source"] == lab["second"]["id"]
