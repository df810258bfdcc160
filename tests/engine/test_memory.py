"""The memory keeper and what the game master is shown of the past."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from gm.engine.memory import FOLD_AFTER, KEEP_AFTER_FOLD
from gm.engine.prompt import VERBATIM_ROUNDS
from gm.store import Store
from gm.testing import reply
from tests.support.rounds import last_tool_result, narrate_roll, roll_mara, table
from tests.support.worlds import HARBOR_DICE, HARBOR_WORLD, write_world


def is_fold(request: dict[str, Any]) -> bool:
    return "running summary" in request["messages"][0]["content"]


def keeper(request: dict[str, Any]) -> Any:
    if is_fold(request):
        return reply("FOLDED: Mara is inside the harbour office.")
    number = request["messages"][1]["content"].split("Player: round ")[1].split(".")[0]
    return reply(f"Summary of round {number}.")


def test_the_prompt_shows_the_world_the_checks_and_the_player_text(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [reply("Fog.")]) as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "I look for a way in.")
            return t.master.requests[0]["messages"]

    messages = run(play())
    system = messages[0]["content"]
    assert "The Harbour Job" in system and "Salt-rotten Port Vey" in system and "Keep it tense" in system
    assert "Mara (player)" in system and "skill 3" in system and "Jon (npc)" in system
    assert "attempt (Risky attempt)" in system and "Needs a target" in system and "notice (Notice)" in system
    assert messages[-1] == {"role": "user", "content": "I look for a way in."}


def test_older_rounds_are_remembered_with_rolls_from_the_database(store: Store, harbor: Path) -> None:
    rounds = VERBATIM_ROUNDS + 2
    script: list[Any] = [roll_mara(), narrate_roll("Round 1 narration.")]
    script += [reply(f"Round {n} narration.") for n in range(2, rounds + 2)]

    async def play() -> Any:
        async with table(store, script, keeper, faces=[11]) as t:
            story = t.game.start_story(harbor)
            for number in range(1, rounds + 2):
                await t.game.play(story, f"round {number}.")
                await t.game.settle()
            return t.master.requests[-1]["messages"]

    messages = run(play())
    memory = messages[1]["content"]
    # round 1's summary is shown with its roll in words, taken from the stored roll, not the summary
    assert "Round 1: Summary of round 1. [Dice: attempt for Mara: Partial success (partial)]" in memory
    verbatim = [m["content"] for m in messages if m["role"] == "assistant"]
    assert verbatim == [f"Round {n} narration." for n in range(rounds + 1 - VERBATIM_ROUNDS, rounds + 1)]
    # a verbatim round is not also summarised
    assert f"Round {rounds}:" not in memory


def test_old_summaries_are_folded_so_the_prompt_stops_growing(store: Store, harbor: Path) -> None:
    total = FOLD_AFTER + VERBATIM_ROUNDS + 8
    script = [reply(f"Narration {n}.") for n in range(1, total + 1)]

    async def play() -> Any:
        async with table(store, script, keeper) as t:
            story = t.game.start_story(harbor)
            for number in range(1, total + 1):
                await t.game.play(story, f"round {number}.")
                await t.game.settle()
            return story, t

    story, t = run(play())
    folds = [request for request in t.keeper.requests if is_fold(request)]
    assert folds, "no fold happened"
    state = store.story(story)
    assert state.summary == "FOLDED: Mara is inside the harbour office."
    unfolded = store.memories(story, after=state.summary_through)
    assert KEEP_AFTER_FOLD <= len(unfolded) <= FOLD_AFTER
    last_prompt = t.master.requests[-1]["messages"]
    assert "FOLDED: Mara is inside" in last_prompt[1]["content"]
    sizes = [len(str(request["messages"])) for request in t.master.requests]
    # once folding has started, the prompt stays within a band instead of growing with the story
    steady = sizes[FOLD_AFTER + VERBATIM_ROUNDS + 1 :]
    assert max(steady) < 1.3 * min(steady)


def test_a_void_roll_is_reported_and_settles_nothing(store: Store, tmp_path: Path) -> None:
    dice = copy.deepcopy(HARBOR_DICE)
    dice["checks"][0]["bands"] = [
        {"label": "Failure", "max": -1, "result": "failed"},
        {"label": "Success", "min": 3, "result": "succeeded"},
    ]
    world = write_world(tmp_path / "gappy", HARBOR_WORLD, dice)

    async def play() -> Any:
        # face 10: 10 + 3 - 12 = 1, which no band holds
        async with table(store, [roll_mara(), reply("The lock neither gives nor holds.")], faces=[10]) as t:
            story = t.game.start_story(world)
            result = await t.game.play(story, "I pick the lock.")
            return t, result

    t, result = run(play())
    told = last_tool_result(t.master.requests[1])
    assert "error" not in told and told["void"] is True  # an ordinary result: no one's mistake
    assert "'attempt'" in told["message"] and "value 1" in told["message"] and "void" in told["message"]
    [roll] = result.rolls
    assert roll.void and roll.value == 1 and roll.band is None
    assert result.refusals == []  # a void roll is not the model's fault


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)
