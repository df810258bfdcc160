"""The narration judge in rounds, end to end: the real openai client over HTTP, on SQLite and PostgreSQL.

The game master, the judge and the memory keeper are three scripted fakes; the game master writes
outcomes that agree with the dice, and prose that may not.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.engine.judge import FORMAT_NAME
from gm.engine.prompt import read_check_fact, read_player_turn
from gm.engine.transcript import transcript
from gm.errors import ModelUnavailable, RoundFailed
from gm.store import Attempt, RollRecord, Store
from gm.testing import call, honest_judge, http_error, judge_answer, reply
from tests.support.rounds import narrate_roll, roll_mara, table, tool_results

FAILED_PROSE = "The pick snaps in the lock, and the door stays shut."
OPENED_PROSE = "Mara slips the lock open and steps inside."
HONEST_ROUND = [roll_mara(), narrate_roll(FAILED_PROSE)]  # face 3: 3 + 3 - 12 = -6, a Failure, told as one


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def stored_rolls(store: Store, story: str) -> list[RollRecord]:
    with store.session() as session:
        return list(session.exec(select(RollRecord).where(RollRecord.story_id == story)))


def attempts(store: Store, story: str) -> list[Attempt]:
    with store.session() as session:
        return list(session.exec(select(Attempt).where(Attempt.story_id == story)))


def told(request: dict[str, Any]) -> str:
    """The newest narrate's result the game master was given."""
    return str(tool_results(request)[-1].get("error", "accepted"))


def test_a_narration_telling_another_result_is_refused_then_a_corrected_one_accepted(
    store: Store, harbor: Path
) -> None:
    # face 3: 3 + 3 - 12 = -6, a Failure; the outcome says failed, the first prose tells a success
    script = [roll_mara(), narrate_roll(OPENED_PROSE), narrate_roll(FAILED_PROSE)]
    judge = [judge_answer(("Mara", "succeeded", "slips the lock open")), honest_judge]
    events: list[tuple[str, dict[str, Any]]] = []

    async def play() -> Any:
        async with table(store, script, faces=[3], judge=judge, transport="http") as t:
            story = t.game.start_story(harbor)
            result = await t.game.play(story, "I pick the lock.", events=lambda kind, data: events.append((kind, data)))
            return t, story, result

    t, story, result = run(play())
    refusal = (
        "narrate was refused: (1) the narration tells Mara's Risky attempt as a success ('slips the lock open'), "
        "but the roll failed (Failure); tell it as a failure. Call narrate again."
    )
    assert told(t.master.requests[2]) == refusal  # the model was told, as narrate's result
    assert result.narration == FAILED_PROSE and result.refusals == [refusal]
    assert [kind for kind, _ in events if kind in ("refusal", "narration")] == ["refusal", "narration"]
    assert [data for kind, data in events if kind == "narration"] == [{"text": FAILED_PROSE}]  # only the judged one
    [record] = store.rounds(story)
    assert record.narration == FAILED_PROSE and record.refusals == [refusal]
    assert record.judgement == {
        "model": t.judge.model,
        "verdicts": [{"character": "Mara", "told_as": "failed", "quote": ""}],
    }
    calls = store.model_calls(story)
    assert [call_.purpose for call_ in calls] == [
        "game_master",
        "game_master",
        "judge",
        "game_master",
        "judge",
        "memory",
    ]
    assert [call_.structured for call_ in calls if call_.purpose == "judge"] == ["json_schema", "json_schema"]
    assert all(call_.latency_ms >= 0 and call_.prompt_tokens > 0 for call_ in calls if call_.purpose == "judge")
    # what the judge read: names, the band, the result and the narration; never a number
    [_, user] = t.judge.requests[0]["messages"]
    assert (
        "Risky attempt" in user["content"]
        and '"Failure" (failed)' in user["content"]
        and OPENED_PROSE in user["content"]
    )
    assert "3" not in user["content"] and "12" not in user["content"]
    assert t.judge.requests[0]["response_format"]["json_schema"]["strict"] is True
    shown = transcript(store, story).rounds[0].judge
    assert shown is not None and [(v.character, v.told_as) for v in shown.verdicts] == [("Mara", "failed")]
    assert len(store.memories(story)) == 1
    assert "slips" not in t.keeper.requests[0]["messages"][-1]["content"]  # the keeper only saw the judged prose


def test_an_outcome_the_narration_never_tells_is_refused(store: Store, harbor: Path) -> None:
    script = [roll_mara(), narrate_roll("The gulls wheel over the harbour."), narrate_roll(FAILED_PROSE)]
    judge = [judge_answer(("Mara", "not_told", "")), honest_judge]

    async def play() -> Any:
        async with table(store, script, faces=[3], judge=judge, transport="http") as t:
            return t, await t.game.play(t.game.start_story(harbor), "I pick the lock.")

    _, result = run(play())
    assert result.refusals == [
        "narrate was refused: (1) the narration never tells how Mara's Risky attempt turned out, "
        "but the roll failed (Failure); tell it as a failure. Call narrate again."
    ]
    assert result.narration == FAILED_PROSE


def test_two_rolled_characters_only_the_one_told_wrong_is_refused(store: Store, harbor: Path) -> None:
    both = [
        call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "lock"}),
        call("roll_check", {"check": "notice", "character": "Jon", "reason": "guards"}),
    ]

    def narrate_both(request: dict[str, Any]) -> Any:
        outcomes = [
            {"character": r["character"], "result": r["result"], "roll": r["roll"]}
            for r in tool_results(request)
            if "band" in r
        ]
        return call("narrate", {"narration": "Mara works the lock; Jon watches the quay.", "outcomes": outcomes})

    judge = [judge_answer(("Mara", "failed", "the pick snaps"), ("Jon", "succeeded", "Jon spots them")), honest_judge]

    async def play() -> Any:
        # Mara: 3 + 3 - 12 = -6, a Failure; Jon: 2 + 3 = 5, Miss it (failed)
        async with table(
            store, [*both, narrate_both, narrate_both], faces=[3, 2, 3], judge=judge, transport="http"
        ) as t:
            return await t.game.play(t.game.start_story(harbor), "We go in.")

    result = run(play())
    [refusal] = result.refusals
    assert "Jon's Notice as a success ('Jon spots them'), but the roll failed (Miss it)" in refusal
    assert "Mara" not in refusal


def test_a_malformed_judge_answer_is_asked_again_and_twice_fails_the_round_keeping_its_rolls(
    store: Store, harbor: Path
) -> None:
    async def play(judge: list[Any]) -> Any:
        async with table(
            store, [roll_mara(), narrate_roll(FAILED_PROSE)], faces=[3], judge=judge, transport="http"
        ) as t:
            story = t.game.start_story(harbor)
            try:
                return t, story, await t.game.play(story, "I pick the lock.")
            except RoundFailed as failure:
                return t, story, failure

    t, story, result = run(play([reply("It reads well."), honest_judge]))
    assert result.narration == FAILED_PROSE and result.refusals == []
    assert "cannot be used: it is not a JSON object" in t.judge.requests[1]["messages"][-1]["content"]

    t, story, failure = run(play([reply("It reads well."), reply('{"outcomes": "all fine"}')]))
    assert isinstance(failure, RoundFailed)
    assert str(failure) == 'the judge of the narration gave no usable verdict (it has no "outcomes" list); try again'
    assert store.rounds(story) == [] and len(stored_rolls(store, story)) == 1  # rolls kept, nothing else


def test_a_judge_that_cannot_be_reached_fails_the_round_as_an_unreachable_game_master_would(
    store: Store, harbor: Path
) -> None:
    down = [http_error(503, "overloaded")] * 4

    async def play() -> Any:
        async with table(
            store, [roll_mara(), narrate_roll(FAILED_PROSE)], faces=[3], judge=down, transport="http"
        ) as t:
            story = t.game.start_story(harbor)
            with pytest.raises(ModelUnavailable, match="unavailable after 4 attempts"):
                await t.game.play(story, "I pick the lock.")
            return story

    story = run(play())
    assert store.rounds(story) == [] and len(stored_rolls(store, story)) == 1
    [attempt] = attempts(store, story)
    assert attempt.status == "failed"


def test_judging_off_costs_no_call_and_the_story_says_so(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [roll_mara(), narrate_roll(OPENED_PROSE)], faces=[3], judge=[], transport="http") as t:
            story = t.game.start_story(harbor, settings={"judge": "off"})
            return story, await t.game.play(story, "I pick the lock.")

    story, result = run(play())
    assert result.narration == OPENED_PROSE and result.judge is None  # nobody read it: the story says so
    shown = transcript(store, story)
    assert shown.story.settings.judge == "off" and shown.story.notices == ["narrations are not judged"]
    assert [call_.purpose for call_ in store.model_calls(story)] == ["game_master", "game_master", "memory"]


def test_a_plain_round_costs_no_judge_call(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [reply("The gulls scatter.")], judge=[], transport="http") as t:
            story = t.game.start_story(harbor)
            return story, await t.game.play(story, "I look at the sky.")

    story, result = run(play())
    assert result.judge is None and [c.purpose for c in store.model_calls(story)] == ["game_master", "memory"]


def test_a_server_refusing_response_format_is_judged_through_a_forced_tool_call(store: Store, harbor: Path) -> None:
    refused = http_error(400, "response_format json_schema is not supported by this model")
    judge = [refused, honest_judge]

    async def play() -> Any:
        async with table(
            store, [roll_mara(), narrate_roll(FAILED_PROSE)], faces=[3], judge=judge, transport="http"
        ) as t:
            story = t.game.start_story(harbor)
            return t, story, await t.game.play(story, "I pick the lock.")

    t, story, result = run(play())
    assert result.narration == FAILED_PROSE
    assert t.judge.requests[1]["tool_choice"] == {"type": "function", "function": {"name": FORMAT_NAME}}
    assert [c.structured for c in store.model_calls(story) if c.purpose == "judge"] == ["tool"]


def test_a_game_master_that_keeps_contradicting_fails_the_round_cleanly(store: Store, harbor: Path) -> None:
    liar = [roll_mara(), *[narrate_roll(OPENED_PROSE)] * 4]
    judge = [judge_answer(("Mara", "succeeded", "slips the lock open"))] * 4

    async def play() -> Any:
        async with table(store, liar, faces=[3], judge=judge, transport="http") as t:
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed, match="after 4 refusals"):
                await t.game.play(story, "I pick the lock.")
            return story

    story = run(play())
    assert store.rounds(story) == [] and len(stored_rolls(store, story)) == 1
    [attempt] = attempts(store, story)
    assert attempt.status == "failed"
    assert [c.purpose for c in store.model_calls(story)].count("judge") == 4


def test_regenerate_is_judged_the_same_way(store: Store, harbor: Path) -> None:
    script = [
        roll_mara(),
        narrate_roll(FAILED_PROSE),
        roll_mara(),
        narrate_roll(OPENED_PROSE),
        narrate_roll(FAILED_PROSE),
    ]
    judge = [honest_judge, judge_answer(("Mara", "succeeded", "open")), honest_judge]

    async def play() -> Any:
        async with table(store, script, faces=[3], judge=judge, transport="http") as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "I pick the lock.")
            return await t.game.regenerate(story)

    again = run(play())
    assert again.regenerated and again.narration == FAILED_PROSE and len(again.refusals) == 1
    assert "as a success ('open'), but the roll failed (Failure)" in again.refusals[0]


def test_a_round_played_again_must_tell_its_rolls_even_unasked(store: Store, harbor: Path) -> None:
    """Regenerating, the round's check rolls are in play from the start: narrating past them is refused."""

    def narrate_from_fact(request: dict[str, Any]) -> Any:
        player = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
        [fact] = read_player_turn(player).facts
        rolled = read_check_fact(fact)
        assert rolled is not None and (rolled.band, rolled.result) == ("Failure", "failed")
        outcome = {"character": rolled.character, "result": rolled.result, "roll": rolled.roll}
        return call("narrate", {"narration": FAILED_PROSE, "outcomes": [outcome]})

    ignoring = call("narrate", {"narration": OPENED_PROSE, "outcomes": []})
    script = [roll_mara(), narrate_roll(FAILED_PROSE), ignoring, narrate_from_fact]

    async def play() -> Any:
        async with table(store, script, faces=[3], transport="http") as t:
            story = t.game.start_story(harbor)
            first = await t.game.play(story, "I pick the lock.")
            return first, await t.game.regenerate(story)

    first, again = run(play())
    [roll] = first.rolls
    assert again.refusals == [
        f"narrate was refused: (1) roll {roll.id} (attempt for Mara: 'failed') serves no outcome; add an outcome "
        f"for Mara that names roll {roll.id}. Call narrate again."
    ]
    assert again.narration == FAILED_PROSE and [r.id for r in again.rolls] == [roll.id]
    assert again.judge is not None and [v.told_as for v in again.judge.verdicts] == ["failed"]


def test_the_judge_answer_shape_is_checked_against_openai_schemas(store: Store, harbor: Path) -> None:
    """The fakes validate every request and answer against OpenAI's published schemas (table() fails otherwise)."""

    async def play() -> Any:
        async with table(store, HONEST_ROUND, faces=[3], transport="http") as t:
            await t.game.play(t.game.start_story(harbor), "I pick the lock.")
            return t

    t = run(play())
    [request] = t.judge.requests
    assert json.loads(json.dumps(request["response_format"]))["type"] == "json_schema"
    assert t.judge.failures == []
