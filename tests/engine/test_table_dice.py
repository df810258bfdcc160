"""Dice rolled at the table (issue 16, item 5): a check pauses its round and asks the player for faces.

On SQLite and PostgreSQL. The engine's own dice are `GivenFaces([])` here, so any check the engine
rolled itself would run out of faces and fail the round: every check roll must come from the player.
The harbour world's `attempt` is 1d20 + skill 3 over the target (12): a face of 11 is "Partial success".
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.engine.round import RoundPaused, RoundResult
from gm.engine.transcript import transcript
from gm.errors import Conflict, WrongFaces
from gm.integrity.audit import audit
from gm.store import Attempt, RollRecord, Store
from gm.testing import Request, Step, honest_judge, is_judge_request, reply
from gm.transcript.chain import roll_hash
from tests.support.rounds import fake, narrate_roll, roll_mara, table, tool_results
from tests.support.web import keeper_too, served_app

QUESTION = "Roll 1d20 for Risky attempt, Mara: type the faces"
PLAYER = {"dice_from": "player"}


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def rolls(store: Store) -> list[RollRecord]:
    with store.session() as session:
        return list(session.exec(select(RollRecord).order_by(RollRecord.id)))  # type: ignore[arg-type]


def statuses(store: Store) -> list[str]:
    with store.session() as session:
        return [a.status for a in session.exec(select(Attempt).order_by(Attempt.started_at))]  # type: ignore[arg-type]


def test_a_check_pauses_the_round_and_the_typed_faces_finish_it(store: Store, harbor: Path) -> None:
    async def play() -> Any:
        async with table(store, [roll_mara(), narrate_roll()], faces=[]) as t:
            story = t.game.start_story(harbor, settings=PLAYER)
            paused = await t.game.play(story, "I pick the lock.")
            assert isinstance(paused, RoundPaused)
            assert paused.asking.text == QUESTION and paused.asking.dice == ["d20"] and paused.asking.round == 1
            held = store.story(story)
            assert held.lease_holder is None and held.rounds == 0  # waiting holds no lease, and no round is written
            assert rolls(store) == [] and statuses(store) == ["paused"]
            with pytest.raises(Conflict, match="round 1 is waiting for the dice"):
                await t.game.play(story, "I give up and walk away.")  # no other round starts meanwhile
            for wrong, said in [
                ("eleven", "'eleven' (word 1) is not a face"),
                ("11 4", "1d20 needs 1 face, and 2 were typed"),
                ("21", "face 1 (21) is not on a d20, which shows 1 to 20"),
                ("0", "face 1 (0) is not on a d20"),
            ]:
                with pytest.raises(WrongFaces, match=re.escape(said)):
                    await t.game.answer(story, wrong)
                assert store.question(story) == paused.asking  # the question stands
            assert rolls(store) == [] and len(t.master.requests) == 1
            done = await t.game.answer(story, "11")
            return t, story, done

    t, story, done = run(play())
    assert isinstance(done, RoundResult)
    [roll] = done.rolls
    assert (roll.faces, roll.total, roll.value, roll.band, roll.typed) == ([[11]], 11, 2, "Partial success", True)
    assert done.outcomes[0].result == "partial" and done.judge is not None
    # The game master's conversation went on where it paused: its roll_check call got the typed roll as its result.
    [result] = tool_results(t.master.requests[1])
    assert result["roll"] == roll.id and result["band"] == "Partial success"
    assert t.master.requests[1]["messages"][:-1] == t.master.requests[0]["messages"] + [
        t.master.requests[1]["messages"][-2]
    ]
    assert statuses(store) == ["accepted"] and store.question(story) is None
    shown = transcript(store, story)
    assert shown.rounds[0].rolls[0].typed and shown.integrity is not None
    report = audit(shown)
    assert report.ok, report
    stored = shown.integrity.rolls[0].model_dump(mode="json")
    assert roll_hash(stored) != roll_hash({**stored, "typed": False})  # the chain covers that the faces were typed


def test_abandon_drops_the_paused_round_and_its_rolls_stay(store: Store, harbor: Path) -> None:
    notice = {"check": "notice", "character": "Mara", "reason": "look around"}
    from gm.testing import call

    script = [lambda request: call("roll_check", notice), roll_mara(), narrate_roll("Gone."), narrate_roll()]

    async def play() -> Any:
        async with table(store, script, faces=[]) as t:
            story = t.game.start_story(harbor, settings=PLAYER)
            first = await t.game.play(story, "I look, then pick the lock.")
            assert isinstance(first, RoundPaused) and first.asking.dice == ["d6", "d6"]
            assert "2 faces, in order: d6, d6" in first.asking.text
            second = await t.game.answer(story, "3, 4")  # the notice roll is typed; the lock's check asks next
            assert isinstance(second, RoundPaused) and second.asking.text == QUESTION
            assert await t.game.abandon(story) == 1
            with pytest.raises(Conflict, match="no round of this story is waiting for dice"):
                await t.game.abandon(story)
            return story

    story = run(play())
    [kept] = rolls(store)  # the notice roll stays in the story's chain
    assert (kept.check_key, kept.faces, kept.typed) == ("notice", [[3, 4]], True)
    assert statuses(store) == ["failed"] and store.story(story).rounds == 0
    report = audit(transcript(store, story))
    assert report.ok, report


def test_fair_dice_and_dice_from_the_player_exclude_each_other(store: Store, harbor: Path) -> None:
    async def play() -> None:
        async with table(store, [], faces=[]) as t:
            with pytest.raises(Exception, match="cannot also have fair dice"):
                t.game.start_story(harbor, settings=PLAYER, fair=True)

    run(play())


def gm_or_judge(request: Request) -> Step:
    """One fake for a whole process: the game master rolls Mara's check, then narrates it; the judge is honest."""
    if is_judge_request(request):
        return honest_judge(request)
    if "tools" not in request:
        return reply("Mara worked the lock.")
    if not any(message["role"] == "tool" for message in request["messages"]):
        return roll_mara()
    return narrate_roll()(request)


@pytest.mark.slow
@pytest.mark.subprocess
def test_another_process_continues_a_paused_round(store: Store, harbor: Path, database_url: str) -> None:
    """The round pauses in this process; a second Python process, with its own Game and model client, answers it."""

    async def pause() -> str:
        async with table(store, gm_or_judge, faces=[], transport="http") as t:
            story = t.game.start_story(harbor, settings=PLAYER)
            assert isinstance(await t.game.play(story, "I pick the lock."), RoundPaused)
            return story

    story = run(pause())
    served = fake(gm_or_judge).start()
    try:
        program = textwrap.dedent(
            f"""
            import asyncio, json
            from gm.engine.game import Game
            from gm.models.client import ModelClient, ModelSettings
            from gm.store import Store
            game = Game(ModelClient(ModelSettings({served.base_url!r}, "k", {served.model!r})), Store({database_url!r}))
            async def main():
                result = await game.answer({story!r}, "17")
                await game.settle()
                return result
            print(json.dumps(asyncio.run(main()).model_dump(mode="json")))
            """
        )
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    finally:
        served.close()
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["narration"] == "The lock gives with a soft click." and answer["outcomes"][0]["result"] == "succeeded"
    [roll] = rolls(store)
    assert (roll.faces, roll.value, roll.band, roll.typed) == ([[17]], 8, "Success", True)
    assert store.story(story).rounds == 1 and statuses(store) == ["accepted"]


def test_the_api_asks_takes_faces_and_abandons(store: Store, harbor: Path, tmp_path: Path) -> None:
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copytree(harbor, worlds / "harbour")
    with served_app(store, worlds, [roll_mara(), narrate_roll()], faces=[]) as (client, _):
        started = client.post("/api/stories", json={"world": "harbour", "dice_from": "player"})
        assert started.status_code == 201, started.text
        story, auth = started.json()["story"]["id"], {"Authorization": f"Bearer {started.json()['token']}"}
        assert started.json()["story"]["settings"]["dice_from"] == "player"
        asked = client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=auth)
        assert asked.status_code == 200, asked.text
        assert asked.json()["round"] is None and asked.json()["asking"]["text"] == QUESTION
        shown = client.get(f"/api/stories/{story}", headers=auth).json()
        assert shown["story"]["asking"]["text"] == QUESTION and shown["rounds"] == []
        busy = client.post(f"/api/stories/{story}/messages", json={"text": "/roll 1d6 luck"}, headers=auth)
        assert busy.status_code == 409 and "waiting for the dice" in busy.json()["error"]
        wrong = client.post(f"/api/stories/{story}/faces", json={"faces": "30"}, headers=auth)
        assert wrong.status_code == 400 and wrong.json() == {
            "error": "face 1 (30) is not on a d20, which shows 1 to 20"
        }
        played = client.post(f"/api/stories/{story}/faces", json={"faces": "11"}, headers=auth)
        assert played.status_code == 200, played.text
        [roll] = played.json()["round"]["rolls"]
        assert roll["faces"] == [[11]] and roll["typed"] is True and played.json()["asking"] is None
        none = client.post(f"/api/stories/{story}/abandon", headers=auth)
        assert none.status_code == 409 and none.json() == {"error": "no round of this story is waiting for dice"}
        again = client.post(f"/api/stories/{story}/faces", json={"faces": "11"}, headers=auth)
        assert again.status_code == 409


def test_the_api_streams_the_question_and_the_rest_of_the_round(store: Store, harbor: Path, tmp_path: Path) -> None:
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copytree(harbor, worlds / "harbour")
    with served_app(store, worlds, keeper_too([roll_mara(), narrate_roll()]), faces=[]) as (client, _):
        started = client.post("/api/stories", json={"world": "harbour", "dice_from": "player"}).json()
        story, auth = started["story"]["id"], {"Authorization": f"Bearer {started['token']}"}
        streamed = client.post(f"/api/stories/{story}/messages/stream", json={"text": "I pick it."}, headers=auth)
        assert "event: asking\n" in streamed.text and QUESTION in streamed.text
        assert "event: roll" not in streamed.text
        bad = client.post(f"/api/stories/{story}/faces/stream", json={"faces": "1 2"}, headers=auth)
        assert bad.status_code == 400
        rest = client.post(f"/api/stories/{story}/faces/stream", json={"faces": "11"}, headers=auth)
        events = [line[len("event: ") :] for line in rest.text.splitlines() if line.startswith("event: ")]
        assert events[0] == "roll" and events[-1] == "done" and "narration" in events


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_terminal_asks_with_its_prompt_and_reads_the_faces(harbor: Path, tmp_path: Path, database_url: str) -> None:
    """`gm play --dice-from player` with the offline rehearsal game master, its player lines piped in."""
    environment = {**os.environ, "GM_DATABASE_URL": database_url}
    lines = "I make a risky attempt at the lock.\nseven\n7\n"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gm"), "play", str(harbor), "--dice-from", "player", "--model", "rehearsal"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert "[asking] Roll " in done.stdout, done.stdout + done.stderr
    assert "'seven' (word 1) is not a face" in done.stderr
    assert "[dice]" in done.stdout  # the round went on with the typed face, and its card is shown
