"""The records table in Chromium on the served demo (penguins under islands): the filter builder
with an ancestor leaf and an own-field leaf, sorting by a header, paging, search (and the hint for
an inherited value), the column chooser, ticked rows deleted behind a confirm, a saved view applied
by URL, the CSV export link, and the keyboard. The rows shown are checked against the API's answer
for the same query."""
from __future__ import annotations

import csv
import io
import json
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from playwright.sync_api import expect

from tests import patient_http as http
from tests.waiting import until
from tests.web.conftest import PENGUINS
from tests.web.pages import api_records, look, open_app

DREAM_ADELIE = {"and": [{"field": "name", "op": "eq", "value": "Dream", "schema": "island"},
                        {"field": "species", "op": "eq", "value": "Adelie"}]}


def loaded(page: Any) -> None:
    """Wait until the table shows the records of the current location hash (not an older one's)."""
    page.wait_for_function("() => { const b = document.querySelector('.records-body');"
                           " return b && b.dataset.loadedFor === location.hash && !document.querySelector('main .loading'); }")


def shown_ids(page: Any) -> list[str]:
    return [str(i) for i in page.locator("table.records-grid tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)")]


def hash_query(page: Any) -> dict[str, str]:
    fragment = urlsplit(page.url).fragment
    return {k: v[0] for k, v in parse_qs(fragment.split("?", 1)[1] if "?" in fragment else "").items()}


def add_condition(page: Any, field_value: str, op: str, value: str, wait: bool = True) -> None:
    page.get_by_role("button", name="Add condition", exact=True).first.click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Field").select_option(value=field_value)
    dialog.get_by_label("Operator").select_option(value=op)
    dialog.get_by_label("Value").fill(value)
    dialog.get_by_role("button", name="Add condition").click()
    if wait:
        loaded(page)


def test_filter_with_an_ancestor_leaf_and_sort_match_the_api(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    assert page.get_by_role("link", name="penguin", exact=True).get_attribute("aria-current") == "page"
    add_condition(page, "island::name", "eq", "Dream")
    add_condition(page, "::species", "eq", "Adelie")
    chips = page.locator("[data-testid=filter-chip]").all_inner_texts()
    assert any("island › Name = Dream" in c for c in chips) and any("Species = Adelie" in c for c in chips)
    assert json.loads(hash_query(page)["filter"]) == DREAM_ADELIE
    header = page.locator("th[data-column=body_mass_g]")
    header.get_by_role("button").click()
    loaded(page)
    assert header.get_attribute("aria-sort") == "ascending"
    header.get_by_role("button").click()
    loaded(page)
    assert header.get_attribute("aria-sort") == "descending"
    assert hash_query(page)["sort"] == "body_mass_g:desc"
    expected = api_records(demo_server, schema="penguin", filter=DREAM_ADELIE, sort="body_mass_g:desc", limit=50)
    assert expected["total"] == 56
    assert shown_ids(page) == [r["id"] for r in expected["items"]]
    assert page.get_by_test_id("total").inner_text() == "56"
    # an ancestor field sorts too, and a chip can be edited and removed
    page.goto(f"{demo_server}/#/c/penguins?schema=penguin&sort=island.name:desc&filter="
              + json.dumps({"field": "species", "op": "eq", "value": "Gentoo"}))
    loaded(page)
    expected = api_records(demo_server, schema="penguin", sort="island.name:desc",
                           filter={"field": "species", "op": "eq", "value": "Gentoo"})
    assert shown_ids(page) == [r["id"] for r in expected["items"]]
    page.get_by_role("button", name="Edit condition Species = Gentoo").click()
    page.get_by_role("dialog").get_by_label("Value").fill("Chinstrap")
    page.get_by_role("dialog").get_by_role("button", name="Apply").click()
    loaded(page)
    assert page.get_by_test_id("total").inner_text() == "68"
    page.get_by_role("button", name="Remove condition Species = Chinstrap").click()
    loaded(page)
    assert page.get_by_test_id("total").inner_text() == f"{PENGUINS}"
    look(page, "records")


def test_a_refused_filter_is_shown_in_place(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    add_condition(page, "::year", "gt", "soon", wait=False)
    expect(page.locator("main .error-box[role=alert]")).to_contain_text("'soon' is not a number")
    assert page.locator(".filter-chip.refused").count() == 1
    page.get_by_role("button", name="Remove condition Study year > soon").click()
    expect(page.locator("main .error-box")).to_have_count(0)
    expect(page.get_by_test_id("total")).to_have_text(f"{PENGUINS}")


def test_paging_jumps_to_the_last_and_any_page(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=natural_name")
    assert page.get_by_test_id("pages").inner_text() == "7"
    page.get_by_role("button", name="Last").click()
    loaded(page)
    assert hash_query(page)["page"] == "7"
    expected = api_records(demo_server, schema="penguin", sort="natural_name", limit=50, offset=300)
    assert shown_ids(page) == [r["id"] for r in expected["items"]] and len(expected["items"]) == PENGUINS - 300
    assert page.get_by_role("button", name="Next").is_disabled()
    page.get_by_label("Page", exact=True).fill("3")
    page.get_by_role("button", name="Go").click()
    loaded(page)
    assert page.get_by_test_id("range").inner_text().startswith("101–150 of")
    page.go_back()
    loaded(page)
    assert hash_query(page)["page"] == "7"


def test_a_total_the_server_stopped_counting_reads_as_a_lower_bound(page: Any, demo_server: str) -> None:
    """A page whose count ran out of the server's budget (``total_exact: false``, which the demo's
    344 penguins never need: the answer is altered in flight) says "more than", offers the pages
    known so far plus the next, and "Count all" asks for the exact total (``limit=0``)."""
    counted = []

    def bounded(route: Any) -> None:
        if "limit=0" in route.request.url:
            counted.append(route.request.url)
            route.continue_()
            return
        body = route.fetch().json()
        route.fulfill(json={**body, "total": 100, "total_exact": False})

    page.route("**/api/collections/penguins/records?*", bounded)
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=natural_name")
    loaded(page)
    assert page.get_by_test_id("range").inner_text() == "1–50 of more than 100 records"
    assert page.get_by_test_id("pages").inner_text() == "at least 3"
    assert page.get_by_role("button", name="Last").is_disabled()
    assert "(100+)" in page.get_by_role("link", name="Export CSV").inner_text()
    look(page, "records-total-bounded")
    page.get_by_role("button", name="Count all").click()
    expect(page.get_by_test_id("range")).to_have_text(f"1–50 of {PENGUINS} records")
    assert page.get_by_test_id("pages").inner_text() == "7"
    assert len(counted) == 1 and "schema=penguin" in counted[0]
    assert page.get_by_role("button", name="Count all").count() == 0
    page.unroute("**/api/collections/penguins/records?*")


def test_search_and_an_inherited_value_explained(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    search = page.locator("input[type=search][data-search]")
    search.fill("Chinstrap")
    search.press("Enter")
    loaded(page)
    assert hash_query(page)["q"] == "Chinstrap"
    assert page.get_by_test_id("total").inner_text() == str(api_records(demo_server, schema="penguin", search="Chinstrap", limit=0)["total"])
    search.fill("Torgersen")
    search.press("Enter")
    loaded(page)
    hint = page.get_by_test_id("inherited-search")
    expect(hint).to_contain_text("own values")
    expect(hint).to_contain_text("matches 1 island record")
    hint.get_by_role("button").click()
    loaded(page)
    assert "q" not in hash_query(page)
    assert page.get_by_test_id("total").inner_text() == "52"


def test_column_chooser_adds_an_inherited_column(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=natural_name")
    page.get_by_text("Columns (", exact=False).click()
    page.locator("fieldset", has_text="Inherited from Island").get_by_label("Name").check()
    loaded(page)
    assert hash_query(page)["columns"].endswith(",name")
    cells = page.locator("table.records-grid tbody tr td:last-child").all_inner_texts()
    expected = api_records(demo_server, schema="penguin", sort="natural_name", columns="name")
    assert cells == [r["derived"]["name"] for r in expected["items"]]
    assert page.locator("th[data-column=name]").inner_text().startswith("Name (Island)")


def test_tick_two_rows_and_delete_them_behind_a_confirm(page: Any, demo_server: str) -> None:
    ids = []
    for name in ("Bulkdel-A", "Bulkdel-B", "Bulkdel-C"):
        created = http.post(f"{demo_server}/api/collections/penguins/records", headers={"origin": demo_server},
                             json={"schema_name": "island", "data": {"name": name}})
        created.raise_for_status()
        ids.append(created.json()["id"])
    open_app(page, demo_server, "/c/penguins?schema=island&q=Bulkdel&sort=natural_name")
    page.get_by_label("Select Bulkdel-A").check()
    page.get_by_label("Select Bulkdel-B").check()
    page.get_by_role("button", name="Delete selected…").click()
    dialog = page.get_by_role("dialog")
    assert "2 ticked island records" in dialog.inner_text()
    dialog.get_by_role("button", name="Delete 2 records").click()
    expect(page.locator("table.records-grid tbody tr")).to_have_count(1)
    assert shown_ids(page) == [ids[2]]
    left = api_records(demo_server, schema="island", search="Bulkdel")
    assert [r["id"] for r in left["items"]] == [ids[2]]


def test_save_a_view_and_apply_it_by_url(page: Any, demo_server: str) -> None:
    query = "/c/penguins?schema=penguin&sort=flipper_length_mm:desc&filter=" + json.dumps(DREAM_ADELIE)
    open_app(page, demo_server, query)
    page.get_by_role("button", name="Save as view…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("View name").fill("dream_adelie")
    dialog.get_by_role("button", name="Save view").click()
    saved = until(lambda: next((v for v in http.get(f"{demo_server}/api/schemas/penguin/views").json()
                                     if v["name"] == "dream_adelie"), None), "the view to be saved")
    assert saved["filter"] == DREAM_ADELIE and saved["sort"] == ["flipper_length_mm:desc"]
    page.goto(f"{demo_server}/#/c/penguins?schema=penguin&view=dream_adelie")
    page.reload()
    loaded(page)
    assert page.locator("[data-testid=filter-chip]").count() == 2
    assert page.get_by_label("Saved view").input_value() == "dream_adelie"
    expected = api_records(demo_server, schema="penguin", view="dream_adelie")
    assert shown_ids(page) == [r["id"] for r in expected["items"]]
    page.get_by_role("button", name="Delete view dream_adelie").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete view").click()
    expect(page.get_by_label("Saved view")).to_have_value("")
    until(lambda: "dream_adelie" not in [v["name"] for v in http.get(f"{demo_server}/api/schemas/penguin/views").json()],
               "the view to be deleted")


def test_csv_export_holds_the_rows_shown(page: Any, demo_server: str) -> None:
    where = {"and": [{"field": "name", "op": "eq", "value": "Biscoe", "schema": "island"},
                     {"field": "sex", "op": "eq", "value": "female"}]}
    open_app(page, demo_server, "/c/penguins?schema=penguin&limit=100&sort=bill_length_mm:desc"
             "&columns=natural_name,name,sex,bill_length_mm&filter=" + json.dumps(where))
    link = page.get_by_role("link", name="Export CSV")
    target = unquote(link.get_attribute("href") or "")
    assert target.startswith("/api/collections/penguins/export.csv?")
    response = http.get(demo_server + (link.get_attribute("href") or ""))
    response.raise_for_status()
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert rows and [r["id"] for r in rows] == shown_ids(page)
    shown_columns = page.locator("table.records-grid thead th[data-column]").evaluate_all(
        "ths => ths.map(th => th.dataset.column)")
    assert list(rows[0]) == ["id", *shown_columns]  # the columns shown, in order, the inherited island name too
    assert {r["name"] for r in rows} == {"Biscoe"}
    column = page.locator("table.records-grid thead th").evaluate_all(
        "ths => ths.findIndex(th => th.dataset.column === 'bill_length_mm')") + 1
    shown_bills = page.locator(f"table.records-grid tbody td:nth-child({column})").all_inner_texts()
    assert [str(float(r["bill_length_mm"])) if r["bill_length_mm"] else "" for r in rows] == \
        [str(float(b)) if b else "" for b in shown_bills]


def test_arrow_keys_move_through_rows_and_enter_opens(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=natural_name")
    ids = shown_ids(page)
    page.locator("table.records-grid tbody tr").first.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    assert page.evaluate("() => document.activeElement.dataset.id") == ids[1]
    page.keyboard.press("Enter")
    page.wait_for_url(f"**#/r/{ids[1]}")


def test_child_counts_link_to_the_children_and_a_descendant_leaf(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=island&sort=natural_name")
    dream = api_records(demo_server, schema="island", search="Dream")["items"][0]
    link = page.get_by_role("link", name="124 penguin children of Dream")
    link.click()
    loaded(page)
    assert hash_query(page) == {"schema": "penguin", "parent": dream["id"]}
    expect(page.locator(".parent-chip")).to_contain_text("island Dream")
    assert page.get_by_test_id("total").inner_text() == "124"
    page.get_by_role("button", name="Remove the parent condition").click()
    loaded(page)
    assert page.get_by_test_id("total").inner_text() == f"{PENGUINS}"
    # islands having any Gentoo penguin: a descendant leaf
    page.get_by_role("link", name="island", exact=True).click()
    loaded(page)
    add_condition(page, "penguin::species", "eq", "Gentoo")
    assert page.locator("table.records-grid tbody td.name").all_inner_texts() == ["Biscoe"]


def test_run_a_workflow_on_ticked_rows(page: Any, demo_server: str) -> None:
    flow = ("name: penguin-hand\nrecord_schema: penguin\ntriggers:\n  manual: {}\nsteps:\n  - id: mark\n"
            "    plugin: benchbook.set-fields\n    config:\n      fields:\n        tag: \"by-hand\"\n")
    http.put(f"{demo_server}/api/workflows/penguin-hand", json={"content": flow},
              headers={"origin": demo_server}).raise_for_status()
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=natural_name:desc&limit=25")
    ids = shown_ids(page)[:2]
    rows = page.locator("table.records-grid tbody tr")
    rows.nth(0).get_by_role("checkbox").check()
    rows.nth(1).get_by_role("checkbox").check()
    page.get_by_role("button", name="Run a workflow on selected…").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Workflow").select_option("penguin-hand")
    assert "penguin-tag" in dialog.inner_text()  # listed as not runnable by hand
    dialog.get_by_role("button", name="Run", exact=True).click()
    expect(dialog.locator(".ok-box")).to_contain_text("Started 2 runs")
    until(lambda: all(http.get(f"{demo_server}/api/records/{rid}").json()["data"].get("tag") == "by-hand"
                           for rid in ids), "both runs to write their tag")


def test_new_record_form_with_a_parent_picker(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin&filter=" + json.dumps({"field": "bill_length_mm", "op": "eq", "value": 99.5}))
    expect(page.locator("table.records-grid tbody tr")).to_have_count(0)
    page.get_by_role("button", name="New record").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Species *").select_option("Gentoo")
    dialog.get_by_label("Study year").fill("2031")
    dialog.get_by_label("Parent island").select_option(label="Dream")
    dialog.get_by_role("button", name="Create record").click()
    expect(dialog.locator(".field-error")).to_contain_text("2009")
    dialog.get_by_label("Study year").fill("2009")
    dialog.get_by_label("Bill length").fill("99.5")
    dialog.get_by_role("button", name="Create record").click()
    expect(page.locator("table.records-grid tbody tr")).to_have_count(1)
    made = http.get(f"{demo_server}/api/records/{shown_ids(page)[0]}").json()
    assert (made["data"]["species"], made["data"]["year"], made["ancestors"][0]["natural_name"]) == ("Gentoo", 2009, "Dream")


def test_nested_any_of_group_and_the_in_operator(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    add_condition(page, "::sex", "eq", "female")
    page.get_by_role("button", name="Add an any-of group").click()
    dialog = page.get_by_role("dialog", name="First condition of the new any-of group")
    dialog.get_by_label("Field").select_option(value="::species")
    dialog.get_by_label("Value").fill("Gentoo")
    dialog.get_by_role("button", name="Add condition").click()
    loaded(page)
    group = page.get_by_role("group", name="group: any of")
    group.get_by_role("button", name="Add to group").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Field").select_option(value="::body_mass_g")
    dialog.get_by_label("Operator").select_option(value="in")
    dialog.get_by_label("Value").fill("3000, 3050")
    dialog.get_by_role("button", name="Add condition").click()
    loaded(page)
    tree = {"and": [{"field": "sex", "op": "eq", "value": "female"},
                    {"or": [{"field": "species", "op": "eq", "value": "Gentoo"},
                            {"field": "body_mass_g", "op": "in", "value": ["3000", "3050"]}]}]}
    assert json.loads(hash_query(page)["filter"]) == tree
    expected = api_records(demo_server, schema="penguin", filter=tree, limit=0)["total"]
    assert page.get_by_test_id("total").inner_text() == str(expected)
    assert 58 <= expected < 80


def test_a_view_named_in_words_gets_its_name_from_the_label(page: Any, demo_server: str) -> None:
    """Issue 37 item 6: "Big Gentoo bills" was refused with a regular expression."""
    open_app(page, demo_server, "/c/penguins?schema=penguin&sort=bill_length_mm:desc")
    page.get_by_role("button", name="Save as view…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_label("Label")).to_be_focused()
    dialog.get_by_label("Label").fill("Big Gentoo bills")
    expect(dialog.get_by_label("View name")).to_have_value("big_gentoo_bills")
    dialog.get_by_label("View name").fill("Big bills!")
    expect(dialog.locator(".field-error")).to_have_text(
        "A view's name uses lower-case letters, digits and _, and starts with a letter.")
    dialog.get_by_label("View name").fill("big_bills")
    dialog.get_by_label("Label").fill("Big Gentoo bills")  # an edited name no longer follows the label
    expect(dialog.get_by_label("View name")).to_have_value("big_bills")
    dialog.get_by_role("button", name="Save view").click()
    saved = until(lambda: next((v for v in http.get(f"{demo_server}/api/schemas/penguin/views").json()
                                if v["name"] == "big_bills"), None), "the view to be saved")
    assert saved["label"] == "Big Gentoo bills"
    http.delete(f"{demo_server}/api/schemas/penguin/views/big_bills", headers={"origin": demo_server})
