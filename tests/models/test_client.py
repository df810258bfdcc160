"""The model client against the fake model over HTTP: answers, usage, retries, errors, settings."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from gm.errors import ModelError, ModelNotConfigured, ModelRequestRejected, ModelUnavailable, SettingsError
from gm.models.client import ModelClient, ModelSettings, ToolCall, Usage, retry_after_seconds
from gm.testing import FakeModel, Request, Step, call, calls, http_error, length, raw, reply, slow
from tests.support.models import HELLO, FakeTime, closed_port, complete, served, settings_for

ROLL_TOOL = {
    "type": "function",
    "function": {
        "name": "roll_check",
        "description": "Roll a check for a character.",
        "parameters": {"type": "object", "properties": {"check": {"type": "string"}}, "required": ["check"]},
    },
}


def test_a_reply_becomes_a_completion_with_the_servers_usage() -> None:
    with served([reply("The lock clicks.", usage=(57, 6))]) as fake:
        done = complete(settings_for(fake))
    assert (done.content, done.tool_calls, done.finish_reason) == ("The lock clicks.", [], "stop")
    assert done.usage == Usage(prompt_tokens=57, completion_tokens=6, estimated=False)
    assert done.usage.total_tokens == 63
    assert done.attempts == 1
    assert done.raw_message == {"role": "assistant", "content": "The lock clicks."}
    assert fake.requests == [{"model": "gm-test", "messages": HELLO}]


def test_one_tool_call_keeps_its_arguments_as_text_and_echoes_back_validly() -> None:
    with served([call("roll_check", {"check": "lockpicking"}), reply("It opens.")]) as fake:
        first = complete(settings_for(fake), tools=[ROLL_TOOL], tool_choice="auto")
        [made] = first.tool_calls
        answer = {"role": "tool", "tool_call_id": made.id, "content": "Success"}
        second = complete(settings_for(fake), [*HELLO, first.raw_message, answer], tools=[ROLL_TOOL])
    assert made == ToolCall(id="call_1", name="roll_check", arguments='{"check": "lockpicking"}')
    assert first.finish_reason == "tool_calls"
    assert first.raw_message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "roll_check", "arguments": '{"check": "lockpicking"}'},
            }
        ],
    }
    assert second.content == "It opens."
    assert fake.requests[0]["tools"] == [ROLL_TOOL] and fake.requests[0]["tool_choice"] == "auto"
    assert fake.requests[1]["messages"][1]["tool_calls"][0]["id"] == "call_1"


def test_several_tool_calls_in_one_message() -> None:
    step = calls([("roll_check", {"check": "a"}), ("roll_check", {"check": "b"})], content="Two rolls.")
    with served([step]) as fake:
        done = complete(settings_for(fake))
    assert done.content == "Two rolls."
    assert [(each.id, json.loads(str(each.arguments))) for each in done.tool_calls] == [
        ("call_1", {"check": "a"}),
        ("call_2", {"check": "b"}),
    ]
    assert [each["id"] for each in done.raw_message["tool_calls"]] == ["call_1", "call_2"]


def test_malformed_arguments_are_passed_through_raw() -> None:
    with served([call("roll_check", '{"check": "lock')]) as fake:
        done = complete(settings_for(fake))
    assert done.tool_calls[0].arguments == '{"check": "lock'
    assert done.raw_message["tool_calls"][0]["function"]["arguments"] == '{"check": "lock'


def test_arguments_sent_as_an_object_are_kept_and_echoed_back_as_json_text() -> None:
    tool_call = {"id": "c7", "type": "function", "function": {"name": "roll_check", "arguments": {"check": "lock"}}}
    message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    with served([raw(body), reply("ok")]) as fake:
        first = complete(settings_for(fake))
        complete(
            settings_for(fake),
            [*HELLO, first.raw_message, {"role": "tool", "tool_call_id": "c7", "content": "Success"}],
        )
    assert first.tool_calls == [ToolCall("c7", "roll_check", {"check": "lock"})]
    assert json.loads(first.raw_message["tool_calls"][0]["function"]["arguments"]) == {"check": "lock"}


def test_finish_reason_length_is_reported() -> None:
    with served([length("And then the")]) as fake:
        done = complete(settings_for(fake))
    assert (done.finish_reason, done.content) == ("length", "And then the")


def test_usage_is_estimated_at_four_characters_a_token_when_the_server_sends_none() -> None:
    with served([reply("b" * 40, usage=None), call("roll_check", {"check": "x"}, usage=None)]) as fake:
        text = complete(settings_for(fake), [{"role": "user", "content": "a" * 400}])
        tool = complete(settings_for(fake), [{"role": "user", "content": "a" * 400}], tools=[ROLL_TOOL])
    assert text.usage == Usage(prompt_tokens=100, completion_tokens=10, estimated=True)
    # With tools, their JSON counts towards the prompt; a call counts its name and arguments.
    tools_tokens = -(-len(json.dumps([ROLL_TOOL])) // 4)
    assert tool.usage.estimated
    assert tool.usage.prompt_tokens == 100 + tools_tokens
    assert tool.usage.completion_tokens == -(-len('roll_check{"check": "x"}') // 4)


def test_500_then_429_with_retry_after_then_success() -> None:
    script: list[Step] = [
        http_error(500, "Overloaded."),
        http_error(429, "Slow down.", headers={"Retry-After": "7"}),
        reply("Done."),
    ]
    time = FakeTime()
    with served(script) as fake:
        done = complete(settings_for(fake), time=time)
    assert done.content == "Done."
    assert done.attempts == 3
    assert len(fake.requests) == 3
    assert len(time.waits) == 2
    assert 0 < time.waits[0] <= 1.0  # backoff: 0.5 s plus at most 0.5 s of jitter
    assert time.waits[1] == 7.0  # as the server asked
    assert done.latency_ms >= 7000  # the waits are part of the latency


def test_retry_after_is_capped_and_retry_after_ms_is_read() -> None:
    script: list[Step] = [
        http_error(503, "Busy.", headers={"Retry-After": "3600"}),
        http_error(429, "Slow down.", headers={"retry-after-ms": "1500"}),
        reply("Done."),
    ]
    time = FakeTime()
    with served(script) as fake:
        complete(settings_for(fake, retry_after_cap=5.0, max_total_seconds=100.0), time=time)
    assert time.waits == [5.0, 1.5]


def test_backoff_grows_without_retry_after() -> None:
    time = FakeTime()
    with served([http_error(502, "Bad gateway.")] * 3 + [reply("Done.")]) as fake:
        done = complete(settings_for(fake), time=time)
    assert done.attempts == 4
    assert 0.5 <= time.waits[0] <= 1.0 and 1.0 <= time.waits[1] <= 1.5 and 2.0 <= time.waits[2] <= 2.5


@pytest.mark.parametrize("status", [408, 409, 500, 503, 504])
def test_transient_statuses_are_retried(status: int) -> None:
    with served([http_error(status, "Try again."), reply("Done.")]) as fake:
        done = complete(settings_for(fake))
    assert (done.content, done.attempts) == ("Done.", 2)


@pytest.mark.parametrize(
    ("status", "message"), [(400, "Bad input."), (401, "Wrong key."), (404, "No such model."), (422, "Cannot process.")]
)
def test_other_4xx_are_not_retried(status: int, message: str) -> None:
    time = FakeTime()
    with served([http_error(status, message)]) as fake, pytest.raises(ModelRequestRejected) as rejected:
        complete(settings_for(fake), time=time)
    assert rejected.value.status == status
    assert f"HTTP {status}" in str(rejected.value) and message.rstrip(".") in str(rejected.value)
    assert len(fake.requests) == 1 and time.waits == []


def test_insufficient_quota_is_not_retried() -> None:
    quota = http_error(429, "You exceeded your current quota.", code="insufficient_quota", type="insufficient_quota")
    with served([quota]) as fake, pytest.raises(ModelRequestRejected) as rejected:
        complete(settings_for(fake))
    assert rejected.value.code == "insufficient_quota"
    assert "insufficient_quota" in str(rejected.value) and "You exceeded your current quota" in str(rejected.value)
    assert len(fake.requests) == 1


def test_giving_up_after_the_attempts_names_them_and_the_last_reason() -> None:
    script = [http_error(503, "Busy."), http_error(503, "Busy."), http_error(500, "Still broken.")]
    with served(script) as fake, pytest.raises(ModelUnavailable) as gave_up:
        complete(settings_for(fake, max_attempts=3))
    assert gave_up.value.attempts == 3
    assert "3 attempt" in str(gave_up.value) and "Still broken" in str(gave_up.value) and "500" in str(gave_up.value)
    assert len(fake.requests) == 3


def test_connection_refused_is_unavailable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    time = FakeTime()
    with pytest.raises(ModelUnavailable) as gave_up:
        complete(settings_for(url, max_attempts=2), time=time)
    assert gave_up.value.attempts == 2 and len(time.waits) == 1
    assert url in str(gave_up.value) and "connect" in str(gave_up.value).lower()


def test_a_timeout_is_retried_then_unavailable() -> None:
    with served([slow(reply("late"), 5), slow(reply("late"), 5)]) as fake, pytest.raises(ModelUnavailable) as gave_up:
        complete(settings_for(fake, timeout=0.2, max_attempts=2))
    assert gave_up.value.attempts == 2
    assert "no answer within 0.2 s" in str(gave_up.value)


def test_a_cancelled_completion_stops_at_once_and_is_not_retried() -> None:
    """A caller that gives up (a web client gone) cancels the model call; cancelling is no transport failure."""
    asked, done = threading.Event(), threading.Event()

    def held(request: Request) -> Step:
        asked.set()
        done.wait(10)
        return reply("Too late.")

    async def cancel_while_asking(fake: FakeModel, time: FakeTime) -> None:
        async with ModelClient(settings_for(fake), sleep=time.sleep, clock=time.clock) as client:
            asking = asyncio.create_task(client.complete(HELLO))
            assert await asyncio.to_thread(asked.wait, 10), "the request never reached the fake"
            asking.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asking

    time = FakeTime()
    with served([held]) as fake:
        try:
            asyncio.run(cancel_while_asking(fake, time))
        finally:
            done.set()
    assert len(fake.requests) == 1 and time.waits == []


def test_the_total_time_bound_stops_retrying_before_a_wait_that_would_pass_it() -> None:
    def always_busy(request: Request) -> Any:
        return http_error(503, "Busy.", headers={"Retry-After": "10"})

    time = FakeTime()
    with served(always_busy) as fake, pytest.raises(ModelUnavailable) as gave_up:
        complete(settings_for(fake, max_attempts=10, max_total_seconds=15.0), time=time)
    assert time.waits == [10.0]  # a second wait of 10 s would end 20 s after the start
    assert gave_up.value.attempts == 2 and len(fake.requests) == 2
    assert "15 s" in str(gave_up.value)


def test_an_answer_that_is_not_a_chat_completion_is_unavailable_and_not_retried() -> None:
    with served([raw("<html>Bad gateway</html>"), raw({"choices": []})]) as fake:
        with pytest.raises(ModelUnavailable, match="not a chat completion"):
            complete(settings_for(fake))
        with pytest.raises(ModelUnavailable, match="no choices"):
            complete(settings_for(fake))
    assert len(fake.requests) == 2


def test_a_request_breaking_openais_schema_is_rejected_with_the_reason() -> None:
    with served([reply("never sent")], check=False) as fake, pytest.raises(ModelRequestRejected) as rejected:
        complete(settings_for(fake), [{"role": "wizard", "content": "Abracadabra."}])
    assert rejected.value.status == 400
    assert "role" in str(rejected.value) and "'wizard'" in str(rejected.value)
    assert fake.failures and fake.remaining


def test_errors_are_one_line_sentences() -> None:
    long_reason = "Line one.\nLine two " + "x" * 1000
    with served([http_error(400, long_reason)]) as fake, pytest.raises(ModelError) as rejected:
        complete(settings_for(fake))
    text = str(rejected.value)
    assert "\n" not in text and text.endswith(".") and not text.endswith("..") and len(text) < 500


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_from_env_reads_the_three_variables(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    clean_env.setenv("OPENAI_API_KEY", "sk-env")
    clean_env.setenv("GM_MODEL", "llama3")
    settings = ModelSettings.from_env()
    assert (settings.base_url, settings.api_key, settings.model) == ("http://localhost:11434/v1", "sk-env", "llama3")
    assert (settings.max_attempts, settings.max_total_seconds, settings.retry_after_cap) == (4, 60, 20)
    assert "sk-env" not in repr(settings)


def test_from_env_arguments_win(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://env/v1")
    clean_env.setenv("OPENAI_API_KEY", "sk-env")
    clean_env.setenv("GM_MODEL", "env-model")
    settings = ModelSettings.from_env(base_url="http://flag/v1", api_key="sk-flag", model="flag-model")
    assert (settings.base_url, settings.api_key, settings.model) == ("http://flag/v1", "sk-flag", "flag-model")


def test_a_local_server_needs_no_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:8080/v1")
    clean_env.setenv("OPENAI_API_KEY", "")
    settings = ModelSettings.from_env(model="qwen")
    assert settings.api_key.strip() != ""


def test_openai_itself_needs_only_a_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "sk-real")
    settings = ModelSettings.from_env(model="gpt-4o-mini")
    assert (settings.base_url, settings.api_key) == (None, "sk-real")


def test_no_model_name_says_to_set_gm_model(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_BASE_URL", "http://localhost:8080/v1")
    with pytest.raises(ModelNotConfigured, match="GM_MODEL") as missing:
        ModelSettings.from_env()
    assert "OPENAI_BASE_URL" not in str(missing.value)


def test_no_endpoint_says_to_set_the_url_or_the_key(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("GM_MODEL", "llama3")
    with pytest.raises(ModelNotConfigured) as missing:
        ModelSettings.from_env()
    assert "OPENAI_BASE_URL" in str(missing.value) and "OPENAI_API_KEY" in str(missing.value)
    assert "GM_MODEL" not in str(missing.value)


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(SettingsError, match="max_attempts"):
        ModelSettings(base_url=None, api_key="k", model="m", max_attempts=0)
    with pytest.raises(SettingsError, match="timeout"):
        ModelSettings(base_url=None, api_key="k", model="m", timeout=0)


def test_retry_after_seconds_reads_seconds_dates_and_milliseconds() -> None:
    now = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "2"}, now) == 2.0
    assert retry_after_seconds({"Retry-After": format_datetime(now + timedelta(seconds=30), usegmt=True)}, now) == 30.0
    assert retry_after_seconds({"Retry-After": format_datetime(now - timedelta(seconds=30), usegmt=True)}, now) == 0.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}, now) == 0.25
    assert retry_after_seconds({"Retry-After": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None
