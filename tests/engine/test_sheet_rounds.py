"""Sheets in single rounds, on SQLite and PostgreSQL: a check reads the sheet of its moment and records the value
it used, the prompt carries the sheets from the database, a paused round keeps its changes, a round played again
replaces its changes and makes its band effects again, the judge refuses an untold change, and the API serves
the sheets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from gm.engine._sheets import RoundSheet
from gm.engine.results import RoundPaused, RoundResult
from gm.engine.sheet_judge import needs_judging
from gm.engine.transcript import render_transcript, transcript
from gm.integrity.audit import audit
from gm.store import SheetStart, Store
from gm.testing import call, honest_judge, is_sheet_judge_request, sheet_judge_answer
from gm.world.loading import load_world
from tests.support.rounds import table, tool_results
from tests.support.web import served_app, start_story
from tests.support.worlds import SHEET_DICE as DICE
from tests.support.worlds import SHEET_WORLD as WORLD
from tests.support.worlds import write_world


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def hurt(amount: int) -> Any:
    return call(
        "change_sheet",
        {
            "changes": [
                {"character": "Mara", "variable": "hp", "action": "adjust", "amount": amount, "reason": "a fall"}
            ]
        },
    )


STRIKE = call("roll_check", {"check": "strike", "character": "Mara", "against": "Tomas", "reason": "a blow"})


def narrate(text: str = "It is done.") -> Any:
    def step(request: dict[str, Any]) -> Any:
        rolled = [each for each in tool_results(request) if "band" in each]
        outcomes = [{"character": "Mara", "result": r["result"], "roll": r["roll"]} for r in rolled[-1:]]
        return call("narrate", {"narration": text, "outcomes": outcomes})

    return step


def test_a_check_reads_the_sheet_of_its_moment(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "customs", WORLD, DICE)

    async def play() -> Any:
        # Mara's hp 10 -> 7, then a strike adds 7; a face of 15 is a Hit (22), whose effect rolls 1d4 (face 3) on Tomas.
        async with table(store, [hurt(-3), STRIKE, narrate(), narrate("Later.")], faces=[15, 3]) as t:
            story = t.game.start_story(world)
            first = await t.game.play(story, "I slip, then strike.")
            await t.game.play(story, "I rest.")  # a plain round: the prompt shows the sheets as stored
            return t, story, first

    t, story, first = run(play())
    [check] = [roll for roll in first.rolls if roll.kind == "check"]
    assert check.modifier == 7 and check.value == 22 and check.band == "Hit"
    assert [(c.character, c.variable, c.before, c.after, c.source) for c in first.changes] == [
        ("Mara", "hp", 10, 7, "chosen"),
        ("Tomas", "hp", 8, 5, "effect"),
    ]
    assert first.sheet is not None and first.sheet["Tomas"]["hp"]["value"] == 5
    system = t.master.requests[-1]["messages"][0]["content"]
    assert "## Sheets now" in system and "- Mara: hp 7 (0 to 10)" in system and "- Tomas: hp 5 (0 to 8)" in system
    assert "hp {" not in system  # a sheet entry is not shown as raw JSON among the fixed variables
    assert audit(transcript(store, story)).ok
    assert "  [sheet] Tomas's hp 8 -> 5 (-3, effect)" in render_transcript(transcript(store, story))


def test_a_round_played_again_replaces_its_changes_and_makes_its_effects_again(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "customs", WORLD, DICE)
    asked: list[dict[str, Any]] = []

    def hurt_again(request: dict[str, Any]) -> Any:
        asked.append(request)
        return hurt(-1)

    script = [hurt(-2), STRIKE, narrate(), hurt_again, STRIKE, narrate("Again, more gently.")]

    async def play() -> Any:
        async with table(store, script, faces=[15, 3]) as t:
            story = t.game.start_story(world)
            await t.game.play(story, "I slip, then strike.")
            again = await t.game.regenerate(story)
            return story, again

    story, again = run(play())
    # The new telling starts from the sheets before the round: the strike (kept) hits again, its effect made again
    # with the same roll of its amount, and hurt(-1) stands in for hurt(-2).
    assert [(c.character, c.before, c.after, c.source) for c in again.changes] == [
        ("Tomas", 8, 5, "effect"),
        ("Mara", 10, 9, "chosen"),
    ]
    # The new telling is told the effect made again, which it must tell (the sheet judge reads it).
    player = [m["content"] for m in asked[0]["messages"] if m["role"] == "user"][-1]
    assert "band changed the sheets again: Tomas's hp 8 -> 5 (-3, effect)" in player
    assert store.story(story).sheet["Mara"]["hp"]["value"] == 9  # type: ignore[index]
    assert [c.seq for c in store.sheet_changes(story)] == [1, 2]
    assert audit(transcript(store, story)).ok


def test_an_untold_change_is_refused_and_the_told_one_stored(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "customs", WORLD, DICE)
    answers = iter([sheet_judge_answer(untold=(1,)), honest_judge])

    def judge(request: dict[str, Any]) -> Any:
        return next(answers)(request) if is_sheet_judge_request(request) else honest_judge(request)

    async def play() -> Any:
        async with table(store, [hurt(-2), narrate("She walks on."), narrate("She falls hard.")], judge=judge) as t:
            story = t.game.start_story(world)
            return story, await t.game.play(story, "I climb.")

    story, result = run(play())
    assert result.narration == "She falls hard."
    assert result.refusals == [
        "narrate was refused: (1) the narration never tells that Mara's hp 10 -> 8 (-2); tell every change the "
        "round made. Call narrate again."
    ]
    assert [record.narration for record in store.rounds(story)] == ["She falls hard."]


def test_a_paused_round_keeps_its_changes(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "customs", WORLD, DICE)

    async def play() -> Any:
        async with table(store, [hurt(-4), STRIKE, narrate()], faces=[3]) as t:
            story = t.game.start_story(world, settings={"dice_from": "player"})
            paused = await t.game.play(story, "I slip, then strike.")
            assert isinstance(paused, RoundPaused)
            assert store.story(story).sheet["Mara"]["hp"]["value"] == 10  # type: ignore[index]
            return story, await t.game.answer(story, "15")

    story, done = run(play())
    assert isinstance(done, RoundResult)
    [check] = [roll for roll in done.rolls if roll.kind == "check"]
    assert check.modifier == 6 and check.band == "Hit"  # read after the change made before the pause
    assert [(c.character, c.after) for c in done.changes] == [("Mara", 6), ("Tomas", 5)]
    assert audit(transcript(store, story)).ok


def test_the_api_serves_the_sheets(store: Store, tmp_path: Path) -> None:
    worlds = tmp_path / "worlds"
    write_world(worlds / "customs", WORLD, DICE)
    with served_app(store, worlds, [hurt(-3), narrate("She falls.")]) as (client, _):
        story, auth = start_story(client, world="customs")
        assert client.get(f"/api/stories/{story}/sheet").status_code == 401
        before = client.get(f"/api/stories/{story}/sheet", headers=auth).json()
        assert before["sheet"]["Mara"]["hp"] == {"value": 10, "min": 0, "max": 10} and before["changes"] == []
        answer = client.post(f"/api/stories/{story}/messages", json={"text": "I climb."}, headers=auth)
        assert answer.status_code == 200, answer.text
        played = answer.json()
        assert played["round"]["changes"][0]["after"] == 7
        after = client.get(f"/api/stories/{story}/sheet", headers=auth).json()
        assert after["shown"]["Mara"]["hp"] == "7 (0 to 10)"
        assert [(c["variable"], c["before"], c["after"]) for c in after["changes"]] == [("hp", 10, 7)]
        shown = client.get(f"/api/stories/{story}", headers=auth).json()
        assert shown["story"]["sheet"] == after["sheet"] and shown["rounds"][0]["changes"] == after["changes"]
        assert json.dumps(shown["integrity"]["sheet_start"]["Mara"]["hp"]) == '{"value": 10, "min": 0, "max": 10}'


def test_a_fork_starts_from_the_sheets_at_its_round_and_audits(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "customs", WORLD, DICE)

    async def play() -> Any:
        script = [hurt(-2), narrate("She falls."), hurt(-3), narrate("She falls again."), hurt(-1), narrate("Ow.")]
        async with table(store, script) as t:
            story = t.game.start_story(world)
            await t.game.play(story, "I climb.")
            await t.game.play(story, "I climb on.")
            fork = store.fork_story(story, 1, {}, "ab" * 32).id
            await t.game.play(fork, "I climb elsewhere.")
            return story, fork

    story, fork = run(play())
    assert store.story(story).sheet["Mara"]["hp"]["value"] == 5  # type: ignore[index]
    assert store.story(fork).sheet["Mara"]["hp"]["value"] == 7  # type: ignore[index]  # 10 - 2 at the fork, then - 1
    assert [(c.round_number, c.after) for c in store.sheet_changes(fork)] == [(1, 8), (2, 7)]
    assert audit(transcript(store, story)).ok
    assert audit(transcript(store, fork)).ok, audit(transcript(store, fork)).mismatches


def test_a_plain_round_that_names_the_sheet_is_read_and_one_that_does_not_is_not(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "customs", WORLD, DICE)
    judged: list[str] = []

    def judge(request: dict[str, Any]) -> Any:
        if not is_sheet_judge_request(request):
            return honest_judge(request)
        judged.append(request["messages"][-1]["content"])
        if "drops" in judged[-1]:
            return sheet_judge_answer(invented=(("Mara", "drops the lock picks", "She drops her lock picks."),))(
                request
            )
        return sheet_judge_answer()(request)

    script = [
        narrate("She watches the tide."),
        narrate("She drops her lock picks."),
        narrate("She keeps her LOCK PICKS."),
    ]

    async def play() -> Any:
        async with table(store, script, judge=judge) as t:
            story = t.game.start_story(world)
            quiet = await t.game.play(story, "I wait.")
            named = await t.game.play(story, "I run.")
            return story, quiet, named

    story, quiet, named = run(play())
    # The tide names nothing on a sheet: no judge call. The picks are held, so that narration is read, and its
    # invented drop is refused and never stored; the narration told next names them too, and is read as well.
    assert quiet.refusals == [] and len(judged) == 2 and "She drops her lock picks." in judged[0]
    assert named.narration == "She keeps her LOCK PICKS."
    assert any("made no such change" in refusal for refusal in named.refusals)
    assert [record.narration for record in store.rounds(story)] == [
        "She watches the tide.",
        "She keeps her LOCK PICKS.",
    ]
    assert [call.purpose for call in store.model_calls(story)].count("sheet_judge") == 2


def test_the_names_the_sheet_judge_listens_for_are_whole_words(tmp_path: Path) -> None:
    sheet = RoundSheet(load_world(write_world(tmp_path / "customs", WORLD, DICE)), SheetStart(None))
    assert needs_judging(sheet, "Her hp runs low.") and needs_judging(sheet, "She is SOAKED to the bone.")
    assert needs_judging(sheet, "She counts her coins.")
    assert not needs_judging(sheet, "A whip cracks in the dark.")  # "hp" inside "whip" is not the variable
    assert not needs_judging(None, "Her hp runs low.")  # a world whose sheets cannot change
