"""Rounds played end to end through each server's documented response shapes (gm.testing.shapes).

Each shape is served verbatim by the fake over HTTP to the real openai client, and the round is
played by the real engine: the check is rolled, its band read, the narration judged and stored and
remembered. Every request the fake receives is checked against OpenAI's request schema, so a
rewritten message (a call read from text, a generated id, a prompted request) that breaks it fails
here. Nothing of the model's reasoning may reach the story, the memory, the transcript, or any
later request.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gm.engine.transcript import transcript
from gm.models.client import decided_tool_mode
from gm.store import Store
from gm.testing.shapes import NARRATION, SHAPES, THINKING, Shape, round_script
from gm.transcript.shapes import OutcomePublic
from tests.support.rounds import table

ROLLED = [name for name, shape in SHAPES.items() if shape.plain is None]
PLAIN = [name for name, shape in SHAPES.items() if shape.plain is not None]


def play(store: Store, harbor: Path, shape: Shape, tools: Any = "auto") -> tuple[Any, Any, str]:
    script = round_script(shape)

    async def go() -> tuple[Any, Any, str]:
        async with table(store, script, script, judge=script, faces=[11], transport="http", tools=tools) as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(story, "I pick the lock.")
            return t, result, story

    return asyncio.run(go())


def assert_no_reasoning(store: Store, story: str, *requests: list[dict[str, Any]]) -> None:
    kept = json.dumps(transcript(store, story).model_dump(mode="json"))
    kept += json.dumps([memory.summary for memory in store.memories(story)])
    assert THINKING not in kept and "<think" not in kept
    for request in [r for each in requests for r in each]:
        sent = json.dumps(request)
        assert THINKING not in sent and "reasoning_content" not in sent and '"reasoning"' not in sent


@pytest.mark.parametrize("name", ROLLED)
def test_a_round_is_played_through_each_shape(store: Store, harbor: Path, name: str) -> None:
    shape = SHAPES[name]
    t, result, story = play(store, harbor, shape)
    [roll] = result.rolls
    assert result.narration == NARRATION and result.refusals == []
    assert result.outcomes == [OutcomePublic(character="Mara", result="partial", roll=roll.id)]
    assert result.judge is not None and [v.told_as for v in result.judge.verdicts] == ["partial"]
    assert store.story(story).rounds == 1 and [m.summary for m in store.memories(story)] == ["Mara worked the lock."]
    assert decided_tool_mode(t.master.base_url, t.master.model) == shape.mode
    assert_no_reasoning(store, story, t.master.requests, t.judge.requests, t.keeper.requests)
    last = t.master.requests[-1]  # the request after the narrate call: the whole conversation, sent back
    if shape.mode == "native":
        [roll_call] = [m for m in last["messages"] if m["role"] == "assistant" and m.get("tool_calls")][:1]
        [answer] = [m for m in last["messages"] if m["role"] == "tool"]
        assert roll_call["tool_calls"][0]["id"] and answer["tool_call_id"] == roll_call["tool_calls"][0]["id"]
        assert json.loads(roll_call["tool_calls"][0]["function"]["arguments"])["check"] == "attempt"
    else:
        assert "tools" in t.master.requests[0]  # asked natively once, refused, then prompted from then on
        assert all("tools" not in r for r in t.master.requests[1:])
        assert "# Tools" in last["messages"][0]["content"]
        assert all(m["role"] in ("system", "user", "assistant") for m in last["messages"])


@pytest.mark.parametrize("name", PLAIN)
def test_reasoning_before_a_plain_narration_never_reaches_the_story(store: Store, harbor: Path, name: str) -> None:
    t, result, story = play(store, harbor, SHAPES[name])
    assert result.narration == NARRATION and result.rolls == [] and result.refusals == []
    assert_no_reasoning(store, story, t.master.requests, t.keeper.requests)


@pytest.mark.parametrize("name", ["hermes-text", "fenced-json", "bare-json", "llama3-python_tag"])
def test_tools_prompted_plays_each_form_of_text_call(store: Store, harbor: Path, name: str) -> None:
    t, result, story = play(store, harbor, SHAPES[name], tools="prompted")
    assert result.narration == NARRATION and result.refusals == [] and len(result.rolls) == 1
    assert all("tools" not in request for request in t.master.requests)
    assert_no_reasoning(store, story, t.master.requests)


def test_a_server_refusing_tools_with_tools_native_says_what_to_change(store: Store, harbor: Path) -> None:
    from gm.errors import ModelRequestRejected

    with pytest.raises(ModelRequestRejected, match="takes no tools, so play with --tools prompted"):
        play(store, harbor, SHAPES["ollama-no-tools"], tools="native")


def test_a_call_to_no_round_tool_written_as_text_stays_text_and_is_refused_as_raw_data(
    store: Store, harbor: Path
) -> None:
    from gm.testing import reply

    written = '<tool_call>{"name": "cast_spell", "arguments": {"spell": "fireball"}}</tool_call>'
    script = [reply(written), reply("The harbour is quiet; no spell answers.")]

    async def go() -> Any:
        async with table(store, script, transport="http") as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I cast a fireball.")

    t, result = asyncio.run(go())
    assert result.narration == "The harbour is quiet; no spell answers." and result.rolls == []
    assert result.refusals == [
        "the narration shows raw tool data; tell the story in prose and leave the JSON out; answer again."
    ]
    assert t.master.requests[1]["messages"][-2] == {"role": "assistant", "content": written}  # sent back as text


def test_with_tools_prompted_narrating_before_the_band_is_refused_the_same(store: Store, harbor: Path) -> None:
    from gm.testing.shapes import written

    honest = round_script(SHAPES["hermes-text"])
    guess = {"narration": "It half gives.", "outcomes": [{"character": "Mara", "result": "partial", "roll": 1}]}
    rolling = {"check": "attempt", "character": "Mara", "target": 12, "reason": "pick the lock"}
    first = written([("roll_check", rolling), ("narrate", guess)], "hermes")
    answers = iter([first])

    def script(request: dict[str, Any]) -> Any:
        if "# Tools" in request["messages"][0]["content"] and len(request["messages"]) == 2:
            return next(answers)  # the round's first game-master request
        return honest(request)

    async def go() -> Any:
        async with table(store, script, script, judge=script, faces=[11], transport="http", tools="prompted") as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = asyncio.run(go())
    [roll] = result.rolls
    assert roll.id == 1 and result.refusals == [
        "narrate was refused: (1) you narrated before seeing roll 1's band; read it, then narrate. Call narrate again."
    ]
    assert result.narration == NARRATION and result.outcomes[0].result == "partial"
    told = t.master.requests[1]["messages"]
    assert [m["role"] for m in told[-3:]] == ["assistant", "user", "user"]  # the calls, then each result as text
    assert "before seeing roll 1's band" in told[-1]["content"]
