"""How the model client sends tools: native, prompted, or decided once per endpoint and model (auto)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from gm.errors import ModelNotConfigured, ModelRequestRejected
from gm.models.client import Completion, ModelClient, ModelSettings, ToolsMode, decided_tool_mode
from gm.testing import Script, fake_model, http_error, reply
from gm.testing.shapes import no_tools
from tests.support.paths import OPENAI_SCHEMAS

HELLO = [{"role": "system", "content": "You are the game master."}, {"role": "user", "content": "I pick the lock."}]
TOOL = {
    "type": "function",
    "function": {
        "name": "roll_check",
        "description": "Roll a check.",
        "parameters": {"type": "object", "properties": {"check": {"type": "string"}}, "required": ["check"]},
    },
}
WRITTEN = '<tool_call>{"name": "roll_check", "arguments": {"check": "lock"}}</tool_call>'


class Recorder:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def played(script: Script, mode: ToolsMode, times: int = 2) -> tuple[list[Completion], Any, ModelClient, Recorder]:
    """`times` completions with the tool through one client; the fake checks every request against the schema."""
    recorder = Recorder()
    schema = OPENAI_SCHEMAS / "chat-completion-request.schema.json"
    with fake_model(script, request_schema=schema) as fake:
        client = ModelClient(ModelSettings(fake.base_url, "k", fake.model, tools=mode), sleep=recorder.sleep)

        async def run() -> list[Completion]:
            async with client:
                return [await client.complete(HELLO, tools=[TOOL]) for _ in range(times)]

        done = asyncio.run(run())
    return done, fake, client, recorder


@pytest.mark.parametrize("server", ["ollama", "vllm", "llamacpp"])
def test_auto_asks_again_prompted_when_tools_are_refused_and_remembers_it(server: Any) -> None:
    done, fake, client, recorder = played([no_tools(server), reply(WRITTEN), reply(WRITTEN)], "auto")
    assert [c.tool_calls[0].name for c in done] == ["roll_check", "roll_check"]
    assert all(c.written_calls for c in done)
    assert ["tools" in r for r in fake.requests] == [True, False, False]  # refused once, then never offered again
    assert recorder.waits == []  # a refusal of tools is not retried, even llama.cpp's 500
    assert client.tool_mode == "prompted" == decided_tool_mode(fake.base_url, fake.model)
    assert "# Tools" in fake.requests[1]["messages"][0]["content"] and len(fake.requests[1]["messages"]) == 2


def test_auto_keeps_native_once_tools_worked() -> None:
    call = {"check": "lock"}
    from gm.testing import call as tool_call

    done, fake, client, _ = played([tool_call("roll_check", call), reply("It opens.")], "auto")
    assert done[0].tool_calls[0].arguments == json.dumps(call) and not done[0].written_calls
    assert all("tools" in r for r in fake.requests) and client.tool_mode == "native"


def test_prompted_never_offers_tools() -> None:
    done, fake, client, _ = played([reply(WRITTEN)], "prompted", times=1)
    assert done[0].tool_calls[0].name == "roll_check" and "tools" not in fake.requests[0]
    assert client.tool_mode == "prompted" and decided_tool_mode(fake.base_url, fake.model) is None


def test_native_reports_a_refusal_saying_what_to_change() -> None:
    with pytest.raises(ModelRequestRejected) as caught:
        played([no_tools("ollama")], "native", times=1)
    assert caught.value.tools_refused and str(caught.value).endswith(
        "it takes no tools, so play with --tools prompted (or GM_TOOLS=prompted)."
    )


def test_a_400_about_something_else_is_not_a_refusal_of_tools() -> None:
    with pytest.raises(ModelRequestRejected) as caught:
        played([http_error(400, "maximum context length is 4096 tokens")], "auto", times=1)
    assert not caught.value.tools_refused and "prompted" not in str(caught.value)


def test_gm_tools_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("GM_MODEL", "m")
    monkeypatch.setenv("GM_TOOLS", "Prompted")
    assert ModelSettings.from_env().tools == "prompted"
    assert ModelSettings.from_env(tools="native").tools == "native"  # the flag wins
    monkeypatch.delenv("GM_TOOLS")
    assert ModelSettings.from_env().tools == "auto"
    monkeypatch.setenv("GM_TOOLS", "sometimes")
    with pytest.raises(ModelNotConfigured, match=r"^GM_TOOLS must be native, prompted or auto, not 'sometimes'\.$"):
        ModelSettings.from_env()
