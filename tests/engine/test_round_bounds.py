"""Bounds on what one model message and one round may ask for (issue 40, hole 6): a message of more tool calls
than `MAX_TOOL_CALLS` runs none of them, and a round rolls at most `MAX_ROLLS` times; each is refused with a
sentence the model can act on, and the round goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gm.engine.round import RoundResult
from gm.engine.settings import RoundSettings
from gm.engine.tools.running import MAX_ROLLS, MAX_TOOL_CALLS
from gm.store import Store
from gm.testing import calls, reply
from tests.support.rounds import table

DICE = ("roll_dice", {"notation": "1d6", "reason": "how many gulls"})


@pytest.mark.slow
def test_a_message_of_twenty_thousand_tool_calls_runs_none(store: Store, harbor: Path) -> None:
    script = [calls([DICE] * 20_000), reply("The gulls wheel over the harbour.")]

    async def play() -> tuple[str, RoundResult]:
        async with table(store, script) as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(story, "I count the gulls.")
            assert isinstance(result, RoundResult)
            return story, result

    story, result = asyncio.run(play())
    assert result.narration == "The gulls wheel over the harbour." and result.rolls == []
    assert store.story_rolls(story) == []
    [refusal] = result.refusals
    assert f"Your message made 20,000 tool calls; at most {MAX_TOOL_CALLS} are run" in refusal


def test_a_round_rolls_at_most_max_rolls(store: Store, harbor: Path) -> None:
    per_message = MAX_TOOL_CALLS
    messages = -(-(MAX_ROLLS + 5) // per_message)  # enough messages to pass the bound
    script = [*(calls([DICE] * per_message) for _ in range(messages)), reply("The gulls wheel over the harbour.")]
    settings = RoundSettings(max_refusals=per_message * messages, max_model_calls=messages + 2)

    async def play() -> tuple[str, RoundResult]:
        async with table(store, script, settings=settings) as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(story, "I count the gulls.")
            assert isinstance(result, RoundResult)
            return story, result

    story, result = asyncio.run(play())
    assert len(store.story_rolls(story)) == MAX_ROLLS == len(result.rolls)
    refused = per_message * messages - MAX_ROLLS
    assert len(result.refusals) == refused
    assert result.refusals[0] == (
        f"this round has made {MAX_ROLLS} rolls, the most one round may; nothing more was rolled."
        " Narrate the round with the rolls it has"
    )
