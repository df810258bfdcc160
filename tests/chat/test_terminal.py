"""What reaches a terminal (issue 10, defects 9 and 10): piped `gm play` and escape sequences.

- Piped `gm play` refuses a line that is not UTF-8 with one sentence and goes on; a run in which a
  round could not be played exits 1.
- Control characters a model or a world file wrote are shown, not obeyed: in the chat (piped and at
  a terminal), in `gm show` (text and JSON) and in `gm stories`.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gm.chat.terminal import Chat
from gm.store import Store
from gm.testing import reply
from tests.support.command_line import gm, story_id_in
from tests.support.rounds import table
from tests.support.web import keeper_too
from tests.support.worlds import HARBOR_WORLD, write_world

HOSTILE = "\x1b]0;PWNED\x07\x1b[2J The harbour\x9b is\r dark."
SHOWN = "\u241b]0;PWNED\u2407\u241b[2J The harbour\\x9b is\u240d dark."


def gm_bytes(*arguments: str | Path, stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gm.cli", *map(str, arguments)],
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, **env},
    )


@pytest.fixture
def model_env() -> Any:
    from tests.support.rounds import fake

    started: list[Any] = []

    def serve(script: list[Any]) -> dict[str, str]:
        model = fake(keeper_too(script)).start()
        started.append(model)
        return {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "k", "GM_MODEL": model.model}

    yield serve
    for model in started:
        model.close()


@pytest.mark.slow
@pytest.mark.subprocess
def test_piped_gm_play_refuses_a_line_that_is_not_utf8_and_goes_on(model_env: Any, harbor: Path) -> None:
    env = model_env([reply("The first answer."), reply("The second answer.")])
    result = gm_bytes("play", harbor, stdin=b"first\ncaf\xe9 au lait\n\xff\nsecond\n", env=env)
    out, err = result.stdout.decode(), result.stderr.decode()
    assert "The first answer." in out and "The second answer." in out, err
    errors = err.strip().splitlines()
    assert errors == [
        "error: line 2 is not UTF-8 text (byte 4); it was skipped",
        "error: line 3 is not UTF-8 text (byte 1); it was skipped",
    ]
    assert result.returncode == 0  # refused lines are the player's to retype; only a failed round fails the run


def test_piped_gm_play_exits_1_when_a_round_failed(model_env: Any, harbor: Path) -> None:
    from gm.testing import http_error

    env = model_env([reply("The first answer."), http_error(400, "This model is not allowed.")])
    result = gm("play", harbor, stdin="first\nsecond\n/help\n", env=env)
    assert result.returncode == 1, result
    assert "The first answer." in result.stdout and "/roll NOTATION" in result.stdout  # it went on to /help
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "rejected" in line


def test_piped_gm_play_shows_control_characters_from_the_model(model_env: Any, harbor: Path) -> None:
    env = model_env([reply(HOSTILE)])
    result = gm("play", harbor, stdin="I look.\n", env=env)
    assert result.returncode == 0, result
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\x9b" not in result.stdout
    assert SHOWN in result.stdout

    story = story_id_in(result.stdout)
    shown = gm("show", story)
    assert "\x1b" not in shown.stdout and SHOWN in shown.stdout
    as_json = gm("show", story, "--json")
    assert "\x1b" not in as_json.stdout and "\x9b" not in as_json.stdout and "\x07" not in as_json.stdout
    assert json.loads(as_json.stdout)["rounds"][0]["narration"] == HOSTILE  # the data is as written


def test_gm_stories_and_the_chat_show_control_characters_from_a_world(model_env: Any, tmp_path: Path) -> None:
    world = write_world(tmp_path / "w", {**HARBOR_WORLD, "title": "The \x1b[31mRed\x1b[0m Harbour"})
    env = model_env([reply("Fine.")])
    played = gm("play", world, stdin="hello\n", env=env)
    assert "\x1b" not in played.stdout and "The \u241b[31mRed\u241b[0m Harbour" in played.stdout
    listed = gm("stories")
    assert "\x1b" not in listed.stdout and "The \u241b[31mRed\u241b[0m Harbour" in listed.stdout


def test_the_chat_at_a_terminal_shows_control_characters(store: Store, tmp_path: Path) -> None:
    async def play() -> str:
        async with table(store, [reply(HOSTILE)]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            out = io.StringIO()
            chat = Chat(played.game, story, interactive=True, out=out)
            await chat.handle("I look.")
            return out.getvalue()

    printed = asyncio.run(play())
    assert "\x1b" not in printed and "\x07" not in printed and "\x9b" not in printed
    assert "PWNED" in printed and "\u241b" in printed
