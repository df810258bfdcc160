"""roll_check refuses a roll whose outcome is certain: played through the real client against the fake
model, on SQLite and PostgreSQL. Nothing is rolled or stored, and the refusal counts toward the round's
bounds like any other tool error."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.errors import RoundFailed
from gm.store import RollRecord, Store
from gm.testing import call, reply
from tests.support.rounds import last_tool_result, narrate_roll, roll_mara, table
from tests.support.worlds import HARBOR_DICE, HARBOR_WORLD, write_world

MARA_AT_30 = (
    "at target 30, every roll of Risky attempt for Mara fails (1d20 reads 1 to 20, 4 to 23 with skill +3);"
    " the outcome is certain, so narrate it without a roll, or give a target the dice can reach"
    " (from 0 to 23 for Mara)"
)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def stored_rolls(store: Store) -> list[RollRecord]:
    with store.session() as session:
        return list(session.exec(select(RollRecord)))


def test_a_certain_roll_is_refused_unrolled_and_a_reachable_target_then_rolled(store: Store, harbor: Path) -> None:
    # Mara's 1d20 + 3 against 30 reads -26 to -7: "Critical failure" or "Failure", failed either way.
    script = [roll_mara(30), roll_mara(12), narrate_roll()]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = run(play())
    assert last_tool_result(t.master.requests[1]) == {"error": MARA_AT_30}
    assert result.refusals == [MARA_AT_30]  # counted like any tool error
    [roll] = result.rolls
    assert (roll.target, roll.band) == (12, "Partial success")  # face 11: 11 + 3 - 12 = 2
    assert [stored.target for stored in stored_rolls(store)] == [12]  # nothing was rolled at 30


def test_a_certain_outcome_can_be_narrated_without_a_roll(store: Store, harbor: Path) -> None:
    script = [roll_mara(-20), reply("The lock was never locked; it swings open.")]

    async def play() -> Any:
        async with table(store, script, faces=[]) as t:  # no faces: a roll would fail the test
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I try the door.")

    t, result = run(play())
    error = last_tool_result(t.master.requests[1])["error"]
    assert error.startswith("at target -20, every roll of Risky attempt for Mara succeeds")
    assert result.narration == "The lock was never locked; it swings open." and result.rolls == []
    assert stored_rolls(store) == []


def test_certain_rolls_count_toward_the_rounds_refusals(store: Store, harbor: Path) -> None:
    script = [roll_mara(30 + n) for n in range(4)]  # the default bound is 3 refusals

    async def play() -> Any:
        async with table(store, script, faces=[]) as t:
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed, match="after 4 refusals"):
                await t.game.play(story, "I pick the lock.")
            return story

    story = run(play())
    assert store.rounds(story) == [] and stored_rolls(store) == []


def test_an_absolute_check_is_refused_for_a_character_whose_modifier_makes_it_certain(
    store: Store, tmp_path: Path
) -> None:
    dice = copy.deepcopy(HARBOR_DICE)
    dice["checks"].append(
        {
            "key": "haul",
            "name": "Haul",
            "use": "Hauling a boat ashore.",
            "dice": "1d6",
            "modifier": "skill",
            "bands": [
                {"label": "Too heavy", "max": 3, "result": "failed"},
                {"label": "Ashore", "min": 4, "max": 8, "result": "succeeded"},
                {"label": "Ashore at a run", "min": 9, "result": "succeeded", "critical": True},
            ],
        }
    )
    world = write_world(tmp_path / "haul", HARBOR_WORLD, dice)
    haul = {"check": "haul", "reason": "haul the boat"}
    script = [
        call("roll_check", {**haul, "character": "Mara"}),  # 1d6 + 3 reads 4 to 9: always ashore
        call("roll_check", {**haul, "character": "Jon"}),  # 1d6 - 1 reads 0 to 5: either way
        narrate_roll("Jon strains at the rope."),
    ]

    async def play() -> Any:
        async with table(store, script, faces=[5]) as t:
            story = t.game.start_story(world)
            return t, await t.game.play(story, "We haul the boat ashore.")

    t, result = run(play())
    assert last_tool_result(t.master.requests[1]) == {
        "error": "every roll of Haul for Mara succeeds (1d6 reads 1 to 6, 4 to 9 with skill +3);"
        " the outcome is certain, so narrate it without a roll"
    }
    assert [(roll.character, roll.band) for roll in result.rolls] == [("Jon", "Ashore")]
    assert len(result.refusals) == 1
