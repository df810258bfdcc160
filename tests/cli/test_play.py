"""`gm play`, `gm stories` and `gm show` in this process (`gm.cli.main`), against a fake model over HTTP;
one story is played by the installed `gm` command as a process of its own."""

from __future__ import annotations

import functools
import json
import re
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gm.cli import _story as cli_story
from gm.models.client import ModelClient
from gm.testing import FakeModel, Step, call, reply
from tests.support.command_line import gm, installed_gm, story_id_in
from tests.support.rounds import fake
from tests.support.web import keeper_too


@pytest.fixture
def served() -> Iterator[Callable[[list[Any]], tuple[FakeModel, dict[str, str]]]]:
    started: list[FakeModel] = []

    def serve(steps: list[Any]) -> tuple[FakeModel, dict[str, str]]:
        model = fake(keeper_too(steps)).start()
        started.append(model)
        return model, {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "test", "GM_MODEL": model.model}

    yield serve
    for model in started:
        model.close()
        assert model.failures == [], model.failures


def user_text(request: dict[str, Any]) -> str:
    return str(request["messages"][-1]["content"])


def test_a_scripted_story_with_commands(served: Any, harbor: Path) -> None:
    seen_fact: list[str] = []

    def after_player_roll(request: dict[str, Any]) -> Step:
        seen_fact.append(user_text(request))
        return reply("The tumblers fall, one by one.")

    model, env = served(
        [
            reply("Fog hangs over the harbour."),
            after_player_roll,
            call("roll_check", {"check": "notice", "character": "Mara", "reason": "watch the guards"}),
            lambda request: call(
                "narrate",
                {
                    "narration": "You watch the guards change.",
                    "outcomes": [{"character": "Mara", "result": last_result(request), "roll": last_roll(request)}],
                },
            ),
        ]
    )
    lines = [
        "I look around.",
        "/roll 2d6+1 pick the lock",
        "/roll 2d6+x pick the lock",  # bad notation: an error, nothing stored or sent
        "/fly",  # unknown command: an error, not a message to the model
        "/dice hidden",
        "I watch the guards.",
        "/open",
        "/quit",
    ]
    result = gm("play", harbor, stdin="\n".join(lines) + "\n", env=env)
    assert result.returncode == 0, result.stderr
    out, err = result.stdout, result.stderr
    assert "Fog hangs over the harbour." in out and "The tumblers fall" in out and "You watch the guards" in out
    # the player's roll was shown as a card while dice were shown, and given to the game master as a fact
    card = re.search(r"\[dice\] Roll - Mara: 2d6\+1 for pick the lock = (\d+)", out)
    assert card, out
    fact = re.search(r"Mara rolled 2d6\+1 for 'pick the lock': (\d+) = (\d) \+ (\d) \+ 1", seen_fact[0])
    assert fact and int(fact.group(1)) == int(fact.group(2)) + int(fact.group(3)) + 1 == int(card.group(1))
    # errors went to stderr as one line each, and nothing was sent for them
    assert "error: 2d6+x: unexpected 'x' at column 5" in err and "error: there is no command /fly" in err
    assert "Traceback" not in err
    game_master_requests = [r for r in model.requests if "tools" in r]
    assert len(game_master_requests) == 4
    # after /dice hidden no card shows, and /open says the dice are hidden
    after_hidden = out.split("Dice are now hidden.")[1]
    assert "[dice]" not in after_hidden and "The dice are hidden" in after_hidden

    story = story_id_in(out)
    shown = json.loads(gm("show", story, "--json").stdout)
    assert shown["story"]["settings"]["dice"] == "hidden" and shown["story"]["rounds"] == 3
    player_roll, check_roll = shown["rounds"][1]["rolls"][0], shown["rounds"][2]["rolls"][0]
    assert player_roll["kind"] == "player" and player_roll["total"] == int(card.group(1))
    assert (
        check_roll["check"] == "notice" and check_roll["check_name"] == "Notice" and check_roll["character"] == "Mara"
    )
    assert check_roll["band"] in ("Miss it", "Glimpse", "See it")
    assert shown["rounds"][2]["outcomes"][0]["result"] == check_roll["result"]
    listed = gm("stories").stdout
    assert story in listed and "The Harbour Job" in listed and "3 rounds" in listed
    text = gm("show", story).stdout
    assert "## Round 3" in text and "Notice - Mara" in text


def last_roll(request: dict[str, Any]) -> int:
    return int(json.loads(request["messages"][-1]["content"])["roll"])


def last_result(request: dict[str, Any]) -> str:
    return str(json.loads(request["messages"][-1]["content"])["result"])


def test_continuing_a_story_and_regenerating(served: Any, harbor: Path) -> None:
    _, env = served([reply("First."), reply("Second."), reply("Second, told again.")])
    first = gm("play", harbor, "--dice", "hidden", stdin="hello\n", env=env)
    story = story_id_in(first.stdout)
    again = gm("play", "--story", story, stdin="onwards\n/regenerate\n", env=env)
    assert again.returncode == 0, again.stderr
    assert "Second, told again." in again.stdout
    shown = json.loads(gm("show", story, "--json").stdout)
    assert [r["narration"] for r in shown["rounds"]] == ["First.", "Second, told again."]
    assert [r["player_text"] for r in shown["rounds"]] == ["hello", "onwards"]


def test_errors_a_player_can_meet_are_one_line(harbor: Path, tmp_path: Path) -> None:
    unset = {"OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "GM_MODEL": ""}
    cases = [
        (gm("play", harbor, env=unset), ["GM_MODEL", "OPENAI_BASE_URL"]),
        (gm("play", tmp_path / "nowhere", env=unset), ["no world folder"]),
        (gm("play", "--story", "0" * 32, env=unset), ["no story", "gm stories"]),
        (gm("show", "0" * 32), ["no story"]),
        (gm("play", env=unset), ["gm play WORLD"]),
    ]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "world.json").write_text('{"title": "T", "premise": "P", "characters": []}')
    cases.append((gm("play", broken, "--model", "rehearsal"), ["characters"]))
    for result, words in cases:
        assert result.returncode == 2, result
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert all(word in lines[0] for word in words), lines[0]


def test_an_unreachable_endpoint_is_one_line_and_the_chat_goes_on(
    harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:  # the client's waits between retries, without waiting
        waits.append(seconds)

    monkeypatch.setattr(cli_story, "ModelClient", functools.partial(ModelClient, sleep=no_sleep))
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "k", "GM_MODEL": "m"}
    result = gm("play", harbor, stdin="hello\n/help\n", env=env)
    assert result.returncode == 1  # a round could not be played, so a script can tell
    assert "unavailable" in result.stderr and "Traceback" not in result.stderr
    assert waits, "the connection error was not retried"
    assert "/roll NOTATION" in result.stdout  # the chat carried on to /help


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_installed_command_plays_piped_input(served: Any, harbor: Path) -> None:
    model, env = served([reply("Fog hangs over the harbour.")])
    result = installed_gm("play", harbor, stdin="I look around.\n/fly\n", env=env)
    assert result.returncode == 0, result.stderr
    assert "Fog hangs over the harbour." in result.stdout
    [line] = result.stderr.splitlines()  # one line, no traceback
    assert line.startswith("error: there is no command /fly")
    assert [r["messages"][-1]["content"] for r in model.requests if "tools" in r] == ["I look around."]
