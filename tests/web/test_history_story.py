"""Issue 37 item 2 in Chromium: the demo's history reads as a story. The 344 runs of the
penguin-tag workflow, one history batch each, fold into one line per page ("penguin-tag ran 25
times: 25 records updated") that opens to the runs; a batch says what it did in words ("347
records created"); "Workflow runs: hidden" leaves them out, and the page's count is the API's."""
from __future__ import annotations

import json
import re
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.web.pages import look, open_app


def test_runs_of_a_workflow_fold_into_one_line_and_can_be_hidden(page: Any, demo_server: str) -> None:
    first = httpx.get(f"{demo_server}/api/audit/events", params={"limit": 25}).json()["items"]
    runs = [e for e in first if e["kind"] == "batch" and e["batch"]["kind"] == "workflow"]
    assert len(runs) >= 2, "the demo's newest events are workflow runs"

    open_app(page, demo_server, "/history")
    fold = page.get_by_test_id("runs-fold").first
    expect(fold.locator("> summary")).to_contain_text(re.compile(r"penguin-tag ran \d+ times: \d+ records updated"))
    times = int(re.search(r"ran (\d+) times", fold.locator("> summary").inner_text()).group(1))
    assert times >= 2
    fold.locator("> summary").click()
    expect(fold.get_by_test_id("batch-event")).to_have_count(times)
    expect(fold.get_by_test_id("batch-event").first.locator("summary")).to_contain_text("workflow run")
    look(page, "history-story")

    page.get_by_label("Workflow runs").select_option("hidden")
    page.wait_for_url("**runs=hidden**")
    expect(page.get_by_test_id("runs-fold")).to_have_count(0)
    tree = {"and": [{"field": "batch_kind", "op": "ne", "value": "workflow"}]}
    total = httpx.get(f"{demo_server}/api/audit/events", params={"filter": json.dumps(tree), "limit": 1}).json()["total"]
    expect(page.locator(".page-head .muted")).to_have_text(f"{total:,} events")
    imported = page.get_by_test_id("batch-event").filter(has_text="palmerpenguins")
    expect(imported.locator("summary")).to_contain_text("347 records created, 2 schemas created, 1 collection created")
