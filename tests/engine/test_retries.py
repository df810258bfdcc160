"""A round's rolls belong to the round: a failed attempt's rolls come back to the next attempt at it.

Through the library, the API, and a real process killed between the roll and the narration, on SQLite
and PostgreSQL. The dice are `GivenFaces` holding exactly the faces the test expects to be rolled, so
a roll rolled again would run out of faces and fail the round. With the harbour world's `attempt`
(1d20 + skill 3 over 12): a face of 11 is a "Partial success".
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm.engine._earlier_rolls import EARLIER_NOTE
from gm.engine.round import RoundSettings
from gm.engine.transcript import render_transcript, transcript
from gm.errors import OperatorError, RoundFailed
from gm.store import Attempt, RollRecord, Store
from gm.testing import Request, Step, call, http_error, reply
from tests.support.rounds import fake, last_tool_result, narrate_roll, roll_mara, table, tool_results
from tests.support.web import keeper_too, served_app

LIE = narrate_roll("It opens at once.", "succeeded")  # the roll says partial: refused every time


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def all_rolls(store: Store) -> list[RollRecord]:
    with store.session() as session:
        return list(session.exec(select(RollRecord).order_by(RollRecord.id)))  # type: ignore[arg-type]


def statuses(store: Store) -> list[str]:
    with store.session() as session:
        return [attempt.status for attempt in session.exec(select(Attempt).order_by(Attempt.started_at))]  # type: ignore[arg-type]


def test_a_failed_attempts_check_comes_back_whatever_the_player_types(store: Store, harbor: Path) -> None:
    script = [roll_mara(), LIE, LIE, LIE, LIE, roll_mara(15), narrate_roll("The lock yields at last.")]

    async def play() -> Any:
        async with table(
            store, script, faces=[11], transport="http"
        ) as t:  # one face: rolling again would fail the round
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed):
                await t.game.play(story, "I pick the lock.")
            return t, story, await t.game.play(story, "I try the lock once more, carefully.")

    t, story, result = run(play())
    [roll] = all_rolls(store)  # rolled once, by the failed attempt
    told = last_tool_result(t.master.requests[6])
    assert told["roll"] == roll.id and told["band"] == "Partial success" and told["earlier_attempt"] == EARLIER_NOTE
    assert "target" not in told and "15" not in json.dumps(told)  # the new target is not used: the roll stands
    [kept] = result.rolls
    assert (kept.id, kept.faces, kept.target, kept.band) == (roll.id, [[11]], 12, "Partial success")
    assert kept.from_earlier_attempt and result.outcomes[0].result == "partial"
    assert statuses(store) == ["failed", "accepted"]
    shown = transcript(store, story)
    assert shown.rounds[0].rolls[0].from_earlier_attempt
    assert "rolled in an earlier attempt" in render_transcript(shown)


def test_a_resent_player_roll_is_not_rolled_again(store: Store, harbor: Path) -> None:
    facts: list[str] = []

    def remember_fact(request: Request) -> Step:
        facts.append(str(request["messages"][-1]["content"]))
        return reply("The tumblers fall.")

    script = [http_error(400, "Bad request."), remember_fact, remember_fact]

    async def play() -> Any:
        async with table(store, script, faces=[4, 5, 17], transport="http") as t:
            story = t.game.start_story(harbor)
            command = "/roll 2d6+1 pick the lock"
            from gm.engine.commands import RollDice, parse_command

            parsed = parse_command(command)
            assert isinstance(parsed, RollDice)
            with pytest.raises(OperatorError):
                await t.game.play(story, command, player_roll=parsed.roll)
            again = await t.game.play(story, command, player_roll=parsed.roll)
            other = parse_command("/roll d20 pick the lock")
            assert isinstance(other, RollDice)
            third = await t.game.play(story, "/roll d20 pick the lock", player_roll=other.roll)
            return again, third

    again, third = run(play())
    assert (
        "(Fact: Mara rolled 2d6+1 for 'pick the lock': 10 = 4 + 5 + 1 (rolled in an earlier attempt at this round "
        "that did not finish; the roll stands))"
    ) in facts[0]
    [player] = again.rolls
    assert player.kind == "player" and player.total == 10 and player.from_earlier_attempt
    # Round 2 is a new round: its roll is a new one (the third face), not round 1's.
    assert [(roll.notation, roll.total, roll.from_earlier_attempt) for roll in third.rolls] == [("d20", 17, False)]
    assert [roll.total for roll in all_rolls(store)] == [10, 17]


def test_a_different_player_roll_is_a_new_roll(store: Store, harbor: Path) -> None:
    """The same /roll comes back; another notation or purpose is the player's new choice, and is rolled."""
    script = [http_error(400, "Bad request."), reply("The dice settle.")]

    async def play() -> Any:
        async with table(store, script, faces=[3, 6], transport="http") as t:
            from gm.engine.commands import RollDice, parse_command

            story = t.game.start_story(harbor)
            first, second = parse_command("/roll d6 luck"), parse_command("/roll d6 more luck")
            assert isinstance(first, RollDice) and isinstance(second, RollDice)
            with pytest.raises(OperatorError):
                await t.game.play(story, "/roll d6 luck", player_roll=first.roll)
            return await t.game.play(story, "/roll d6 more luck", player_roll=second.roll)

    result = run(play())
    assert [(roll.total, roll.reason, roll.from_earlier_attempt) for roll in result.rolls] == [(6, "more luck", False)]


def test_only_an_accepted_round_closes_its_rolls(store: Store, harbor: Path) -> None:
    script = [roll_mara(), LIE, LIE, LIE, LIE, roll_mara(), narrate_roll(), roll_mara(), narrate_roll("Again.")]

    async def play() -> Any:
        async with table(store, script, faces=[11, 20], transport="http") as t:
            story = t.game.start_story(harbor)
            with pytest.raises(RoundFailed):
                await t.game.play(story, "I pick the lock.")
            first = await t.game.play(story, "I pick the lock.")
            second = await t.game.play(story, "And the next one.")
            return first, second

    first, second = run(play())
    assert first.rolls[0].faces == [[11]] and first.rolls[0].from_earlier_attempt
    assert second.rolls[0].faces == [[20]] and not second.rolls[0].from_earlier_attempt
    assert second.rolls[0].band == "Critical success" and second.rolls[0].id != first.rolls[0].id


def test_plain_dice_come_back_in_order(store: Store, harbor: Path) -> None:
    dice_twice = [call("roll_dice", {"notation": "2d6", "reason": "damage"})] * 2
    script = [
        *dice_twice,
        http_error(400, "Bad."),
        *dice_twice,
        call("roll_dice", {"notation": "2d6", "reason": "more"}),
    ]
    script.append(reply("The guard staggers."))

    async def play() -> Any:
        async with table(store, script, faces=[1, 2, 3, 4, 5, 6], transport="http") as t:
            story = t.game.start_story(harbor)
            with pytest.raises(OperatorError):
                await t.game.play(story, "I strike twice.")
            return t, await t.game.play(story, "I strike twice.")

    t, result = run(play())
    totals = [(roll.total, roll.from_earlier_attempt) for roll in result.rolls]
    assert totals == [(3, True), (7, True), (11, False)]  # the two earlier rolls, in order, then a new one
    assert [r.get("earlier_attempt") is not None for r in tool_results(t.master.requests[-1])[-3:]] == [
        True,
        True,
        False,
    ]


def test_a_failed_regenerate_does_not_reroll_a_new_check(store: Store, harbor: Path) -> None:
    """A telling played again may ask a check the round had not rolled; if it fails, the next telling gets that roll."""
    notice = call("roll_check", {"check": "notice", "character": "Jon", "reason": "the guards"})

    def narrate_both(request: Request) -> Step:
        rolled = [r for r in tool_results(request) if "band" in r]
        outcomes = [{"character": r["character"], "result": r["result"], "roll": r["roll"]} for r in rolled]
        return call("narrate", {"narration": "Mara works; Jon watches.", "outcomes": outcomes})

    script = [roll_mara(), narrate_roll(), roll_mara(), notice, http_error(400, "Bad."), roll_mara(), notice]
    script.append(narrate_both)

    async def play() -> Any:
        async with table(store, script, faces=[11, 3, 4], transport="http") as t:
            story = t.game.start_story(harbor)
            await t.game.play(story, "We go in.")
            with pytest.raises(OperatorError):
                await t.game.regenerate(story)
            return await t.game.regenerate(story)

    result = run(play())
    assert [(roll.check, roll.faces) for roll in result.rolls] == [("attempt", [[11]]), ("notice", [[3, 4]])]
    assert len(all_rolls(store)) == 2


def test_through_the_api_a_retry_gets_the_same_roll(store: Store, worlds: Path) -> None:
    script = [roll_mara(), http_error(400, "Bad request."), roll_mara(), narrate_roll()]
    with served_app(store, worlds, script, faces=[11], transport="http") as (client, _):
        answer = client.post("/api/stories", json={"world": "harbour"})
        story, auth = answer.json()["story"]["id"], {"Authorization": f"Bearer {answer.json()['token']}"}
        failed = client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=auth)
        assert failed.status_code == 502, failed.text
        played = client.post(f"/api/stories/{story}/messages", json={"text": "I pick it again."}, headers=auth)
        assert played.status_code == 200, played.text
        [roll] = played.json()["round"]["rolls"]
        assert roll["faces"] == [[11]] and roll["from_earlier_attempt"] is True
        shown = client.get(f"/api/stories/{story}", headers=auth).json()
        assert shown["rounds"][0]["rolls"][0]["from_earlier_attempt"] is True
        assert [r["id"] for r in shown["integrity"]["rolls"]] == [roll["id"]]


CRASHING_PLAYER = textwrap.dedent(
    """
    import asyncio, sys
    from gm.engine.game import Game
    from gm.models.client import ModelClient, ModelSettings
    from gm.engine.round import RoundSettings
    from gm.store import Store

    url, base_url, model, story = sys.argv[1:5]
    client = ModelClient(ModelSettings(base_url, "k", model))
    game = Game(client, Store(url), settings=RoundSettings(lease_seconds=1.0, heartbeat_seconds=0.25))
    asyncio.run(game.play(story, "I pick the lock."))
    """
)


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_process_killed_between_the_roll_and_the_narration(store: Store, database_url: str, harbor: Path) -> None:
    """The player's process dies after the roll is written and before the round ends; the next attempt,
    in another process, gets that roll back."""
    killed = threading.Event()

    def after_the_roll(request: Request) -> Step:
        killed.wait(60)  # the answer never reaches the killed process
        return reply("(too late)")

    model = fake(keeper_too([roll_mara(), after_the_roll])).start()
    try:
        story_id = _start_story(store, harbor)
        child = subprocess.Popen(
            [sys.executable, "-c", CRASHING_PLAYER, database_url, model.base_url, model.model, story_id],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 60
            while not (rolled := all_rolls(store)) or len(model.requests) < 2:
                assert child.poll() is None, child.communicate()
                assert time.monotonic() < deadline, "the child process never rolled"
                time.sleep(0.05)
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            killed.set()
            if child.poll() is None:
                child.kill()
                child.wait()
    finally:
        model.close()
    [crashed] = rolled
    assert child.returncode == -signal.SIGKILL and statuses(store) == ["running"]  # nobody marked it failed

    async def retry() -> Any:
        settings = RoundSettings(wait_seconds=10)  # the dead process's lease runs out after a second
        async with table(store, [roll_mara(), narrate_roll()], faces=[], settings=settings) as t:
            return t, await t.game.play(story_id, "I pick the lock.")

    t, result = run(retry())
    assert last_tool_result(t.master.requests[1])["earlier_attempt"] == EARLIER_NOTE
    [kept] = result.rolls
    assert (kept.id, kept.faces, kept.band) == (crashed.id, crashed.faces, crashed.band)
    assert kept.from_earlier_attempt and len(all_rolls(store)) == 1
    assert result.outcomes[0].result == crashed.result


def _start_story(store: Store, harbor: Path) -> str:
    from gm.engine.game import Game

    class NoModel:
        async def complete(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("no model call here")

    return Game(NoModel(), store).start_story(harbor)
