"""Rounds against fake models, on SQLite and PostgreSQL: in process, and end to end over HTTP where a
test says `transport="http"` (the real openai client; retries and raw answers need it).

The harbour world's `attempt` check is 1d20 + skill over a target; Mara's skill is 3. With the
target 12, a face of 11 reads 11 + 3 - 12 = 2: "Partial success"; a face of 20 reads 11:
"Critical success"; a face of 1 reads -8: "Failure".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.engine.round import PlayerRoll, RoundSettings
from gm.errors import RoundFailed, StoryBusy
from gm.store import Attempt, RollRecord, Store
from gm.testing import call, calls, http_error, length, raw, reply, tool_call
from gm.transcript.shapes import OutcomePublic, RoundPublic
from tests.support.rounds import last_tool_result, narrate_roll, roll_mara, table, tool_results


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def stored_rolls(store: Store) -> list[RollRecord]:
    with store.session() as session:
        from sqlmodel import select

        return list(session.exec(select(RollRecord)))


def attempts(store: Store) -> list[Attempt]:
    with store.session() as session:
        from sqlmodel import select

        return list(session.exec(select(Attempt)))


def test_an_honest_round_is_stored_with_its_rolls_and_remembered(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [roll_mara(), narrate_roll()], faces=[11], transport="http") as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(story, "I pick the lock.")
            await t.game.settle()
            return t, story, result

    t, story, result = run(play())
    assert result.narration == "The lock gives with a soft click."
    [roll] = result.rolls
    assert (roll.faces, roll.total, roll.value, roll.band, roll.result) == (
        [[11]],
        11,
        2,
        "Partial success",
        "partial",
    )
    assert result.outcomes == [OutcomePublic(character="Mara", result="partial", roll=roll.id)]
    assert result.refusals == [] and result.model_calls == 3  # two of the game master's, one of the judge's
    # the model learned the band, never the number
    tool_json = json.dumps(tool_results(t.master.requests[1]))
    assert "Partial success" in tool_json and '"total"' not in tool_json and "11" not in tool_json
    [record] = store.rounds(story)
    assert RoundPublic.from_record(record, t.game.world(story)).rolls == result.rolls and record.memory_written
    [memory] = store.memories(story)
    assert memory.rolls == record.rolls  # copied from the database, not from the keeper's words
    assert memory.summary == "Mara worked the lock."
    purposes = [call_.purpose for call_ in store.model_calls(story)]
    assert purposes == ["game_master", "game_master", "judge", "memory"]


def test_a_round_without_a_roll_can_end_in_plain_text(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [reply("The harbour smells of tar and rain.")], transport="http") as t:
            story = t.game.start_story(harbor)
            return story, await t.game.play(story, "I look around.")

    story, result = run(play())
    assert result.narration == "The harbour smells of tar and rain."
    assert result.model_calls == 1 and result.rolls == [] and result.outcomes == []
    assert store.story(story).rounds == 1


def test_narrating_the_opposite_once_is_refused_then_corrected(store: Store, harbor: Path) -> None:
    script = [roll_mara(), narrate_roll("It opens at once.", "succeeded"), narrate_roll()]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(harbor)
            return t, story, await t.game.play(story, "I pick the lock.")

    t, story, result = run(play())
    assert result.narration == "The lock gives with a soft click."
    [refusal] = result.refusals
    assert "'partial'" in refusal and "'succeeded'" in refusal and "Mara" in refusal
    assert "error" in last_tool_result(t.master.requests[2])  # the model was told why
    assert "It opens at once." not in json.dumps([r.narration for r in store.rounds(story)])


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda outcomes: outcomes + outcomes, "named by outcomes 1 and 2"),  # one roll named twice
        (lambda outcomes: [{**outcomes[0], "roll": None}], "does not name"),  # the outcome ignores the roll
        (lambda outcomes: [], "serves no outcome"),  # the outcome forgotten
        (lambda outcomes: [{**outcomes[0], "roll": 9999}], "not rolled this round"),  # an invented roll id
        (lambda outcomes: [{**outcomes[0], "character": "Jon"}], "rolled for Mara, not Jon"),
    ],
)
def test_each_kind_of_bad_ending_is_refused(store: Store, harbor: Path, change: Any, words: str) -> None:
    script = [
        roll_mara(),
        narrate_roll(change=lambda outcomes: [{k: v for k, v in o.items() if v is not None} for o in change(outcomes)]),
        narrate_roll(),
    ]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(harbor)
            return await t.game.play(story, "I pick the lock.")

    result = run(play())
    assert len(result.refusals) == 1 and words in result.refusals[0], result.refusals
    assert result.outcomes[0].result == "partial"


def test_bad_tool_calls_come_back_as_errors_the_model_can_act_on(store: Store, harbor: Path) -> None:
    script = [
        call("roll_check", '{"check": "attempt", "character": "Mara", '),  # malformed JSON
        call("cast_spell", {"spell": "fireball"}),  # no such tool
        call("roll_check", {"check": "attempt", "character": "Mara", "reason": "x"}),  # target missing
        call("roll_check", {"check": "attempt", "character": "The Warden", "target": 5, "reason": "x"}),
        roll_mara(),
        narrate_roll(),
    ]

    async def play() -> Any:
        async with table(store, script, faces=[11], settings=RoundSettings(max_refusals=5)) as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(story, "I pick the lock.")
            return t, result

    t, result = run(play())
    errors = [last_tool_result(request)["error"] for request in t.master.requests[1:5]]
    assert "not valid JSON" in errors[0]
    assert "no tool 'cast_spell'" in errors[1] and "roll_check" in errors[1]
    assert "needs a target" in errors[2]
    assert "The Warden" in errors[3] and "skill" in errors[3]
    assert len(result.refusals) == 4 and len(result.rolls) == 1


def test_plain_text_after_a_roll_is_refused_and_the_model_told_to_narrate(store: Store, harbor: Path) -> None:
    script = [roll_mara(), reply("The lock gives."), narrate_roll()]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = run(play())
    assert "narrate" in t.master.requests[2]["messages"][-1]["content"]
    assert result.narration == "The lock gives with a soft click." and len(result.refusals) == 1


def test_text_beside_a_tool_call_never_reaches_the_player(store: Store, harbor: Path) -> None:
    script = [
        call(
            "roll_check",
            {"check": "attempt", "character": "Mara", "target": 12, "reason": "x"},
            content="(rolling a 20!)",
        ),
        narrate_roll(),
    ]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(harbor)
            return await t.game.play(story, "I pick the lock.")

    result = run(play())
    assert "rolling" not in result.narration


def test_several_tool_calls_in_one_message_run_in_order(store: Store, harbor: Path) -> None:
    both = calls(
        [
            tool_call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "lock"}),
            tool_call("roll_check", {"check": "notice", "character": "Jon", "reason": "guards"}),
        ]
    )

    def narrate_both(request: dict[str, Any]) -> Any:
        rolled = tool_results(request)
        outcomes = [{"character": r["character"], "result": r["result"], "roll": r["roll"]} for r in rolled]
        return call("narrate", {"narration": "Mara works; Jon watches.", "outcomes": outcomes})

    async def play() -> Any:
        async with table(store, [both, narrate_both], faces=[20, 2, 3]) as t:
            story = t.game.start_story(harbor)
            return await t.game.play(story, "We go in.")

    result = run(play())
    assert [(r.check, r.band) for r in result.rolls] == [
        ("attempt", "Critical success"),
        ("notice", "Miss it"),
    ]
    assert [o.result for o in result.outcomes] == ["succeeded", "failed"]


def test_arguments_sent_as_an_object_are_accepted(store: Store, harbor: Path) -> None:
    def answer_with_object(request: dict[str, Any]) -> Any:
        roll = last_tool_result(request)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_obj",
                    "type": "function",
                    "function": {
                        "name": "narrate",
                        "arguments": {
                            "narration": "Done.",
                            "outcomes": [{"character": "Mara", "result": roll["result"], "roll": roll["roll"]}],
                        },
                    },
                }
            ],
        }
        return raw(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "fake-model",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            }
        )

    async def play() -> Any:
        async with table(store, [roll_mara(), answer_with_object], faces=[11], transport="http") as t:
            story = t.game.start_story(harbor)
            return await t.game.play(story, "I pick the lock.")

    assert run(play()).narration == "Done."


def test_asking_for_the_same_roll_again_returns_the_first(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [roll_mara(), roll_mara(15), narrate_roll()], faces=[11, 20]) as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = run(play())
    first, second = last_tool_result(t.master.requests[1]), last_tool_result(t.master.requests[2])
    assert first["roll"] == second["roll"] and second["band"] == "Partial success"
    assert len(stored_rolls(store)) == 1 and [roll.id for roll in result.rolls] == [first["roll"]]


def test_a_players_roll_named_as_an_outcomes_roll_is_refused(store: Store, harbor: Path) -> None:
    """A player's /roll is told to the game master as a fact; it is not a check, so it settles no outcome."""
    stored: list[dict[str, Any]] = []

    def outcome_naming(roll: bool) -> Any:
        def step(request: dict[str, Any]) -> Any:
            outcome = {"character": "Mara", "result": "succeeded", **({"roll": stored[0]["id"]} if roll else {})}
            return call("narrate", {"narration": "The lock gives.", "outcomes": [outcome]})

        return step

    async def play() -> Any:
        async with table(store, [outcome_naming(roll=True), outcome_naming(roll=False)], faces=[4, 4]) as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(
                story,
                "I pick the lock.",
                player_roll=PlayerRoll(dice.parse("2d6+1"), "pick the lock"),
                events=lambda kind, data: stored.append(data) if kind == "roll" else None,
            )
            return t, result

    t, result = run(play())
    [roll] = result.rolls
    assert (roll.id, roll.kind, roll.character, roll.total) == (stored[0]["id"], "player", "Mara", 9)
    assert "Mara rolled 2d6+1 for 'pick the lock': 9 = 4 + 4 + 1" in t.master.requests[0]["messages"][-1]["content"]
    refusal = (
        f"narrate was refused: (1) roll {roll.id} is a player's roll, not a check, so it cannot settle an "
        "outcome; leave 'roll' out of Mara's outcome. Call narrate again."
    )
    assert result.refusals == [refusal]
    assert last_tool_result(t.master.requests[1]) == {"error": refusal}  # the model was told why
    assert result.outcomes == [OutcomePublic(character="Mara", result="succeeded", roll=None)]
    assert result.narration == "The lock gives." and result.model_calls == 2


def test_regenerating_keeps_the_rolls(store: Store, harbor: Path) -> None:
    script = [roll_mara(), narrate_roll("First telling."), roll_mara(), narrate_roll("Second telling.")]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:  # one face only: a second roll would fail
            story = t.game.start_story(harbor)
            first = await t.game.play(story, "I pick the lock.")
            again = await t.game.regenerate(story)
            await t.game.settle()
            return story, first, again

    story, first, again = run(play())
    assert again.narration == "Second telling." and again.number == first.number == 1
    assert [r.id for r in again.rolls] == [r.id for r in first.rolls]
    assert len(stored_rolls(store)) == 1
    [record] = store.rounds(story)
    assert record.narration == "Second telling." and record.player_text == "I pick the lock."
    assert [m.round_number for m in store.memories(story)] == [1]


def test_transport_errors_are_retried_honouring_retry_after(store: Store, harbor: Path) -> None:
    script = [
        http_error(500, "The server had an error."),
        http_error(429, "Slow down.", headers={"Retry-After": "3"}),
        reply("Rain on the roofs."),
    ]

    async def play() -> Any:
        async with table(store, script, transport="http") as t:
            story = t.game.start_story(harbor)
            return t, story, await t.game.play(story, "I wait.")

    t, story, result = run(play())
    assert result.narration == "Rain on the roofs."
    assert 3.0 in t.waits
    [game_master_call] = [c for c in store.model_calls(story) if c.purpose == "game_master"]
    assert game_master_call.http_attempts == 3


def test_a_model_that_lies_every_time_fails_the_round_cleanly(store: Store, harbor: Path) -> None:
    lie = narrate_roll("It opens at once.", "succeeded")
    script = [roll_mara(), lie, lie, lie, lie]

    async def play() -> Any:
        async with table(store, script, faces=[11]) as t:
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed, match="agreement with the dice"):
                await t.game.play(story, "I pick the lock.")
            return t, story

    t, story = run(play())
    assert store.rounds(story) == [] and store.story(story).rounds == 0
    [kept] = stored_rolls(store)
    [attempt] = attempts(store)
    assert kept.attempt_id == attempt.id and attempt.status == "failed"
    assert t.keeper.requests == []  # nothing to remember
    assert store.memories(story) == []


def test_a_cut_off_answer_fails_the_round(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [length("The lock")]) as t:
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed, match="cut off"):
                await t.game.play(story, "I pick the lock.")
            return story

    assert store.rounds(run(play())) == []


def test_model_calls_per_round_are_bounded(store: Store, harbor: Path) -> None:
    dice_forever = [call("roll_dice", {"notation": "1d6", "reason": "stalling"})] * 3

    async def play() -> Any:
        async with table(store, dice_forever, settings=RoundSettings(max_model_calls=3)) as t:
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed, match="within 3 model calls"):
                await t.game.play(story, "I wait.")

    run(play())


def test_a_second_round_of_the_same_story_at_once_is_refused(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        asked, answer = asyncio.Event(), asyncio.Event()

        async def held(request: dict[str, Any]) -> Any:
            asked.set()  # the first round holds the story's lease while it waits for the model
            await answer.wait()
            return reply("Slowly, the fog lifts.")

        async with table(store, [held]) as t:
            story = t.game.start_story(harbor)
            first = asyncio.create_task(t.game.play(story, "I wait."))
            await asked.wait()
            with pytest.raises(StoryBusy, match="being played"):
                await t.game.play(story, "I shout.")
            answer.set()
            return story, await first

    story, first = run(play())
    assert first.narration == "Slowly, the fog lifts." and store.story(story).rounds == 1


def test_memory_that_fails_is_written_after_a_later_round(store: Store, harbor: Path) -> None:
    # Round 1's memory fails; after round 2, the two rounds are remembered in one call (gm.engine.memory's batch).
    memory = [http_error(400, "bad"), reply("Round 1: Round one, remembered late.\nRound 2: Round two.")]

    async def play() -> Any:
        async with table(store, [reply("One."), reply("Two.")], memory, transport="http") as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "first")
            await t.game.settle()
            assert store.memories(story) == [] and store.story(story).rounds == 1
            await t.game.play(story, "second")
            await t.game.settle()
            return story

    story = run(play())
    assert [(m.round_number, m.summary) for m in store.memories(story)] == [
        (1, "Round one, remembered late."),
        (2, "Round two."),
    ]


def test_a_world_without_dice_json_offers_plain_dice_but_no_checks(store: Store, tmp_path: Path) -> None:
    from tests.support.worlds import HARBOR_WORLD, write_world

    world = write_world(tmp_path / "diceless", HARBOR_WORLD, None)
    script = [roll_mara(), call("roll_dice", {"notation": "2d6", "reason": "luck"}), reply("The gulls scatter.")]

    async def play() -> Any:
        async with table(store, script, faces=[3, 4]) as t:
            story = t.game.start_story(world)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = run(play())
    offered = [tool["function"]["name"] for tool in t.master.requests[0]["tools"]]
    assert offered == ["roll_dice", "narrate"]
    assert "no tool 'roll_check'" in last_tool_result(t.master.requests[1])["error"]
    assert last_tool_result(t.master.requests[2])["total"] == 7
    assert result.narration == "The gulls scatter." and [r.kind for r in result.rolls] == ["dice"]


def test_a_critical_band_keeps_its_result_and_says_it_deserves_more(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [roll_mara(), narrate_roll("The lock all but falls open.")], faces=[20]) as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = run(play())
    rolled = last_tool_result(t.master.requests[1])
    assert rolled["band"] == "Critical success" and rolled["result"] == "succeeded" and rolled["critical"] is True
    assert "deserves more" in rolled["note"]
    assert result.outcomes[0].result == "succeeded"


def test_the_tool_schema_lists_checks_and_characters(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [reply("Fog.")]) as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "I wait.")
            return t.master.requests[0]["tools"]

    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in run(play())}
    properties = tools["roll_check"]["properties"]
    assert properties["check"]["enum"] == ["attempt", "notice"]
    assert properties["character"]["enum"] == ["Mara", "Jon", "The Warden"]
    assert properties["target"]["type"] == "integer"


def test_narrate_in_the_same_message_as_its_roll_is_refused_then_narrated_after_the_band(
    store: Store, harbor: Path
) -> None:
    # The guess ("partial") happens to match the roll (11 + 1 against 12 is a partial success): still refused.
    guess = {"narration": "It half gives.", "outcomes": [{"character": "Mara", "result": "partial", "roll": 1}]}
    rolling = {"check": "attempt", "character": "Mara", "target": 12, "reason": "pick the lock"}
    together = calls([("roll_check", rolling), ("narrate", guess)])

    async def play() -> Any:
        async with table(store, [together, narrate_roll()], faces=[11], transport="http") as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I pick the lock.")

    t, result = run(play())
    [roll] = result.rolls
    assert roll.id == 1 and result.refusals == [
        f"narrate was refused: (1) you narrated before seeing roll {roll.id}'s band; read it, then narrate. "
        "Call narrate again."
    ]
    assert result.narration == "The lock gives with a soft click."
    assert result.outcomes == [OutcomePublic(character="Mara", result="partial", roll=roll.id)]
    assert "before seeing roll 1's band" in json.dumps(tool_results(t.master.requests[1]))
