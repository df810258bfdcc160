"""The story's clock in play, on SQLite and PostgreSQL: advance_time, the rounds' stored times, the prompt,
memory and the transcript. The calendar world starts at "Threeday, 11 Bloom 311 AL, 19:30 (day)"."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from gm.engine.transcript import render_transcript, transcript
from gm.errors import RoundFailed
from gm.store import Store
from gm.testing import call, reply
from tests.support.rounds import last_tool_result, narrate_roll, roll_mara, table
from tests.support.worlds import CALENDAR, HARBOR_WORLD, write_world

HOUR = 60


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


@pytest.fixture
def calendar_world(tmp_path: Path) -> Path:
    return write_world(tmp_path / "bloom", {**copy.deepcopy(HARBOR_WORLD), "calendar": CALENDAR})


def wait(amount: int, unit: str = "hours") -> Any:
    return call("advance_time", {"amount": amount, "unit": unit, "reason": "waiting"})


def test_advance_time_moves_the_story_and_each_round_keeps_its_end(store: Store, calendar_world: Path) -> None:
    script = [wait(3), reply("Night comes down on the quay."), reply("You watch the water."), wait(1, "days")]
    script.append(reply("A day goes by."))

    async def play() -> Any:
        async with table(store, script) as t:
            story = t.game.start_story(calendar_world)
            first = await t.game.play(story, "I wait until dark.")
            second = await t.game.play(story, "I look around.")
            third = await t.game.play(story, "I wait a day.")
            return t, story, (first, second, third)

    t, story, results = run(play())
    assert last_tool_result(t.master.requests[1]) == {
        "now": "Threeday, 11 Bloom 311 AL, 22:30 (night)",
        "passed": "3 hours",
    }
    assert [result.clock for result in results] == [3 * HOUR, 3 * HOUR, 27 * HOUR]
    assert results[0].time == "Threeday, 11 Bloom 311 AL, 22:30 (night)"
    assert results[2].time == "Fourday, 12 Bloom 311 AL, 22:30 (night)"
    assert store.story(story).clock == 27 * HOUR
    data = transcript(store, story)
    assert data.story.time == "Fourday, 12 Bloom 311 AL, 22:30 (night)"
    assert [(r.clock, r.time) for r in data.rounds] == [(r.clock, r.time) for r in results]
    text = render_transcript(data)
    assert "Now: Fourday, 12 Bloom 311 AL, 22:30 (night)" in text
    assert "  [time] Threeday, 11 Bloom 311 AL, 22:30 (night)" in text


def test_the_game_master_is_told_the_time_and_the_calendar(store: Store, calendar_world: Path) -> None:
    async def play() -> Any:
        async with table(store, [wait(2), reply("Later."), reply("Still later.")]) as t:
            story = t.game.start_story(calendar_world)
            await t.game.play(story, "I wait.")
            await t.game.play(story, "I wait more.")
            return t

    t = run(play())
    first, later = t.master.requests[0], t.master.requests[2]
    assert (
        "It is now Threeday, 11 Bloom 311 AL, 19:30 (day) (0 minutes since the story began)."
        in first["messages"][0]["content"]
    )
    assert "Years of 30 days in 3 months" in first["messages"][0]["content"]
    assert "It is now Threeday, 11 Bloom 311 AL, 21:30 (night)" in later["messages"][0]["content"]
    offered = [tool["function"]["name"] for tool in first["tools"]]
    assert offered == ["roll_check", "roll_dice", "advance_time", "narrate"]
    parameters = first["tools"][2]["function"]["parameters"]
    assert parameters["properties"]["unit"]["enum"] == ["minutes", "hours", "days"]
    assert parameters["required"] == ["amount", "unit", "reason"]


def test_bad_advance_time_arguments_come_back_to_the_model_and_the_clock_stays(
    store: Store, calendar_world: Path
) -> None:
    script = [wait(-1), wait(31, "days"), call("advance_time", {"amount": 2, "unit": "weeks", "reason": "x"}), wait(2)]
    script.append(reply("Two hours pass."))

    async def play() -> Any:
        async with table(store, script) as t:
            story = t.game.start_story(calendar_world)
            return t, await t.game.play(story, "I wait.")

    t, result = run(play())
    errors = [last_tool_result(request).get("error", "") for request in t.master.requests[1:4]]
    assert "never goes backwards" in errors[0]
    assert "at most 30 days" in errors[1]
    assert "advance_time: unit" in errors[2]  # the tool's schema names the units
    assert len(result.refusals) == 3 and result.clock == 2 * HOUR


def test_a_failed_round_leaves_the_time_where_it_was(store: Store, calendar_world: Path) -> None:
    script = [wait(5), roll_mara(), reply("Lies."), reply("Lies."), reply("Lies."), reply("Lies.")]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(calendar_world)
            with pytest.raises(RoundFailed):
                await t.game.play(story, "I wait, then pick the lock.")
            return story

    story = run(play())
    assert store.story(story).clock == 0 and store.rounds(story) == []


def test_a_round_told_again_starts_from_when_the_round_before_it_ended(store: Store, calendar_world: Path) -> None:
    script = [wait(2), reply("Dusk."), wait(1), roll_mara(), narrate_roll(), wait(4), roll_mara()]
    script.append(narrate_roll("Again, slowly."))

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(calendar_world)
            await t.game.play(story, "I wait.")
            played = await t.game.play(story, "I wait, then pick the lock.")
            again = await t.game.regenerate(story)
            return t, story, played, again

    t, story, played, again = run(play())
    assert played.clock == 3 * HOUR
    # The new telling starts at 21:30, where round 1 ended, not at 22:30, where the first telling left it.
    assert last_tool_result(t.master.requests[-2])["now"] == "Fourday, 12 Bloom 311 AL, 01:30 (night)"
    assert again.clock == 6 * HOUR and store.story(story).clock == 6 * HOUR
    assert [r.clock for r in store.rounds(story)] == [2 * HOUR, 6 * HOUR]


def test_memory_summaries_carry_the_date(store: Store, calendar_world: Path) -> None:
    async def play() -> Any:
        async with table(store, [wait(1), reply("An hour passes.")]) as t:
            story = t.game.start_story(calendar_world)
            await t.game.play(story, "I wait.")
            await t.game.settle()
            return story

    story = run(play())
    [entry] = store.memories(story)
    assert entry.summary == "On Threeday, 11 Bloom 311 AL, 20:30 (night): Mara worked the lock."
    assert entry.clock == HOUR


def test_a_world_without_a_calendar_has_no_time_tool_and_no_time(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [wait(2), reply("The fog stays.")]) as t:
            story = t.game.start_story(harbor)
            return t, story, await t.game.play(story, "I wait.")

    t, story, result = run(play())
    assert "advance_time" not in [tool["function"]["name"] for tool in t.master.requests[0]["tools"]]
    assert "no tool 'advance_time'" in last_tool_result(t.master.requests[1])["error"]
    assert "It is now" not in t.master.requests[0]["messages"][0]["content"]
    assert (result.clock, result.time, store.story(story).clock) == (None, None, None)
    assert transcript(store, story).story.time is None
    [entry] = store.memories(story)
    assert entry.summary == "Mara worked the lock." and entry.clock is None
