"""The import page in Chromium on an empty project: a CSV imported into a new collection with a
schema created from the file, its rows seen in the records table, the import undone; a refused
import shows its problem lines and skip-bad imports the good rows."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests import patient_http as http
from tests.web.pages import look, open_app, settle

SAMPLES = "site,depth,sampled\nAlpha,2.5,2024-05-01\nBravo,4,2024-05-02\nCharlie,1.25,2024-05-03\n"


def collection_of(server: str, collection: str, schema: str, fields: list[dict[str, Any]]) -> None:
    """A schema with ``fields`` and a collection holding it, made through the API."""
    http.post(f"{server}/api/schemas", headers={"origin": server},
               json={"name": schema, "fields": fields}).raise_for_status()
    http.post(f"{server}/api/collections", headers={"origin": server},
               json={"name": collection, "schemas": [schema]}).raise_for_status()


def test_import_a_csv_into_a_new_collection_and_undo_it(page: Any, empty_server: str, tmp_path: Path) -> None:
    source = tmp_path / "samples.csv"
    source.write_text(SAMPLES)
    open_app(page, empty_server, "/c/fieldwork/import")
    expect(page.locator("main .warn-box")).to_contain_text("no collection fieldwork yet")
    page.get_by_label("File", exact=True).set_input_files(str(source))
    assert page.get_by_label("Create a schema from the file", exact=True).is_checked()
    page.get_by_label("New schema name").fill("sample")
    page.get_by_role("button", name="Import", exact=True).click()
    result = page.get_by_test_id("import-result")
    expect(result.get_by_test_id("created")).to_have_text("3")
    assert "collection fieldwork created too" in result.inner_text()
    look(page, "import")
    result.get_by_role("link", name="See the records").click()
    page.wait_for_url("**#/c/fieldwork?schema=sample")
    settle(page)
    expect(page.locator("table.records-grid tbody tr")).to_have_count(3)
    names = page.locator("table.records-grid tbody td.name").all_inner_texts()
    assert sorted(names) == ["Alpha", "Bravo", "Charlie"]
    listed = http.get(f"{empty_server}/api/collections/fieldwork/records", params={"schema": "sample"}).json()
    assert listed["total"] == 3
    schema = http.get(f"{empty_server}/api/schemas/sample").json()
    assert {f["name"]: f["type"] for f in schema["fields"]} == {"site": "string", "depth": "float", "sampled": "date"}
    page.go_back()
    settle(page)
    # the import page again (a fresh load): undo from its result
    open_app(page, empty_server, "/c/fieldwork/import?schema=sample")
    page.get_by_label("File", exact=True).set_input_files(str(source))
    assert page.get_by_label("Schema", exact=True).input_value() == "sample"
    page.get_by_role("button", name="Import", exact=True).click()
    expect(result.get_by_test_id("created")).to_have_text("3")
    result.get_by_role("button", name="Undo this import").click()
    expect(page.get_by_test_id("undo-result")).to_contain_text("3 records deleted")
    assert http.get(f"{empty_server}/api/collections/fieldwork/records", params={"schema": "sample"}).json()["total"] == 3


def test_a_refused_import_lists_its_problems_and_skip_bad_imports_the_rest(page: Any, empty_server: str,
                                                                           tmp_path: Path) -> None:
    collection_of(empty_server, "readings", "reading", [{"name": "probe", "type": "string", "required": True},
                                                         {"name": "value", "type": "integer"}])
    source = tmp_path / "readings.csv"
    source.write_text("probe,value\nP1,3\nP2,lots\nP3,x\n,4\nP5,5\n")
    open_app(page, empty_server, "/c/readings/import")
    page.get_by_label("File", exact=True).set_input_files(str(source))
    page.get_by_role("button", name="Import", exact=True).click()
    problems = page.locator("main .error-box.problems")
    expect(problems).to_contain_text("Nothing was imported")
    expect(problems).to_contain_text("lines 3, 4")
    assert http.get(f"{empty_server}/api/collections/readings/records").json()["total"] == 0
    page.get_by_label("Skip bad rows").check()
    page.get_by_role("button", name="Import", exact=True).click()
    result = page.get_by_test_id("import-result")
    expect(result.get_by_test_id("created")).to_have_text("2")
    expect(result.get_by_test_id("skipped")).to_have_text("3")
    assert result.get_by_role("link", name="Download the rejected rows").count() == 1
    assert http.get(f"{empty_server}/api/collections/readings/records").json()["total"] == 2


def test_a_dry_run_that_finds_problems_reads_as_a_check_not_an_error(page: Any, empty_server: str,
                                                                      tmp_path: Path) -> None:
    """Issue 37 item 6: a dry run was headed "Error 422: Nothing was imported"."""
    collection_of(empty_server, "probes", "probe", [{"name": "depth", "type": "integer"}])
    source = tmp_path / "probes.csv"
    source.write_text("depth\n3\ndeep\n")
    open_app(page, empty_server, "/c/probes/import")
    page.get_by_label("File", exact=True).set_input_files(str(source))
    page.get_by_label("Dry run").check()
    page.get_by_role("button", name="Check file").click()
    checked = page.locator("main .problems[role=status]")
    expect(checked).to_contain_text("Checked: importing this file as it is would be refused")
    expect(checked).to_contain_text("line 3")
    assert "Error 422" not in checked.inner_text()
