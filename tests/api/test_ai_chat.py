"""``POST /ai/chat`` against a fake OpenAI-compatible server on loopback: tool calls run with
the API's rules and fed back, errors and unknown tools fed back as results, the round limit,
a provider that is down or refuses the key, and every request counted in ``GET /ai/usage``."""
from __future__ import annotations

import json
from typing import Any

from benchbook.domain.ai import chat as chat_loop
from benchbook.domain.ai import tools
from tests.api.ai_fakes import (
    KEY,
    FakeModel,
    ai,
    closed_port,
    completion,
    fake_model,
    model_server,
    router_server,
)
from tests.api.helpers import make_collection, make_record, make_schema

__all__ = ["ai", "fake_model", "model_server", "router_server"]  # fixtures

QUESTION = [{"role": "user", "content": "Which sites are in the lab?"}]


def configure(ai: Any, fake: FakeModel, **more: Any) -> None:
    ai.ok("PATCH", "/ai/config", json={"provider": "openai", "model": "fake-model", "api_key": KEY,
                                       "base_url": fake.base_url, **more})


def lab(ai: Any) -> dict[str, Any]:
    make_schema(ai, "site", [{"name": "name", "type": "string"}, {"name": "depth", "type": "integer"}])
    make_collection(ai, "lab", ["site"])
    make_record(ai, "lab", "site", {"name": "north", "depth": 3})
    return make_record(ai, "lab", "site", {"name": "south", "depth": 12})


def tool_messages(request_body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request_body["messages"] if m["role"] == "tool"]


def test_a_chat_calls_two_tools_and_answers(ai, fake_model: FakeModel):
    south = lab(ai)
    configure(ai, fake_model)
    deep = {"and": [{"field": "depth", "op": "gt", "value": 5}]}
    fake_model.then(
        completion("Let me look.", [("list_collections", {}),
                                    ("find_records", {"collection": "lab", "schema": "site", "filter": deep,
                                                      "sort": ["depth:desc"]})], usage=(100, 20)),
        completion("One site is deeper than 5 m: south (12 m).", usage=(300, 15)))
    got = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})

    said, listed, found, answer = got["messages"]
    assert said == {"role": "assistant", "content": "Let me look."}
    assert listed["role"] == "tool_call" and listed["name"] == "list_collections" and listed["arguments"] == {}
    assert [c["name"] for c in listed["result"]] == ["lab"] and listed["is_error"] is False
    assert found["name"] == "find_records" and found["arguments"]["filter"] == deep
    assert found["result"]["total"] == 1 and found["result"]["items"][0]["id"] == south["id"]
    assert found["truncated"] is False
    assert answer == {"role": "assistant", "content": "One site is deeper than 5 m: south (12 m)."}
    assert got["usage"] == {"input_tokens": 400, "output_tokens": 35, "total_tokens": 435, "requests": 2}
    assert got["stop_reason"] == "answer"

    first, second = (s.body for s in fake_model.chats())
    assert first["model"] == "fake-model" and first["messages"][0]["role"] == "system"
    assert first["messages"][-1] == QUESTION[0]
    assert {t["function"]["name"] for t in first["tools"]} == set(tools.TOOLS)
    assert fake_model.chats()[0].headers["authorization"] == f"Bearer {KEY}"
    assert [m["tool_call_id"] for m in tool_messages(second)] == ["call_0_list_collections", "call_1_find_records"]
    assert json.loads(tool_messages(second)[1]["content"])["items"][0]["data"]["name"] == "south"
    assert second["messages"][-3]["tool_calls"][1]["function"]["name"] == "find_records"

    usage = ai.ok("GET", "/ai/usage")
    assert usage["total"] == {"input_tokens": 400, "output_tokens": 35, "requests": 2, "total_tokens": 435}
    assert usage["by_model"] == [{"provider": "openai", "model": "fake-model", "input_tokens": 400,
                                  "output_tokens": 35, "requests": 2, "total_tokens": 435}]


def test_a_tool_error_is_fed_back_to_the_model(ai, fake_model: FakeModel):
    lab(ai)
    configure(ai, fake_model)
    fake_model.then(
        completion(None, [("get_record", {"record_id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ"}),
                          ("find_records", {"collection": "lab", "schema": "site",
                                            "filter": {"and": [{"field": "nope", "op": "eq", "value": 1}]}}),
                          ("find_records", {"collection": "lab", "limit": 5000})]),
        completion("That record does not exist."))
    got = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})
    missing, bad_filter, bad_args, answer = got["messages"]
    assert missing["is_error"] and missing["result"]["kind"] == "not_found" and "not found" in missing["result"]["error"]
    assert bad_filter["is_error"] and bad_filter["result"]["kind"] == "not_found"  # no field nope
    assert bad_filter["result"]["errors"][0]["loc"][:2] == ["query", "filter"]
    assert bad_args["is_error"] and bad_args["result"]["errors"][0]["loc"] == ["limit"]
    assert answer["content"] == "That record does not exist."
    fed = tool_messages(fake_model.chats()[1].body)
    assert [json.loads(m["content"]) for m in fed] == [m["result"] for m in (missing, bad_filter, bad_args)]


def test_an_unknown_tool_or_bad_arguments_are_answered_as_results(ai, fake_model: FakeModel):
    configure(ai, fake_model)
    fake_model.then(completion(None, [("delete_everything", {}), ("get_schema", "{not json")]),
                    completion("I cannot do that."))
    got = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})
    unknown, broken, answer = got["messages"]
    assert unknown["is_error"] and unknown["result"]["error"] == "unknown tool 'delete_everything'"
    assert unknown["result"]["tools"] == sorted(tools.TOOLS)
    assert broken["is_error"] and "not valid JSON" in broken["result"]["error"]
    assert broken["arguments"] == "{not json"
    assert answer["content"] == "I cannot do that." and got["stop_reason"] == "answer"


def test_more_rounds_than_allowed_stop_with_a_clear_message(ai, fake_model: FakeModel):
    configure(ai, fake_model)
    rounds = chat_loop.MAX_ROUNDS
    fake_model.then(*[completion(None, [("list_collections", {})], usage=(10, 1)) for _ in range(rounds + 2)])
    got = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})
    assert len(fake_model.chats()) == rounds
    assert [m["role"] for m in got["messages"]] == ["tool_call"] * rounds + ["assistant"]
    assert got["messages"][-1]["content"] == chat_loop.STOP_MESSAGE and str(rounds) in chat_loop.STOP_MESSAGE
    assert got["stop_reason"] == "max_rounds"
    assert got["usage"] == {"input_tokens": 10 * rounds, "output_tokens": rounds, "total_tokens": 11 * rounds,
                            "requests": rounds}


def test_a_conversation_sent_back_keeps_its_tool_calls(ai, fake_model: FakeModel):
    configure(ai, fake_model)
    fake_model.then(completion("Looking.", [("list_collections", {})]), completion("None yet."))
    first = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})
    fake_model.then(completion("Still none."))
    history = QUESTION + first["messages"] + [{"role": "user", "content": "And now?"}]
    ai.ok("POST", "/ai/chat", json={"messages": history})
    sent = fake_model.chats()[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["content"] == "Looking." and sent[2]["tool_calls"][0]["id"] == "call_0_list_collections"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_0_list_collections", "content": "[]"}
    # a tool call sent without id, arguments or result still makes a valid conversation
    fake_model.then(completion("ok"))
    ai.ok("POST", "/ai/chat", json={"messages": [*QUESTION, {"role": "tool_call", "name": "list_collections"}]})
    sent = fake_model.chats()[-1].body["messages"]
    assert sent[2]["tool_calls"][0]["id"] == sent[3]["tool_call_id"] and sent[3]["content"] == "null"


def test_a_long_result_is_cut_and_says_so(ai, fake_model: FakeModel):
    make_schema(ai, "note", [{"name": "text", "type": "string"}])
    make_collection(ai, "notes", ["note"])
    for i in range(30):
        make_record(ai, "notes", "note", {"text": f"{i} " + "lorem ipsum " * 100})
    configure(ai, fake_model)
    fake_model.then(completion(None, [("find_records", {"collection": "notes", "limit": 30})]), completion("Many."))
    call = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})["messages"][0]
    assert call["truncated"] is True and isinstance(call["result"], str)
    assert "[truncated: the result is" in call["result"] and len(call["result"].encode()) < tools.RESULT_LIMIT + 300
    assert tool_messages(fake_model.chats()[1].body)[0]["content"] == call["result"]


def test_no_model_or_no_key_is_409_saying_what_to_set(ai, fake_model: FakeModel):
    r = ai.post("/ai/chat", json={"messages": QUESTION})
    assert r.status_code == 409 and "model" in r.json()["detail"] and "PATCH /ai/config" in r.json()["detail"]
    ai.ok("PATCH", "/ai/config", json={"model": "fake-model"})
    r = ai.post("/ai/chat", json={"messages": QUESTION})
    assert r.status_code == 409 and "api_key" in r.json()["detail"] and "BENCHBOOK_AI_KEY" in r.json()["detail"]
    ai.ok("PATCH", "/ai/config", json={"provider": "local", "base_url": fake_model.base_url})
    fake_model.then(completion("Local and keyless."))
    assert ai.ok("POST", "/ai/chat", json={"messages": QUESTION})["messages"][-1]["content"] == "Local and keyless."
    assert fake_model.chats() and fake_model.chats()[-1].headers["authorization"] == "Bearer no-key"
    assert ai.ok("GET", "/ai/usage")["total"]["requests"] == 1


def test_a_provider_that_is_down_is_502_naming_the_address(ai):
    address = f"http://127.0.0.1:{closed_port()}/v1"
    ai.ok("PATCH", "/ai/config", json={"model": "m", "api_key": KEY, "base_url": address})
    r = ai.post("/ai/chat", json={"messages": QUESTION})
    assert r.status_code == 502 and address in r.json()["detail"] and "cannot be reached" in r.json()["detail"]
    usage = ai.ok("GET", "/ai/usage")
    assert usage["total"] == {"input_tokens": 0, "output_tokens": 0, "requests": 1, "total_tokens": 0}


def test_a_refused_key_is_502_without_the_key(ai, fake_model: FakeModel):
    configure(ai, fake_model)
    fake_model.then((401, {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}))
    r = ai.post("/ai/chat", json={"messages": QUESTION})
    assert r.status_code == 502 and "refused the API key" in r.json()["detail"]
    assert fake_model.base_url in r.json()["detail"] and KEY not in r.text


def test_usage_of_earlier_requests_stays_when_the_chat_fails_later(ai, fake_model: FakeModel):
    configure(ai, fake_model)
    fake_model.then(completion(None, [("list_collections", {})], usage=(50, 5)),
                    (500, {"error": {"message": f"model crashed near {KEY}"}}))
    r = ai.post("/ai/chat", json={"messages": QUESTION})
    assert r.status_code == 502 and "answered 500: model crashed near [key]" in r.json()["detail"]
    usage = ai.ok("GET", "/ai/usage")
    assert usage["total"] == {"input_tokens": 50, "output_tokens": 5, "requests": 2, "total_tokens": 55}


def test_an_answer_without_usage_counts_the_request(ai, fake_model: FakeModel):
    configure(ai, fake_model)
    fake_model.then(completion("Hi.", usage=None))
    got = ai.ok("POST", "/ai/chat", json={"messages": QUESTION})
    assert got["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "requests": 1}


def test_chat_messages_are_checked(ai):
    for body in ({"messages": []}, {"messages": [{"role": "system", "content": "x"}]},
                 {"messages": [{"role": "user"}]}, {"messages": [{"role": "tool_call", "id": "x"}]}):
        r = ai.post("/ai/chat", json=body)
        assert r.status_code == 422 and r.json()["detail"] == "Request validation failed", (body, r.text)
