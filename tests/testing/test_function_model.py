"""The in-process fake model: what it answers is what ModelClient makes of the HTTP fake's answer."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest

from gm.errors import ScriptError
from gm.models.client import Completion, ModelClient, ModelSettings, ToolCall, Usage
from gm.testing import FakeModel, FunctionModel, call, calls, http_error, length, raw, reply, slow, tool_call
from tests.support.paths import OPENAI_SCHEMAS

CHECKED = {
    "request_schema": OPENAI_SCHEMAS / "chat-completion-request.schema.json",
    "response_schema": OPENAI_SCHEMAS / "chat-completion-response.schema.json",
}
HELLO = [{"role": "system", "content": "s" * 20}, {"role": "user", "content": "u" * 20}]
ROLL_TOOL = {
    "type": "function",
    "function": {
        "name": "roll_check",
        "description": "Roll a check for a character.",
        "parameters": {"type": "object", "properties": {"check": {"type": "string"}}, "required": ["check"]},
    },
}
# Every kind of answer FunctionModel plays, each asked with tools and a tool choice or without.
SCRIPT = [
    reply("The lock clicks."),
    call("roll_check", {"check": "attempt", "character": "Mara"}),
    calls([("roll_check", {"check": "a"}), tool_call("narrate", {"narration": "x"}, id="mine")], content="Let us see."),
    call("roll_check", '{"check": "attempt",'),  # malformed arguments, sent as written
    length("And then the"),
    reply("hi", usage=(120, 30)),
    reply("hi", usage=None),
    call("narrate", {"narration": "Done."}, usage=None),
]
ASKED: list[dict[str, Any]] = [{}, {"tools": [ROLL_TOOL]}, {"tools": [ROLL_TOOL], "tool_choice": "auto"}, {}] * 2


def complete(model: Any, messages: list[dict[str, Any]] = HELLO, **options: Any) -> Completion:
    return asyncio.run(model.complete(messages, **options))


def test_each_answer_is_the_completion_model_client_makes_of_the_http_fake() -> None:
    over_http: list[Completion] = []
    with FakeModel(SCRIPT, **CHECKED) as fake:

        async def ask_all() -> None:
            async with ModelClient(ModelSettings(fake.base_url, "k", fake.model)) as client:
                over_http.extend([await client.complete(HELLO, **options) for options in ASKED])

        asyncio.run(ask_all())
    in_process = FunctionModel(SCRIPT, **CHECKED)
    answered = [complete(in_process, **options) for options in ASKED]
    assert [replace(c, latency_ms=0) for c in answered] == [replace(c, latency_ms=0) for c in over_http]
    assert in_process.requests == fake.requests  # the same bodies, as ModelClient sends them
    in_process.assert_done()
    fake.assert_done()


def test_a_tool_call_answer_carries_its_arguments_and_a_message_to_append() -> None:
    model = FunctionModel([call("roll_check", {"check": "attempt"})])
    done = complete(model, tools=[ROLL_TOOL])
    assert done.tool_calls == [ToolCall("call_1", "roll_check", '{"check": "attempt"}')]
    function = {"name": "roll_check", "arguments": '{"check": "attempt"}'}
    assert done.raw_message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": function}],
    }
    assert (done.finish_reason, done.attempts) == ("tool_calls", 1)
    assert model.requests == [{"model": "fake-model", "messages": HELLO, "tools": [ROLL_TOOL]}]


def test_usage_is_the_fakes_estimate_or_given_or_estimated_as_the_client_does() -> None:
    model = FunctionModel([reply("r" * 8), reply("hi", usage=(120, 30)), reply("hi", usage=None)])
    estimated, given, omitted = complete(model), complete(model), complete(model)
    assert estimated.usage == Usage(10, 2, estimated=False)  # 40 characters of prompt, 8 of answer
    assert given.usage == Usage(120, 30, estimated=False)
    assert omitted.usage == Usage(10, 1, estimated=True)


def test_a_function_of_the_request_may_be_async_and_hold_its_answer() -> None:
    async def play() -> tuple[list[str], str | None]:
        arrived, release = asyncio.Event(), asyncio.Event()
        seen: list[str] = []

        async def held(request: dict[str, Any]) -> Any:
            seen.append(request["messages"][-1]["content"])
            arrived.set()
            await release.wait()
            return reply("At last.")

        model = FunctionModel(held)
        answering = asyncio.create_task(model.complete([{"role": "user", "content": "Wait for it."}]))
        await arrived.wait()
        assert not answering.done()
        release.set()
        return seen, (await answering).content

    assert asyncio.run(play()) == (["Wait for it."], "At last.")


def test_a_slow_step_waits_before_answering() -> None:
    done = complete(FunctionModel([slow(reply("Late."), 0.05)]))
    assert done.content == "Late." and done.latency_ms >= 50


@pytest.mark.parametrize(
    ("script", "messages", "words"),
    [
        ([reply("one")], [{"role": "wizard", "content": "Abracadabra."}], "$.messages[0].role"),
        ([reply("hm", finish_reason="bored")], HELLO, "breaks the response schema"),
        ([http_error(500, "stalled")], HELLO, "only FakeModel serves"),
        ([raw({"id": "x"})], HELLO, "only FakeModel serves"),
        ([lambda request: request["nothing"]], HELLO, "raised KeyError for request 1"),
        ([lambda request: "not a step"], HELLO, "returned 'not a step'"),
        ([], HELLO, "ran out: request 1"),
        ([reply("never")], [{"role": "user", "content": {1, 2}}], "cannot be sent as JSON"),
    ],
)
def test_what_the_fake_cannot_answer_is_a_loud_script_error(script: Any, messages: Any, words: str) -> None:
    model = FunctionModel(script, **CHECKED)
    with pytest.raises(ScriptError) as raised:
        complete(model, messages)
    assert isinstance(raised.value, AssertionError) and words in str(raised.value)
    assert model.failures == [str(raised.value)]
    with pytest.raises(AssertionError, match="did not finish cleanly"):
        model.assert_done()


def test_unused_steps_are_named_by_assert_done() -> None:
    model = FunctionModel([reply("used"), reply("never sent")])
    complete(model)
    assert model.remaining == [reply("never sent")]
    with pytest.raises(AssertionError, match="1 scripted step"):
        model.assert_done()


def test_a_function_script_never_runs_out() -> None:
    model = FunctionModel(lambda request: reply(f"heard {json.dumps(request['messages'][-1]['content'])}"))
    assert [complete(model, [{"role": "user", "content": w}]).content for w in ("n", "s")] == ['heard "n"', 'heard "s"']
    model.assert_done()
