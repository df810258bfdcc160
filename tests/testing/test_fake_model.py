"""The fake model, driven by the real openai client over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

from gm.errors import UsageError
from gm.testing import (
    FakeModel,
    Request,
    call,
    calls,
    fake_model,
    http_error,
    length,
    raw,
    reply,
    slow,
    tool_call,
)
from gm.testing._openai_schemas import explain, load_validator
from tests.support.paths import OPENAI_SCHEMAS

REQUEST_SCHEMA = OPENAI_SCHEMAS / "chat-completion-request.schema.json"
RESPONSE_SCHEMA = OPENAI_SCHEMAS / "chat-completion-response.schema.json"
HELLO = [{"role": "user", "content": "Hello there."}]
ROLL_TOOL = {
    "type": "function",
    "function": {
        "name": "roll_check",
        "description": "Roll a check for a character.",
        "parameters": {
            "type": "object",
            "properties": {"check": {"type": "string"}, "character": {"type": "string"}},
            "required": ["check", "character"],
        },
    },
}


def checked(script: Any, **options: Any) -> Any:
    """A fake model validating requests and responses against OpenAI's schemas."""
    return fake_model(script, request_schema=REQUEST_SCHEMA, response_schema=RESPONSE_SCHEMA, **options)


def ask(fake: FakeModel, messages: list[dict[str, Any]] = HELLO, **options: Any) -> Any:
    return fake.client().chat.completions.create(model=fake.model, messages=messages, **options)  # type: ignore[arg-type]


def test_reply_reaches_the_client_as_assistant_text() -> None:
    with checked([reply("The door creaks open.")]) as fake:
        answer = ask(fake)
    assert answer.choices[0].message.content == "The door creaks open."
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.tool_calls is None
    assert fake.requests == [{"model": "fake-model", "messages": HELLO}]


def test_one_tool_call_carries_name_json_arguments_and_a_generated_id() -> None:
    with checked([call("roll_check", {"check": "attempt", "character": "Mara"})]) as fake:
        answer = ask(fake, tools=[ROLL_TOOL], tool_choice="auto")
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    [made] = choice.message.tool_calls
    assert (made.id, made.function.name) == ("call_1", "roll_check")
    assert json.loads(made.function.arguments) == {"check": "attempt", "character": "Mara"}
    assert fake.requests[0]["tools"] == [ROLL_TOOL]


def test_several_tool_calls_in_one_message_with_text_alongside() -> None:
    step = calls(
        [("roll_check", {"check": "attempt", "character": "Mara"}), tool_call("narrate", {"text": "x"}, id="mine")],
        content="Let us see.",
    )
    with checked([step, call("narrate", {})]) as fake:
        first, second = ask(fake), ask(fake)
    message = first.choices[0].message
    assert message.content == "Let us see."
    assert [(each.id, each.function.name) for each in message.tool_calls] == [
        ("call_1", "roll_check"),
        ("mine", "narrate"),
    ]
    assert second.choices[0].message.tool_calls[0].id == "call_2"  # ids stay unique across the conversation


def test_malformed_arguments_are_sent_exactly_as_written() -> None:
    with checked([call("roll_check", '{"check": "attempt",')]) as fake:
        answer = ask(fake)
    assert answer.choices[0].message.tool_calls[0].function.arguments == '{"check": "attempt",'


def test_length_ends_with_finish_reason_length() -> None:
    with checked([length("And then the")]) as fake:
        answer = ask(fake)
    assert (answer.choices[0].finish_reason, answer.choices[0].message.content) == ("length", "And then the")


def test_usage_is_estimated_at_four_characters_a_token_unless_given_or_omitted() -> None:
    messages = [{"role": "system", "content": "s" * 20}, {"role": "user", "content": "u" * 20}]
    with checked([reply("r" * 8), reply("hi", usage=(120, 30)), reply("hi", usage=None)]) as fake:
        estimated, given, omitted = ask(fake, messages), ask(fake, messages), ask(fake, messages)
    assert (estimated.usage.prompt_tokens, estimated.usage.completion_tokens, estimated.usage.total_tokens) == (
        10,
        2,
        12,
    )
    assert (given.usage.prompt_tokens, given.usage.completion_tokens, given.usage.total_tokens) == (120, 30, 150)
    assert omitted.usage is None


def test_http_errors_have_openai_style_bodies_status_and_headers() -> None:
    script = [
        http_error(500, "The engine stalled."),
        http_error(429, "Slow down.", headers={"Retry-After": "1"}),
        http_error(429, "You exceeded your current quota.", code="insufficient_quota", type="insufficient_quota"),
    ]
    with checked(script) as fake:
        with pytest.raises(openai.InternalServerError) as server:
            ask(fake)
        with pytest.raises(openai.RateLimitError) as limited:
            ask(fake)
        with pytest.raises(openai.RateLimitError) as quota:
            ask(fake)
    assert server.value.status_code == 500
    assert server.value.body == {"message": "The engine stalled.", "type": "server_error", "param": None, "code": None}
    assert limited.value.response.headers["retry-after"] == "1"
    assert (quota.value.code, quota.value.type) == ("insufficient_quota", "insufficient_quota")


def test_async_client_works_too() -> None:
    async def talk(fake: FakeModel) -> list[str | None]:
        async with fake.async_client() as client:
            answers = [await client.chat.completions.create(model=fake.model, messages=HELLO) for _ in range(2)]  # type: ignore[arg-type]
        return [answer.choices[0].message.content for answer in answers]

    with checked([reply("one"), reply("two")]) as fake:
        assert asyncio.run(talk(fake)) == ["one", "two"]


def test_a_function_script_answers_from_the_request_and_never_runs_out() -> None:
    def echo(request: Request) -> Any:
        return reply(f"{request['model']} heard: {request['messages'][-1]['content']}")

    with checked(echo) as fake:
        answers = [ask(fake, [{"role": "user", "content": word}]) for word in ("north", "south", "east")]
    assert [answer.choices[0].message.content for answer in answers] == [
        "fake-model heard: north",
        "fake-model heard: south",
        "fake-model heard: east",
    ]


def test_a_list_may_mix_steps_and_functions_of_the_request() -> None:
    script = [reply("first"), lambda request: reply(str(len(request["messages"]))), reply("last")]
    with checked(script) as fake:
        contents = [ask(fake, HELLO * count).choices[0].message.content for count in (1, 3, 1)]
    assert contents == ["first", "3", "last"]


def test_a_function_that_raises_gets_a_500_and_is_reported() -> None:
    def broken(request: Request) -> Any:
        raise KeyError("missing")

    with fake_model([broken], check=False) as fake, pytest.raises(openai.InternalServerError, match="KeyError"):
        ask(fake)
    with pytest.raises(AssertionError, match="raised KeyError"):
        fake.assert_done()


def test_unused_steps_make_assert_done_fail_and_name_them() -> None:
    with fake_model([reply("used"), reply("never sent")], check=False) as fake:
        ask(fake)
    with pytest.raises(AssertionError, match="1 scripted step") as failure:
        fake.assert_done()
    assert "never sent" in str(failure.value)
    assert "'used'" not in str(failure.value)


def test_fake_model_checks_on_leaving_the_block() -> None:
    with pytest.raises(AssertionError, match="not used"), fake_model([reply("left over")]):
        pass


def test_an_exhausted_script_answers_500_and_is_remembered() -> None:
    with fake_model([reply("only one")], check=False) as fake:
        ask(fake)
        with pytest.raises(openai.InternalServerError, match="ran out: request 2"):
            ask(fake)
    assert fake.remaining == []
    with pytest.raises(AssertionError, match="ran out"):
        fake.assert_done()


def test_an_invalid_request_is_refused_with_the_schema_reason_and_reported() -> None:
    with checked([reply("never sent")], check=False) as fake, pytest.raises(openai.BadRequestError) as refused:
        ask(fake, [{"role": "wizard", "content": "Abracadabra."}])
    assert "$.messages[0].role" in refused.value.message
    assert "'wizard'" in refused.value.message and "'assistant'" in refused.value.message
    assert fake.requests[0]["messages"][0]["role"] == "wizard"  # recorded even though refused
    with pytest.raises(AssertionError, match="request schema"):
        fake.assert_done()


def test_a_whole_tool_round_from_the_real_client_validates() -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are the game master."},
        {"role": "user", "content": "I pick the lock."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "roll_check", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Success"},
    ]
    forced = {"type": "function", "function": {"name": "roll_check"}}
    with checked([reply("It opens."), reply("Again.")]) as fake:
        ask(fake, history, tools=[ROLL_TOOL], tool_choice=forced, temperature=0.7)
        ask(fake, history, max_tokens=None, seed=None)  # null is allowed where OpenAPI says `nullable`
    assert fake.failures == []


def test_an_answer_breaking_the_response_schema_is_a_loud_failure() -> None:
    bored = reply("hm", finish_reason="bored")
    with checked([bored], check=False) as fake, pytest.raises(openai.InternalServerError, match="response schema"):
        ask(fake)
    with pytest.raises(AssertionError, match=r"finish_reason.*bored"):
        fake.assert_done()


def test_a_raw_step_is_sent_verbatim_and_unchecked() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "n", "arguments": {"k": 2}}}],
    }
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}],
    }
    with checked([raw(body)]) as fake:
        answer = ask(fake)
    assert answer.choices[0].message.tool_calls[0].function.arguments == {"k": 2}


def test_streaming_requests_are_refused_with_400() -> None:
    with checked([reply("never sent")], check=False) as fake, pytest.raises(openai.BadRequestError, match="streaming"):
        ask(fake, stream=True)
    assert fake.remaining == [reply("never sent")]
    assert any("streaming" in failure for failure in fake.failures)


def test_models_are_listed() -> None:
    with fake_model([], model="tiny-gm") as fake:
        assert [model.id for model in fake.client().models.list()] == ["tiny-gm"]


def fetch(url: str, data: bytes | None = None) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_unknown_paths_get_404_with_an_openai_error_body() -> None:
    with fake_model([], check=False) as fake:
        status, body = fetch(fake.base_url + "/embeddings", b"{}")
    assert status == 404
    assert set(body["error"]) >= {"message", "type", "code"}
    assert "/v1/embeddings" in body["error"]["message"]
    assert fake.failures


def test_a_body_that_is_not_json_gets_400() -> None:
    with fake_model([reply("never sent")], check=False) as fake:
        status, body = fetch(fake.base_url + "/chat/completions", b"{oops")
    assert status == 400
    assert "not JSON" in body["error"]["message"]


def test_concurrent_requests_each_take_one_step() -> None:
    words = [f"answer {number}" for number in range(8)]
    with fake_model([reply(word) for word in words]) as fake, ThreadPoolExecutor(8) as pool:
        contents = list(pool.map(lambda _: ask(fake).choices[0].message.content, words))
    assert sorted(contents) == sorted(words)


def test_a_slow_step_times_the_client_out_and_close_does_not_wait_for_it() -> None:
    fake = FakeModel([slow(reply("too late"), 30)]).start()
    with pytest.raises(openai.APITimeoutError):
        ask(fake, timeout=0.2)
    started = time.monotonic()
    fake.close()
    assert time.monotonic() - started < 2


def test_start_and_close_explicitly() -> None:
    fake = FakeModel([reply("hi")])
    with pytest.raises(UsageError, match="not started"):
        fake.base_url  # noqa: B018
    fake.start()
    url = fake.base_url
    assert ask(fake).choices[0].message.content == "hi"
    fake.close()
    fake.close()
    with pytest.raises(UsageError, match="cannot start again"):
        fake.start()
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=url, api_key="k", max_retries=0).chat.completions.create(model="m", messages=HELLO)  # type: ignore[arg-type]


def test_explain_merges_the_allowed_roles_of_a_failed_one_of() -> None:
    validator = load_validator(REQUEST_SCHEMA)
    [error] = validator.iter_errors({"model": "m", "messages": [{"role": "narrator", "content": "x"}]})
    text = explain(error)
    assert text.startswith("$.messages[0].role: 'narrator' is not one of")
    for role in ("system", "user", "assistant", "tool", "developer"):
        assert f"'{role}'" in text


def test_explain_picks_the_branch_that_came_closest() -> None:
    validator = load_validator(REQUEST_SCHEMA)
    [error] = validator.iter_errors({"model": "m", "messages": [{"role": "tool", "content": "x"}]})
    assert explain(error) == "$.messages[0]: 'tool_call_id' is a required property"
