"""Analytics and the assistant in Chromium: growth by month drawn and its numbers equal to the
API's, the bucket control changing the address and the data; the model configured through the
form (the key shown back only as its hint), a chat whose model calls a tool, shown with its
result and the answer."""
from __future__ import annotations

from typing import Any

import httpx

from tests.api.ai_fakes import KEY, FakeModel, completion
from tests.web.pages import look, open_app


def test_growth_by_month_is_drawn_with_the_apis_numbers(page: Any, demo_server: str) -> None:
    open_app(page, demo_server, "/analytics?bucket=month")
    growth = page.locator("[data-testid=growth]")
    growth.locator("canvas").first.wait_for()
    api = httpx.get(f"{demo_server}/api/analytics/records/growth", params={"bucket": "month"}).json()["items"]
    growth.locator("details summary").click()
    table = growth.get_by_role("table", name="records created per month")
    months = table.locator("tbody th").all_inner_texts()
    assert months == sorted({i["bucket"] for i in api})
    headers = table.locator("thead th").all_inner_texts()[1:]
    cells = [int(c.replace(",", "")) for c in table.locator("tbody tr").first.locator("td").all_inner_texts()]
    expected = {f"{i['dataset']} · {i['schema_name']}": i["count"] for i in api if i["bucket"] == months[0]}
    assert dict(zip(headers, cells)) == expected
    look(page, "analytics")
    page.get_by_label("Bucket").select_option("day")
    page.wait_for_url("**bucket=day*")
    page.wait_for_function("() => document.querySelector('#c-growth').textContent.includes('per day')")


def test_chat_with_a_model_that_calls_a_tool(page: Any, demo_server: str) -> None:
    with FakeModel().running() as fake:
        assert isinstance(fake, FakeModel)
        open_app(page, demo_server, "/assistant")
        form = page.get_by_role("form", name="Model settings")
        form.get_by_label("Provider").select_option("openai")
        form.get_by_label("Model name").fill("fake-model")
        form.get_by_label("Base URL").fill(fake.base_url)
        form.get_by_label("API key").fill(KEY)
        form.get_by_role("button", name="Save model settings").click()
        hint = page.locator("[data-testid=key-hint]")
        page.wait_for_function("() => document.querySelector('[data-testid=key-hint]').textContent.startsWith('Key: ')")
        assert KEY not in page.content() and KEY[-4:] in hint.inner_text()
        fake.then(completion("Let me look.", [("list_collections", {})], usage=(50, 5)),
                  completion("You have one collection: penguins.", usage=(80, 9)))
        page.get_by_label("Ask about your data").fill("Which collections do I have?")
        page.get_by_role("button", name="Send").click()
        page.get_by_text("You have one collection: penguins.").wait_for()
        call = page.locator("[data-testid=tool-call]")
        assert call.count() == 1 and "list_collections" in call.inner_text()
        call.locator("summary").click()
        assert "penguins" in call.inner_text()
        look(page, "assistant")
