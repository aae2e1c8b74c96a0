"""The import page's preview in Chromium (issue 37 item 10): before importing, each column with
the field it goes into and its type, and the first rows as they will be read; a column's field
changed by the user is where its values land; a schema made from the file shows the inferred
types first; the result is scrolled to when the import ends."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests import patient_http as http
from tests.web.pages import check_axe, open_app, shoot
from tests.web.test_import import collection_of

CORES = "Code,depth_m,Where,Notes\nA1,1.5,north ridge,first\nA2,2.25,south bay,second\nA3,3,north ridge,third\n"


def column(page: Any, name: str) -> Any:
    return page.get_by_test_id("import-columns").locator(f"tr[data-column='{name}']")


def test_choose_the_field_of_each_column_from_a_preview_then_import(page: Any, empty_server: str, tmp_path: Path) -> None:
    collection_of(empty_server, "cores", "core", [{"name": "code", "type": "string"},
                                                  {"name": "depth", "type": "float", "label": "Depth"},
                                                  {"name": "site", "type": "string"}])
    source = tmp_path / "cores.csv"
    source.write_text(CORES)
    open_app(page, empty_server, "/c/cores/import")
    page.get_by_label("File", exact=True).set_input_files(str(source))
    expect(page.get_by_test_id("preview-summary")).to_contain_text("3 rows read: importing would create 3")
    # as the server matches them: Code is the field code, the others name no field
    expect(column(page, "Code").get_by_role("combobox")).to_have_value("code")
    expect(column(page, "Code").get_by_test_id("column-type")).to_have_text("string")
    expect(column(page, "depth_m").get_by_role("combobox")).to_have_value("")
    expect(page.get_by_test_id("import-preview")).to_contain_text("were not imported")
    page.get_by_label("Field for column depth_m").select_option("depth")
    page.get_by_label("Field for column Where").select_option("site")
    expect(column(page, "depth_m").get_by_test_id("column-type")).to_have_text("float")
    rows = page.get_by_test_id("import-rows")
    expect(rows.locator("thead")).to_contain_text("Depth")
    expect(rows.locator("tbody tr").first).to_contain_text("north ridge")
    expect(rows.locator("tbody tr").first).to_contain_text("1.5")
    check_axe(page, "import-preview")
    page.set_viewport_size({"width": 400, "height": 900})
    check_axe(page, "import-preview-400")
    shoot(page, "import-preview")
    page.get_by_label("Field for column Notes").select_option("site")  # a field twice is refused before sending
    expect(page.get_by_test_id("import-preview").get_by_role("alert")).to_contain_text("Two columns go into site")
    expect(page.get_by_role("button", name="Import", exact=True)).to_be_disabled()
    page.get_by_label("Field for column Notes").select_option("")
    page.get_by_role("button", name="Import", exact=True).click()
    result = page.get_by_test_id("import-result")
    expect(result.get_by_test_id("created")).to_have_text("3")
    expect(result.get_by_role("heading")).to_be_in_viewport()
    expect(result.get_by_role("heading")).to_be_focused()
    items = http.get(f"{empty_server}/api/collections/cores/records", params={"schema": "core"}).json()["items"]
    assert sorted((r["data"]["code"], r["data"].get("depth"), r["data"].get("site")) for r in items) == [
        ("A1", 1.5, "north ridge"), ("A2", 2.25, "south bay"), ("A3", 3.0, "north ridge")]


def test_a_schema_from_the_file_shows_its_inferred_types_before_importing(page: Any, empty_server: str,
                                                                          tmp_path: Path) -> None:
    source = tmp_path / "plots.csv"
    source.write_text("plot,area,surveyed,grazed\nP1,12.5,2024-05-01,yes\nP2,8,2024-05-02,no\nP3,3.25,2024-05-03,yes\n")
    open_app(page, empty_server, "/c/plots/import")
    page.get_by_label("File", exact=True).set_input_files(str(source))
    expect(page.get_by_test_id("preview-summary")).to_contain_text("importing would create 3")
    types = {name: column(page, name).get_by_test_id("column-type") for name in ("plot", "area", "surveyed", "grazed")}
    expect(types["area"]).to_have_text("float")
    expect(types["surveyed"]).to_have_text("date")
    expect(types["grazed"]).to_have_text("boolean")
    expect(types["plot"]).to_have_text("string")
    assert http.get(f"{empty_server}/api/collections/plots").status_code == 404  # a preview writes nothing
    check_axe(page, "import-preview-new-schema")


def test_the_header_is_renamed_in_the_copy_sent_and_nothing_else_changes(page: Any, empty_server: str) -> None:
    open_app(page, empty_server, "/")
    out = page.evaluate("""async () => {
        const m = await import('/static/lib/import-file.js');
        const run = async (name, text, renames) => {
            const look = await m.readColumns(new File([text], name));
            return [look.columns, look.columns ? new TextDecoder('utf-8', {ignoreBOM: true})
                .decode(await look.rename(renames).arrayBuffer()) : look.why];
        };
        return [
            await run('a.csv', '\\ufeff\\n"Depth, m";Where\\n1,5;"x;y"\\n', {'Depth, m': 'depth'}),
            await run('b.tsv', 'a\\tb\\n1\\t2\\n', {b: '(not imported) b'}),
            await run('c.ndjson', '{"x": 1}\\n{"y": "é"}\\n', {y: 'why'}),
            await run('d.xlsx', 'PK', {}),
        ];
    }""")
    assert out[0] == [["Depth, m", "Where"], '\ufeff\ndepth;Where\n1,5;"x;y"\n']
    assert out[1] == [["a", "b"], "a\t(not imported) b\n1\t2\n"]
    assert out[2] == [["x", "y"], '{"x":1}\n{"why":"é"}\n']
    assert out[3][0] is None and "workbook" in out[3][1]
