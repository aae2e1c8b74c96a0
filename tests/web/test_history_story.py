"""Issue 37 item 2 in Chromium: the demo's history reads as a story. The 344 runs of the
penguin-tag workflow, one history batch each, fold into one line however many there are
("penguin-tag ran 344 times: 344 records updated"), which opens to its runs 25 at a time; the
page reads on past its first 25 events to end the fold, and Older / Newer page by lines; a batch
says what it did in words ("347 records created"); "Workflow runs: hidden" leaves them out, and
the page's count is the API's."""
from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import expect

from tests import patient_http as http
from tests.web.pages import look, open_app


def newest_runs(base: str) -> int:
    """How many penguin-tag runs come first in the history, newest first, as the API lists them."""
    events = http.get(f"{base}/api/audit/events", params={"limit": 1000}).json()["items"]
    n = 0
    while n < len(events) and events[n]["kind"] == "batch" and events[n]["batch"]["kind"] == "workflow" \
            and events[n]["batch"]["label"] == "penguin-tag":
        n += 1
    return n


def test_runs_of_a_workflow_fold_into_one_line_and_can_be_hidden(page: Any, demo_server: str) -> None:
    runs = newest_runs(demo_server)
    assert runs > 50, "the demo's newest events are its 344 workflow runs"

    open_app(page, demo_server, "/history")
    fold = page.get_by_test_id("runs-fold").first
    expect(fold.locator("> summary")).to_contain_text(f"penguin-tag ran {runs} times: {runs} records updated")
    fold.locator("> summary").click()
    expect(fold.get_by_test_id("batch-event")).to_have_count(25)
    expect(fold.get_by_test_id("batch-event").first.locator("summary")).to_contain_text("workflow run")
    fold.get_by_role("button", name=f"Show 25 more runs ({runs - 25} not shown)").click()
    expect(fold.get_by_test_id("batch-event")).to_have_count(50)
    look(page, "history-story")
    total = http.get(f"{demo_server}/api/audit/events", params={"limit": 1}).json()["total"]
    pager = page.get_by_role("navigation", name="pages of the history")
    first_page = min(total, runs + 24)  # the fold is one line, then 24 more lines of one event each at most
    assert re.fullmatch(r"Events 1–[\d,]+ of [\d,]+", pager.locator("span").inner_text())
    end = int(re.search(r"–([\d,]+)", pager.locator("span").inner_text()).group(1).replace(",", ""))
    assert runs < end <= first_page

    page.get_by_label("Workflow runs").select_option("hidden")
    page.wait_for_url("**runs=hidden**")
    expect(page.get_by_test_id("runs-fold")).to_have_count(0)
    tree = {"and": [{"field": "batch_kind", "op": "ne", "value": "workflow"}]}
    total = http.get(f"{demo_server}/api/audit/events", params={"filter": json.dumps(tree), "limit": 1}).json()["total"]
    expect(page.locator(".page-head .muted")).to_have_text(f"{total:,} {'event' if total == 1 else 'events'}")
    imported = page.get_by_test_id("batch-event").filter(has_text="palmerpenguins")
    expect(imported.locator("summary")).to_contain_text("347 records created, 2 schemas created, 1 collection created")


def test_older_and_newer_page_by_25_lines(page: Any, empty_server: str) -> None:
    base, origin = empty_server, {"origin": empty_server}
    http.post(f"{base}/api/schemas", headers=origin, json={"name": "vial", "fields": [{"name": "code", "type": "string"}]}).raise_for_status()
    http.post(f"{base}/api/collections", headers=origin, json={"name": "vials", "schemas": ["vial"]}).raise_for_status()
    for i in range(30):
        http.post(f"{base}/api/collections/vials/records", headers=origin,
                   json={"schema_name": "vial", "data": {"code": f"V-{i}"}}).raise_for_status()
    total = http.get(f"{base}/api/audit/events", params={"limit": 1}).json()["total"]
    assert total >= 32
    open_app(page, base, "/history")
    pager = page.get_by_role("navigation", name="pages of the history")
    expect(pager.locator("span")).to_have_text(f"Events 1–25 of {total}")
    expect(pager.get_by_role("button", name="Newer")).to_be_disabled()
    pager.get_by_role("button", name="Older").click()
    expect(pager.locator("span")).to_have_text(f"Events 26–{total} of {total}")
    expect(page.get_by_role("list", name="events").locator("> li")).to_have_count(total - 25)
    expect(pager.get_by_role("button", name="Older")).to_be_disabled()
    pager.get_by_role("button", name="Newer").click()
    expect(pager.locator("span")).to_have_text(f"Events 1–25 of {total}")
