"""Forms that keep work and say things once, in Chromium (issue 37 items 8 and 12): a workflow
written under "Write it" is kept as a draft when leaving (asked first), listed on Automation and
opened again at its address (no 404); the schema editor's display-template refusal goes once the
field it needed exists, a reference field's target starts on a schema, a refusal is printed once;
plugin descriptions are shortened at a word's end."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.web.pages import check_axe, look, open_app

DRAFT = """name: lab-note
record_schema: sample
triggers:
  manual: {}
steps:
  - id: note
    plugin: benchbook.set-fields
    config:
      fields: {}
"""


def test_a_new_workflow_is_kept_as_a_draft_and_leaving_asks_first(page: Any, empty_server: str) -> None:
    open_app(page, empty_server, "/automation/workflows/lab-note?new=1")
    editor = page.get_by_label("Workflow YAML")
    editor.fill(DRAFT)
    page.get_by_test_id("draft-note").wait_for()
    asked: list[str] = []

    def answer(dialog: Any, accept: bool) -> None:
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda d: answer(d, False))
    page.get_by_role("link", name="← Automation").click()
    assert asked and "unsaved changes" in asked[0]
    assert "workflows/lab-note" in page.url  # stayed
    page.once("dialog", lambda d: answer(d, True))
    page.get_by_role("link", name="← Automation").click()
    page.wait_for_url("**#/automation")
    drafts = page.get_by_test_id("drafts")
    assert "lab-note (new)" in drafts.inner_text()
    drafts.get_by_role("link", name="lab-note").click()
    page.wait_for_url("**#/automation/workflows/lab-note")
    page.get_by_test_id("new-note").wait_for()  # the address without ?new opens the draft, no 404
    assert page.get_by_label("Workflow YAML").input_value() == DRAFT
    assert "a draft from" in page.get_by_test_id("draft-note").inner_text()
    assert not page.locator(".error-box").count()
    look(page, "workflow-draft")
    page.get_by_role("button", name="Discard changes").click()
    assert "name: lab-note" in page.get_by_label("Workflow YAML").input_value()
    page.get_by_test_id("draft-note").wait_for(state="detached")
    assert page.evaluate("() => Object.keys(localStorage).filter(k => k.includes('workflow-draft'))") == []


def test_schema_editor_refusals_clear_and_show_once(page: Any, empty_server: str) -> None:
    base = empty_server
    origin = {"origin": base}
    for name in ("site", "sample"):
        http.post(f"{base}/api/schemas", headers=origin, json={"name": name, "fields": [
            {"name": "depth", "type": "float"}]}).raise_for_status()
    open_app(page, base, "/schemas/sample")
    details = page.get_by_role("form", name="Schema details")
    details.get_by_label("Display template").fill("{code}")
    details.get_by_role("button", name="Save details").click()
    refusal = details.locator(".field-error, .error-box")
    refusal.first.wait_for()
    assert "code" in refusal.first.inner_text()
    page.get_by_role("button", name="Add a field").click()
    form = page.get_by_role("form", name="New field")
    form.get_by_label("Field name").fill("code")
    form.get_by_role("button", name="Add field").click()
    page.locator("li[data-field=code]").wait_for()
    refusal.first.wait_for(state="detached")  # the field it needed exists: the refusal is gone
    details.get_by_role("button", name="Save details").click()
    page.get_by_text("Schema saved").wait_for()

    page.get_by_role("button", name="Add a field").click()
    form.get_by_label("Field name").fill("at")
    form.get_by_label("Type").select_option("reference")
    target = form.get_by_label("Target schema")
    assert target.input_value() != "" and "—" not in target.inner_text()
    target.select_option("site")
    form.get_by_role("button", name="Add field").click()
    page.locator("li[data-field=at]").wait_for()
    fields = {f["name"]: f for f in http.get(f"{base}/api/schemas/sample").json()["fields"]}
    assert fields["at"]["restrictions"] == {"schema": "site"}

    page.get_by_role("button", name="Add a field").click()
    form.get_by_label("Field name").fill("count")
    form.get_by_label("Type").select_option("integer")
    form.get_by_label("Minimum").fill("lots")
    form.get_by_role("button", name="Add field").click()
    form.locator(".field-error").first.wait_for()
    texts = form.locator(".field-error").all_inner_texts()
    assert len(texts) == len(set(texts)) == 1, texts  # said once, next to the Minimum
    check_axe(page, "schema-field-refused")


def test_plugin_descriptions_are_cut_at_a_word_end(page: Any, empty_server: str) -> None:
    open_app(page, empty_server, "/automation")
    long = "Sets fields of the record from templates " * 8
    short = page.evaluate("async (t) => (await import('/static/pages/automation.js')).shorten(t)", long)
    assert short.endswith("…") and len(short) <= 141
    assert long.startswith(short[:-1]) and long[len(short) - 1] == " ", short  # ends where a word ends
    check_axe(page, "automation")
