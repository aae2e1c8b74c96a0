"""The records table's chart view (#/c/penguins?schema=penguin&chart=…) in Chromium on the demo:
a histogram whose bins add up to the listed records with a value, a table filter carried into the
counts per choice (equal to the API's count), a scatter whose legend names the choice labels, the
numbers as a table (the text alternative), at 1400 and 400 px (look)."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from tests.web.pages import api_records, look, open_app

GENTOO = {"field": "species", "op": "eq", "value": "Gentoo"}


def numbers(page: Any, caption: str) -> list[list[str]]:
    """The chart's text alternative (its numbers table) as rows of cell texts."""
    page.locator(f"table[aria-label='{caption}']").wait_for(state="attached")
    details = page.locator("details.chart-data").filter(has=page.locator(f"table[aria-label='{caption}']"))
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    table = page.get_by_role("table", name=caption)
    return [[c.strip() for c in row.locator("th, td").all_inner_texts()] for row in table.locator("tbody tr").all()]


def test_histogram_bins_add_up_to_the_records_with_a_value(page: Any, demo_server: str) -> None:
    records = api_records(demo_server, schema="penguin", limit=1000)["items"]
    with_mass = sum(1 for r in records if isinstance(r["data"].get("body_mass_g"), (int, float)))
    assert 0 < with_mass <= 344
    open_app(page, demo_server, "/c/penguins?schema=penguin")
    page.get_by_role("navigation", name="Show as").get_by_role("link", name="Chart").click()
    page.wait_for_url("**chart=histogram**")
    page.get_by_label("Field", exact=True).select_option(label="Body mass (g)")
    page.wait_for_url("**cx=body_mass_g**")
    page.get_by_role("heading", name="Body mass (g): records per bin").wait_for()
    page.locator(".records-chart canvas").first.wait_for()
    assert page.get_by_test_id("chart-count").inner_text() == "344 records."
    rows = numbers(page, "Body mass (g): records per bin")
    assert len(rows) >= 2
    assert sum(int(r[1].replace(",", "")) for r in rows) == with_mass
    chart = page.get_by_role("img", name="Histogram of Body mass (g)")
    assert f"{with_mass} records with a value" in (chart.get_attribute("aria-label") or "")
    look(page, "records-chart-histogram")


def test_a_table_filter_carries_to_the_counts_per_choice(page: Any, demo_server: str) -> None:
    gentoo = api_records(demo_server, schema="penguin", filter=GENTOO, limit=0)["total"]
    assert gentoo > 0
    open_app(page, demo_server, f"/c/penguins?schema=penguin&filter={quote(json.dumps(GENTOO))}")
    page.get_by_role("navigation", name="Show as").get_by_role("link", name="Chart").click()
    page.get_by_label("Chart", exact=True).select_option("counts")
    page.wait_for_url("**chart=counts**")
    assert "Species = Gentoo" in page.get_by_test_id("chart-query").inner_text()
    page.get_by_role("heading", name="Records per Species").wait_for()
    assert numbers(page, "Records per Species") == [["Gentoo", str(gentoo)]]
    assert page.get_by_role("img", name=f"Records per Species: Gentoo {gentoo}").is_visible()
    look(page, "records-chart-counts")
    # back to the table: the filter is still there
    page.get_by_role("navigation", name="Show as").get_by_role("link", name="Table").click()
    page.locator("table.records-grid").wait_for()
    assert "chart=" not in page.url and "filter=" in page.url


def test_scatter_coloured_by_a_choice_names_the_labels(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/c/penguins?schema=penguin&chart=scatter&cx=bill_length_mm&cy=flipper_length_mm&cby=species")
    caption = "Flipper length (mm) against Bill length (mm) by Species"
    page.get_by_role("heading", name=caption).wait_for()
    page.locator(".records-chart canvas").first.wait_for()
    legend = page.get_by_role("list", name="Colours: Species")
    assert [t.split(" (")[0].strip() for t in legend.get_by_role("listitem").all_inner_texts()] == ["Adelie", "Chinstrap", "Gentoo"]
    records = api_records(demo_server, schema="penguin", limit=1000)["items"]
    both = [r["data"] for r in records if isinstance(r["data"].get("bill_length_mm"), (int, float))
            and isinstance(r["data"].get("flipper_length_mm"), (int, float))]
    rows = numbers(page, caption)
    assert {r[0]: int(r[1]) for r in rows} == {s: sum(1 for d in both if d["species"] == s) for s in ("Adelie", "Chinstrap", "Gentoo")}
    look(page, "records-chart-scatter")


def test_counts_per_a_field_the_records_inherit(page: Any, demo_server: str) -> None:
    """A penguin inherits its island's name: the chart counts penguins per island, as the API
    counts the island's children, and colours a scatter by it."""
    islands = api_records(demo_server, schema="island", limit=10)["items"]
    per_island = {i["data"]["name"]: api_records(demo_server, schema="penguin", parent_record_id=i["id"], limit=0)["total"]
                  for i in islands}
    assert len(per_island) == 3 and sum(per_island.values()) == 344
    open_app(page, demo_server, "/c/penguins?schema=penguin&chart=counts")
    page.get_by_label("Field", exact=True).select_option(label="Name (Island)")
    page.wait_for_url("**cby=name**")
    caption = "Records per Name (Island)"
    page.get_by_role("heading", name=caption).wait_for()
    assert {r[0]: int(r[1]) for r in numbers(page, caption)} == per_island
    page.get_by_label("Chart", exact=True).select_option("scatter")
    page.get_by_label("Colour by", exact=True).select_option(label="Name (Island)")
    legend = page.get_by_role("list", name="Colours: Name (Island)")
    legend.wait_for()
    assert [t.split(" (")[0].strip() for t in legend.get_by_role("listitem").all_inner_texts()] == sorted(per_island)
    look(page, "records-chart-inherited")
