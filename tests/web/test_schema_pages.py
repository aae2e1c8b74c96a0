"""Schemas, the schema editor and collection settings in Chromium: a schema made with three
fields (one refused restriction shown in place), fields reordered, the template preview, a
collection renamed and a refused change shown in place."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.waiting import until
from tests.web.pages import look, open_app


def add_field(page: Any, name: str, type_: str, restrictions: dict[str, str]) -> None:
    page.get_by_role("button", name="Add a field").click()
    form = page.get_by_role("form", name="New field")
    form.get_by_label("Field name").fill(name)
    form.get_by_label("Type").select_option(type_)
    for label, value in restrictions.items():
        form.get_by_label(label).fill(value)
    form.get_by_role("button", name="Add field").click()


def test_create_a_schema_with_fields(page: Any, empty_server: str) -> None:
    base = empty_server
    open_app(page, base, "/schemas")
    page.get_by_role("button", name="New schema").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("sample")
    dialog.get_by_label("Label").fill("Sample")
    dialog.get_by_role("button", name="Create schema").click()
    page.wait_for_url("**#/schemas/sample")
    add_field(page, "site", "string", {})
    page.locator("li[data-field=site]").wait_for()
    add_field(page, "depth", "integer", {"Minimum": "not a number"})
    form = page.get_by_role("form", name="New field")
    form.locator(".field-error").first.wait_for()
    assert form.is_visible()
    form.get_by_label("Minimum").fill("0")
    form.get_by_role("button", name="Add field").click()
    page.locator("li[data-field=depth]").wait_for()
    add_field(page, "kind", "string", {"Choices": "soil, water, air"})
    page.locator("li[data-field=kind]").wait_for()
    fields = http.get(f"{base}/api/schemas/sample").json()["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [("site", "string"), ("depth", "integer"), ("kind", "string")]
    assert fields[1]["restrictions"] == {"min": 0} and fields[2]["restrictions"] == {"choices": ["soil", "water", "air"]}
    page.get_by_role("button", name="move kind up").click()
    page.wait_for_function("() => [...document.querySelectorAll('.fields-list > li')].map(l => l.dataset.field).join() === 'site,kind,depth'")
    assert [f["name"] for f in http.get(f"{base}/api/schemas/sample").json()["fields"]] == ["site", "kind", "depth"]
    look(page, "schema")
    open_app(page, base, "/schemas")
    assert "sample" in page.get_by_role("table", name="schemas").inner_text()
    look(page, "schemas")



def test_words_typed_as_a_name_make_the_schema_s_and_field_s_names(page: Any, empty_server: str) -> None:
    """Issue 37 item 6: "Tissue sample" typed as a schema's name is saved as tissue_sample with
    the words as its label, the dialog saying so before it is sent; a field likewise; a name that
    cannot be made says the rule in words, never the pattern."""
    base = empty_server
    open_app(page, base, "/schemas")
    page.get_by_role("button", name="New schema").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Name").fill("Tissue sample")
    assert "Saved as “tissue_sample”, labelled “Tissue sample”" in dialog.inner_text()
    look(page, "schema-new-from-words")
    dialog.get_by_role("button", name="Create schema").click()
    page.wait_for_url("**#/schemas/tissue_sample")
    schema = http.get(f"{base}/api/schemas/tissue_sample").json()
    assert schema["label"] == "Tissue sample"
    page.get_by_role("button", name="Add a field").click()
    form = page.get_by_role("form", name="New field")
    form.get_by_label("Field name").fill("Body mass (g)")
    assert "Saved as “body_mass_g”, labelled “Body mass (g)”" in form.inner_text()
    form.get_by_role("button", name="Add field").click()
    page.locator("li[data-field=body_mass_g]").wait_for()
    field = http.get(f"{base}/api/schemas/tissue_sample").json()["fields"][0]
    assert (field["name"], field["label"]) == ("body_mass_g", "Body mass (g)")
    page.get_by_role("button", name="Add a field").click()
    form = page.get_by_role("form", name="New field")
    form.get_by_label("Field name").fill("***")
    form.get_by_role("button", name="Add field").click()
    error = form.locator(".field-error").first
    error.wait_for()
    assert "lower-case letters, digits and _" in error.inner_text() and "^[" not in form.inner_text()

def test_template_preview_and_collection_settings(page: Any, empty_server: str) -> None:
    base = empty_server
    origin = {"origin": base}
    http.post(f"{base}/api/schemas", headers=origin, json={"name": "plot", "fields": [
        {"name": "code", "type": "string"}, {"name": "area", "type": "float"}]}).raise_for_status()
    http.post(f"{base}/api/collections", headers=origin, json={"name": "field-site", "schemas": ["plot"]}).raise_for_status()
    http.post(f"{base}/api/collections/field-site/records", headers=origin,
               json={"schema_name": "plot", "data": {"code": "North-7", "area": 2.5}}).raise_for_status()
    open_app(page, base, "/schemas/plot")
    page.get_by_label("Display template").fill("{code:.5} ({area})")
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=preview-name]')].some(e => e.textContent === 'North (2.5)')")
    page.get_by_role("button", name="Save details").click()
    until(lambda: http.get(f"{base}/api/schemas/plot").json()["display_template"] == "{code:.5} ({area})",
               "the template to be saved")
    open_app(page, base, "/c/field-site/settings")
    page.get_by_label("Timezone").fill("Not/AZone")
    page.get_by_role("button", name="Save settings").click()
    page.locator(".field.invalid .field-error").first.wait_for()
    page.get_by_label("Timezone").fill("Europe/Berlin")
    page.get_by_label("Collection name").fill("field-site-2")
    page.get_by_role("button", name="Save settings").click()
    page.wait_for_url("**#/c/field-site-2/settings")
    got = http.get(f"{base}/api/collections/field-site-2").json()
    assert got["timezone"] == "Europe/Berlin"
    look(page, "collection")
