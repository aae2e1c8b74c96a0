"""The assistant page (#/assistant) in Chromium against a fake OpenAI-compatible model served on
loopback (:mod:`tests.api.ai_fakes`): the model configured through the form, the key shown back
only as its hint; a message whose answer calls a tool, shown with its arguments, its result and
the final answer; the usage figures following; a failing model shown in place."""
from __future__ import annotations

import json
from typing import Any

from tests import patient_http as http
from tests.api.ai_fakes import KEY, FakeModel, completion
from tests.web.conftest import sync_api
from tests.web.pages import look, open_app

expect = sync_api.expect


def test_configure_then_chat_with_a_tool_call(page: Any, demo_server: str) -> None:
    with FakeModel().running() as fake:
        assert isinstance(fake, FakeModel)
        open_app(page, demo_server, "/assistant")
        page.get_by_text("No model is set yet").wait_for()
        # a message sent before: the page says where to set a model, never the API call (issue 37 item 6)
        page.get_by_label("Ask about your data").fill("Anyone there?")
        page.get_by_role("button", name="Send").click()
        page.get_by_role("list", name="Conversation").get_by_text("Anyone there?").wait_for()
        expect(page.get_by_text("The model is answering…")).to_have_count(0)
        assert "PATCH /ai/config" not in page.locator("main").inner_text()
        expect(page.get_by_text("fill in the model settings below")).to_be_visible()
        form = page.get_by_role("form", name="Model settings")
        form.get_by_label("Base URL").fill("ftp://nowhere")
        form.get_by_role("button", name="Save model settings").click()
        form.locator(".field-error").wait_for()  # the API's 422, next to the field it names
        assert form.get_by_label("Base URL").get_attribute("aria-describedby").endswith("-error")
        form.get_by_label("Provider").select_option("openai")
        form.get_by_label("Model name").fill("fake-model")
        form.get_by_label("Base URL").fill(fake.base_url)
        form.get_by_label("API key").fill(KEY)
        form.get_by_role("button", name="Save model settings").click()
        page.get_by_text(f"Key: set, ending in {KEY[-4:]}.").wait_for()
        assert form.get_by_label("API key").input_value() == ""
        assert KEY not in page.content()
        config = http.get(f"{demo_server}/api/ai/config").json()
        assert config["configured"] and config["base_url"] == fake.base_url and config["model"] == "fake-model"

        fake.then(completion("Let me look.", [("count_records", {"collection": "penguins"}), ("list_collections", {})], usage=(50, 5)),
                  completion("There are 347 records in penguins.", usage=(80, 9)))
        page.get_by_label("Ask about your data").fill("How many records are there?")
        page.get_by_role("button", name="Send").click()
        page.get_by_text("There are 347 records in penguins.").wait_for()
        log = page.get_by_role("list", name="Conversation")
        assert "How many records are there?" in log.inner_text()
        calls = page.locator("[data-testid=tool-call]")
        assert calls.count() == 2 and "list_collections" in calls.nth(1).inner_text()
        calls.nth(1).locator("summary").click()  # a long result: its box scrolls and takes the focus
        call = calls.first
        assert "count_records" in call.inner_text()
        call.locator("summary").click()
        assert '"collection": "penguins"' in call.locator("[data-testid=tool-arguments]").inner_text()
        sent = fake.chats()[-1].body["messages"][-2]  # what the model saw: the first tool's answer
        shown = json.loads(call.locator("[data-testid=tool-result]").inner_text())
        assert sent["role"] == "tool" and shown == json.loads(sent["content"]) and "344" in json.dumps(shown)
        usage = page.locator("[data-testid=chat-usage]").inner_text()
        assert " ".join(usage.split()) == "This answer: 2 model requests, 130 tokens in, 14 out.", usage
        page.locator("[data-testid=usage-total]").filter(has_text="2 model requests · 130 tokens in · 14 tokens out").wait_for()
        page.get_by_role("table", name="Usage by model").get_by_role("cell", name="fake-model").wait_for()
        look(page, "assistant")

        fake.then((500, {"error": {"message": "the model fell over"}}))
        page.get_by_label("Ask about your data").fill("And islands?")
        page.get_by_role("button", name="Send").click()
        page.get_by_role("alert").filter(has_text="not answered").wait_for()
        assert "There are 347 records in penguins." in log.inner_text()
