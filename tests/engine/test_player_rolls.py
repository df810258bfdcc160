"""A player's roll must roll dice: `/roll 7` and `/roll 2 d6` are refused everywhere, with nothing rolled,
stored or sent; and the game master's plain dice must be dice too."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from gm import dice
from gm.engine.commands import RollDice, parse_command
from gm.errors import CommandError
from gm.store import Attempt, RollRecord, Store
from gm.testing import call, reply
from tests.support.rounds import fake, last_tool_result, table
from tests.support.web import keeper_too, served_app

SPACE_INSIDE = "expected '+', '-' or the end (a dice term is written without spaces, such as 4d6kh3)"
NO_DICE = "there are no dice to roll here, only a number; a roll needs dice, such as 1d20 or 2d6+1"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("/roll 7", f"7: {NO_DICE}"),
        ("/roll 7 for luck", f"7: {NO_DICE}"),
        ("/roll 1+2 pick the lock", f"1+2: {NO_DICE}"),
        ("/roll 2 dodge", f"2: {NO_DICE}"),
        ("/roll 2 d6", f"2 d6: unexpected 'd' at column 3, {SPACE_INSIDE}"),
        ("/roll 2 d6+1 pick the lock", f"2 d6+1: unexpected 'd' at column 3, {SPACE_INSIDE}"),
        ("/roll 2 d% luck", f"2 d%: unexpected 'd' at column 3, {SPACE_INSIDE}"),
        ("/roll 4d6 kh3 stats", f"4d6 kh3: unexpected 'kh' at column 5, {SPACE_INSIDE}"),
        ("/roll 4d6kh 3 stats", f"4d6kh 3: unexpected '3' at column 7, {SPACE_INSIDE}"),
        ("/roll 2d6 + 1 d6 for the rest", f"2d6 + 1 d6: unexpected 'd' at column 9, {SPACE_INSIDE}"),
    ],
)
def test_a_roll_without_dice_or_with_a_split_term_is_refused(line: str, message: str) -> None:
    with pytest.raises(CommandError) as caught:
        parse_command(line)
    assert str(caught.value) == message


def test_a_split_term_is_refused_as_gm_roll_refuses_it() -> None:
    with pytest.raises(dice.DiceError) as by_gm_roll:
        dice.parse("2 d6")  # what `gm roll 2 d6` parses
    with pytest.raises(CommandError) as by_chat:
        parse_command("/roll 2 d6")
    assert str(by_chat.value) == str(by_gm_roll.value)


@pytest.mark.parametrize(
    ("line", "notation", "purpose"),
    [
        ("/roll 2d6 dodge the blow", "2d6", "dodge the blow"),  # a word starting with d is not a die
        ("/roll 1d20 1 more try", "1d20", "1 more try"),  # digits after digits are words
        ("/roll d20 khaki coat", "d20", "khaki coat"),  # nor is a word starting with kh
    ],
)
def test_words_that_only_look_like_notation_stay_words(line: str, notation: str, purpose: str) -> None:
    command = parse_command(line)
    assert isinstance(command, RollDice)
    assert (command.roll.expression.text, command.roll.purpose) == (notation, purpose)


def refusal(text: str) -> str:
    """What the chat's parser says of a line it refuses."""
    with pytest.raises(CommandError) as caught:
        parse_command(text)
    return str(caught.value)


def nothing_stored(store: Store) -> bool:
    with store.session() as session:
        return not list(session.exec(select(RollRecord))) and not list(session.exec(select(Attempt)))


@pytest.mark.parametrize("text", ["/roll 7", "/roll 2 d6"])
def test_the_api_refuses_them_and_nothing_is_rolled_stored_or_sent(store: Store, worlds: Path, text: str) -> None:
    with served_app(store, worlds, []) as (client, model):
        answer = client.post("/api/stories", json={"world": "harbour"})
        story, auth = answer.json()["story"]["id"], {"Authorization": f"Bearer {answer.json()['token']}"}
        for path in ("messages", "messages/stream"):
            refused = client.post(f"/api/stories/{story}/{path}", json={"text": text}, headers=auth)
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"] == refusal(text)
        assert model.requests == []
        assert nothing_stored(store)
        assert client.get(f"/api/stories/{story}", headers=auth).json()["story"]["rounds"] == 0


@pytest.mark.subprocess
def test_the_terminal_chat_refuses_them_and_sends_nothing(harbor: Path, tmp_path: Path) -> None:
    model = fake(keeper_too([reply("The gulls cry.")])).start()
    try:
        env = {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "k",
            "GM_MODEL": model.model,
            "GM_HOME": str(tmp_path / "home"),
        }
        lines = "/roll 7 for luck\n/roll 2 d6 pick the lock\nI listen.\n"
        result = subprocess.run(
            [sys.executable, "-m", "gm.cli", "play", str(harbor)],
            input=lines,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, **env},
        )
        assert result.returncode == 0, result.stderr
        errors = result.stderr.strip().splitlines()
        assert errors == [f"error: 7: {NO_DICE}", f"error: 2 d6: unexpected 'd' at column 3, {SPACE_INSIDE}"]
        assert "The gulls cry." in result.stdout
        assert len([request for request in model.requests if "tools" in request]) == 1  # only "I listen." was sent
    finally:
        model.close()
    store = Store(f"sqlite:///{tmp_path / 'home' / 'gm.db'}")
    with store.session() as session:
        assert list(session.exec(select(RollRecord))) == []  # nothing was rolled for the refused lines
    store.engine.dispose()


def test_plain_dice_of_the_game_master_must_be_dice(store: Store, harbor: Path) -> None:
    script = [call("roll_dice", {"notation": "17", "reason": "the guard's mood"}), reply("The guard shrugs.")]

    async def play() -> Any:
        async with table(store, script, settings=None) as t:
            story = t.game.start_story(harbor)
            return t, await t.game.play(story, "I wait.")

    t, result = asyncio.run(play())
    assert last_tool_result(t.master.requests[1]) == {"error": f"17: {NO_DICE}"}
    assert result.rolls == [] and len(result.refusals) == 1
    with store.session() as session:
        assert list(session.exec(select(RollRecord))) == []
