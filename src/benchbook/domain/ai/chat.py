"""The chat loop: the conversation goes to the model with the service's read tools; each tool
call the model makes is run (:mod:`benchbook.domain.ai.tools`) and its result fed back, until
the model answers in words or :data:`MAX_ROUNDS` requests have been made.

Messages (the API's ChatMessage, ``role`` discriminated; docs/decisions.md *AI*)::

    {role: "user",      content}
    {role: "assistant", content}
    {role: "tool_call", id, name, arguments, result, is_error, truncated}

A ``tool_call`` message is one call the model made together with its result. A conversation
is sent back whole with each new question (the server keeps none): an ``assistant`` text
directly followed by ``tool_call`` messages was one answer of the model, so the calls are
joined to it again when the conversation goes to the model.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from benchbook.domain.ai import providers, tools
from benchbook.domain.ai.config import AiSettings
from benchbook.domain.ai.usage import Sessions, Tokens, record
from benchbook.domain.errors import BadGateway

log = logging.getLogger(__name__)

MAX_ROUNDS = 8
"""Model requests one chat may make; tool calls in the last answer are run, then the chat stops."""
STOP_MESSAGE = (f"Stopped: the model was still calling tools after {MAX_ROUNDS} requests without an answer. "
                "The tool results so far are above; ask a narrower question, or send the conversation "
                "again to let it continue.")
SYSTEM_PROMPT = (
    "You are the assistant of benchbook, a local research data service. Data is organised in "
    "collections of records; each record has a schema (its kind, with typed fields) and may be nested "
    "under a parent record. Use the tools to read the user's data before answering questions about it; "
    "never invent records, ids or values. The tools only read: you cannot change data. If a tool "
    "answers with an error, correct the arguments or explain the problem. Answer concisely.")

Body = dict[str, Any]


def to_openai(messages: list[Body]) -> list[Body]:
    """The API's messages as chat completions messages (system prompt first)."""
    out: list[Body] = [{"role": "system", "content": SYSTEM_PROMPT}]
    results: list[Body] = []
    for i, m in enumerate(messages):
        role = m["role"]
        if role != "tool_call" and results:
            out += results
            results = []
        if role in ("user", "assistant"):
            out.append({"role": role, "content": m.get("content") or ""})
            continue
        call_id = str(m.get("id") or f"call_{i}")
        arguments = m.get("arguments")
        call = {"id": call_id, "type": "function",
                "function": {"name": m["name"], "arguments": arguments if isinstance(arguments, str)
                             else json.dumps(arguments if arguments is not None else {})}}
        last = out[-1]
        if last["role"] == "assistant" and (results or "tool_calls" not in last):
            last.setdefault("tool_calls", []).append(call)  # the same answer as the text (or the call) before
        else:
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        result = m.get("result")
        results.append({"role": "tool", "tool_call_id": call_id,
                        "content": result if isinstance(result, str) else tools._encode(result)})
    return out + results


def _tokens(response: ChatCompletion) -> Tokens:
    u = response.usage
    if u is None:  # some local servers do not count
        return Tokens(requests=1)
    given, made = int(u.prompt_tokens or 0), int(u.completion_tokens or 0)
    return Tokens(given, made, int(u.total_tokens or given + made), 1)


def _ask(client: openai.OpenAI, settings: AiSettings, conversation: list[Body], sessions: Sessions) -> ChatCompletion:
    """One model request, stored in ``ai_usage`` whatever happens."""
    try:
        response = client.chat.completions.create(model=settings.model, messages=conversation,  # type: ignore[arg-type]
                                                  tools=tools.specs())  # type: ignore[arg-type]
        if not response.choices:
            raise BadGateway(f"the AI provider at {settings.base_url} answered without a message")
    except openai.OpenAIError as exc:
        kind, error = providers.failure(exc, what=f"the AI provider {settings.provider!r}",
                                        base_url=settings.base_url, secret=settings.api_key)
        record(sessions, provider=settings.provider, model=settings.model, tokens=Tokens(), error_kind=kind)
        log.warning("AI request failed: %s", error.detail)
        raise error from None
    except BadGateway:
        record(sessions, provider=settings.provider, model=settings.model, tokens=Tokens(), error_kind="bad_response")
        raise
    record(sessions, provider=settings.provider, model=settings.model, tokens=_tokens(response))
    return response


def chat(settings: AiSettings, messages: list[Body], *, sessions: Sessions,
         make_client: Callable[[str, str | None], openai.OpenAI] = providers.client) -> Body:
    """Run one chat turn: ``{messages: [the new messages], usage, stop_reason}``.

    ``stop_reason`` is ``answer`` (the last new message is the model's answer) or
    ``max_rounds`` (the last one is :data:`STOP_MESSAGE`). Raises ``Conflict`` (409) when no
    model or key is set, ``BadGateway`` (502) when the provider fails (the requests made so
    far stay counted)."""
    settings.require_ready()
    conversation = to_openai(messages)
    new: list[Body] = []
    used = Tokens()
    with make_client(settings.base_url, settings.api_key) as client:
        for _ in range(MAX_ROUNDS):
            response = _ask(client, settings, conversation, sessions)
            used.add(_tokens(response))
            message = response.choices[0].message
            calls = message.tool_calls or []
            if message.content or not calls:
                new.append({"role": "assistant", "content": message.content or ""})
            if not calls:
                break
            said: Body = {"role": "assistant", "content": message.content, "tool_calls": []}
            answers: list[Body] = []
            for n, call in enumerate(calls):
                call_id = call.id or f"call_{len(conversation)}_{n}"
                name = getattr(getattr(call, "function", None), "name", "") or ""
                arguments = getattr(getattr(call, "function", None), "arguments", "") or ""
                result = tools.run(sessions, name, arguments)
                try:
                    shown: Any = json.loads(arguments) if arguments.strip() else {}
                except ValueError:
                    shown = arguments
                new.append({"role": "tool_call", "id": call_id, "name": name, "arguments": shown,
                            "result": result.value, "is_error": result.is_error, "truncated": result.truncated})
                said["tool_calls"].append({"id": call_id, "type": "function",
                                           "function": {"name": name, "arguments": arguments}})
                answers.append({"role": "tool", "tool_call_id": call_id, "content": result.text})
            conversation += [said, *answers]
        else:
            new.append({"role": "assistant", "content": STOP_MESSAGE})
            log.info("AI chat stopped after %d requests (%d tokens)", used.requests, used.total_tokens)
            return {"messages": new, "usage": used.response(), "stop_reason": "max_rounds"}
    log.info("AI chat answered after %d requests (%d tokens)", used.requests, used.total_tokens)
    return {"messages": new, "usage": used.response(), "stop_reason": "answer"}
