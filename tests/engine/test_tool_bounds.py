"""Bounds on what a model may pass to the tools (issue 10, defect 4), through the real client, on both databases.

A target beyond ±1,000,000, arguments nested thousands deep, or strings longer than the documented
bounds come back to the model as a tool error it can act on; the round then goes on, and nothing it
sent is stored.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.engine.referee import MAX_NARRATION
from gm.engine.tools.offered import MAX_REASON, MAX_TARGET
from gm.store import Attempt, RollRecord, Store
from gm.testing import Step, call, reply
from tests.support.rounds import narrate_roll, roll_mara, table, tool_results
from tests.support.worlds import write_world


def check_call(**changes: Any) -> Step:
    arguments = {"check": "attempt", "character": "Mara", "target": 12, "reason": "pick the lock", **changes}
    return call("roll_check", arguments)


def written(target: str) -> Step:
    """A roll_check call whose target is written as is (JSON numbers Python would turn into floats)."""
    return call("roll_check", '{"check": "attempt", "character": "Mara", "target": ' + target + ', "reason": "x"}')


def deep(levels: int) -> str:
    return '{"check": "attempt", "character": "Mara", "target": 12, "reason": ' + "[" * levels + "]" * levels + "}"


HOSTILE: dict[str, tuple[Step, str]] = {
    "target 2**31": (check_call(target=2**31), "target"),
    "target 10**20": (check_call(target=10**20), "target"),
    "target -10**20": (check_call(target=-(10**20)), "target"),
    "target 1e300": (written("1e300"), "target"),
    "target 1e400": (written("1e400"), "target"),
    "target NaN": (written("NaN"), "NaN"),
    "target one past the bound": (check_call(target=MAX_TARGET + 1), "target"),
    "nested 100,000 deep": (call("roll_check", deep(100_000)), "nested"),
    "nested 900 deep": (call("roll_check", deep(900)), "nested"),
    "a 1 MB reason": (check_call(reason="x" * 1_000_000), "reason"),
    "a 1 MB notation": (call("roll_dice", {"notation": "1d6+" * 250_000, "reason": "x"}), "notation"),
    "a 1 MB tool name": (call("r" * 1_000_000, {}), "no tool"),
    "a huge roll id": (
        call("narrate", {"narration": "x", "outcomes": [{"character": "Mara", "result": "failed", "roll": 10**20}]}),
        "most allowed",
    ),
}


def honest(request: dict[str, Any]) -> Step:
    """After the hostile call: roll properly, then narrate the roll."""
    if any("band" in result for result in tool_results(request)):
        return narrate_roll()(request)
    return roll_mara()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_out_of_bounds_arguments_are_a_tool_error(store: Store, tmp_path: Path, name: str) -> None:
    hostile, words = HOSTILE[name]

    async def play() -> None:
        async with table(store, [hostile, honest, honest], faces=[11]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            result = await played.game.play(story, "I pick the lock.")
            [error] = [r["error"] for r in tool_results(played.master.requests[1]) if "error" in r]
            assert words in error, error
            assert len(error) < 400  # the model's own text is not sent back to it at length
            assert result.refusals == [error]
            [roll] = result.rolls
            assert (roll.target, type(roll.target)) == (12, int)
            played.master.assert_done()

    asyncio.run(play())
    with store.session() as session:
        assert [attempt.status for attempt in session.exec(select(Attempt))] == ["accepted"]
        [roll] = session.exec(select(RollRecord))
        assert roll.target == 12 and roll.reason == "pick the lock"


def test_a_whole_target_written_as_a_fraction_is_stored_as_a_whole_number(store: Store, tmp_path: Path) -> None:
    async def play() -> None:
        async with table(store, [check_call(target=12.0), narrate_roll()], faces=[11]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            result = await played.game.play(story, "I pick the lock.")
            assert result.refusals == []

    asyncio.run(play())
    with store.session() as session:
        [roll] = session.exec(select(RollRecord))
        assert roll.target == 12 and type(roll.target) is int


@pytest.mark.parametrize("how", ["narrate", "plain"])
def test_a_narration_over_the_bound_is_refused(store: Store, tmp_path: Path, how: str) -> None:
    long = "The tide rises. " * (MAX_NARRATION // 16 + 1)
    if how == "narrate":
        hostile, fine = (call("narrate", {"narration": text, "outcomes": []}) for text in (long, "The tide rises."))
    else:
        hostile, fine = reply(long), reply("The tide rises.")

    async def play() -> None:
        async with table(store, [hostile, fine]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            result = await played.game.play(story, "I wait.")
            assert result.narration == "The tide rises."
            [refusal] = result.refusals
            assert f"{MAX_NARRATION:,}" in refusal or str(MAX_NARRATION) in refusal, refusal

    asyncio.run(play())


def test_the_bounds_are_in_the_tool_schemas(harbor: Path) -> None:
    from gm.engine.tools.offered import tool_schemas
    from gm.world.loading import load_world

    tools = {
        tool["function"]["name"]: tool["function"]["parameters"]["properties"]
        for tool in tool_schemas(load_world(harbor))
    }
    assert (tools["roll_check"]["target"]["minimum"], tools["roll_check"]["target"]["maximum"]) == (
        -MAX_TARGET,
        MAX_TARGET,
    )
    assert tools["roll_check"]["reason"]["maxLength"] == tools["roll_dice"]["reason"]["maxLength"] == MAX_REASON
    assert tools["roll_dice"]["notation"]["maxLength"] == 100
    assert tools["narrate"]["narration"]["maxLength"] == MAX_NARRATION
