"""The analytics page (#/analytics) in Chromium on the demo project: growth by month drawn on a
canvas with its numbers (the text alternative) equal to the API's; the bucket control changing
the address and the data; every chart with its heading and its own table; a chart whose request
fails shows its error while the others draw; the charts fit a 400 px window."""
from __future__ import annotations

from typing import Any

from tests import patient_http as http
from tests.web.pages import look, open_app

HEADINGS = ["Records now, by collection and schema", "Records created per month", "History activity per month",
            "Runs per month by status", "Step durations", "Runs by trigger", "Failed steps per month by plugin",
            "AI tokens per month"]


def growth_rows(page: Any, bucket: str) -> dict[str, dict[str, int]]:
    """The growth chart's text alternative as {period: {series: count}}."""
    growth = page.locator("[data-testid=growth]")
    growth.locator("canvas").first.wait_for()
    growth.locator(f"table[aria-label='records created per {bucket}']").wait_for(state="attached")
    details = growth.locator("details")
    if details.get_attribute("open") is None:
        details.locator("summary").click()
    table = growth.get_by_role("table", name=f"records created per {bucket}")
    heads = table.locator("thead th").all_inner_texts()[1:]
    rows: dict[str, dict[str, int]] = {}
    for row in table.locator("tbody tr").all():
        cells = [int(c.replace(",", "")) for c in row.locator("td").all_inner_texts()]
        rows[row.locator("th").inner_text()] = dict(zip(heads, cells))
    return rows


def api_growth(base: str, bucket: str) -> dict[str, dict[str, int]]:
    items = http.get(f"{base}/api/analytics/records/growth", params={"bucket": bucket}).json()["items"]
    rows: dict[str, dict[str, int]] = {}
    for i in items:
        rows.setdefault(i["bucket"], {})
        rows[i["bucket"]][f"{i['dataset']} · {i['schema_name']}"] = i["count"]
    for series in {s for r in rows.values() for s in r}:  # the table shows 0 where a series has none
        for r in rows.values():
            r.setdefault(series, 0)
    return rows


def test_growth_by_month_then_by_day(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/analytics?bucket=month")
    for name in HEADINGS:
        page.get_by_role("heading", name=name, level=2).wait_for()
    by_month = api_growth(demo_server, "month")
    assert sum(sum(r.values()) for r in by_month.values()) == 3 + 344
    assert all(month.endswith("-01") for month in by_month)
    assert growth_rows(page, "month") == by_month
    assert page.get_by_label("Bucket").input_value() == "month"
    look(page, "analytics")

    page.get_by_label("Bucket").select_option("day")
    page.wait_for_url("**/#/analytics?bucket=day")
    page.get_by_role("heading", name="Records created per day").wait_for()
    assert growth_rows(page, "day") == api_growth(demo_server, "day")


def test_period_in_the_address_and_a_failing_chart(page: Any, demo_server: str) -> None:
    page.route("**/api/analytics/jobs/duration*", lambda route: route.fulfill(
        status=500, content_type="application/json", body='{"detail": "durations are broken today"}'))
    open_app(page, demo_server, "/analytics?bucket=week&start=2000-01-01&end=2000-01-31")
    assert page.get_by_label("First day").input_value() == "2000-01-01"
    assert page.get_by_label("Last day").input_value() == "2000-01-31"
    failing = page.locator("#c-duration").locator("xpath=..")
    failing.get_by_role("alert").filter(has_text="durations are broken today").wait_for()
    # the others drew: nothing was created in January 2000
    assert "Nothing in this period." in page.locator("#c-growth").locator("xpath=..").inner_text()
    assert page.locator("[role=alert]").count() == 1

    page.get_by_role("button", name="All time").click()
    page.wait_for_url("**/#/analytics?bucket=week")
    page.locator("[data-testid=growth] canvas").first.wait_for()
    assert growth_rows(page, "week") == api_growth(demo_server, "week")

    page.set_viewport_size({"width": 400, "height": 900})
    page.wait_for_function("() => { const c = document.querySelector('[data-testid=growth] canvas');"
                           " return c && c.getBoundingClientRect().right <= 400; }")
