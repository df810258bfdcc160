"""The judge's promise through `gm play`: against a server whose game master writes correct outcomes but
prose that tells the opposite result, no such narration is stored or shown. Each round is either told
again in agreement, or fails cleanly with its rolls kept."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gm.engine.prompt import read_judge_request
from gm.testing import FakeModel, Step, call, reply
from tests.support.command_line import gm
from tests.support.paths import SAMPLE_WORLDS
from tests.support.rounds import fake, tool_results

TELLINGS = {
    "succeeded": "The lock gives at once and the door swings wide.",
    "partial": "The door opens a crack, and a guard turns his head.",
    "failed": "The pick snaps and the door stays shut.",
}
OPPOSITE = {"succeeded": "failed", "partial": "succeeded", "failed": "succeeded"}
HONEST_AFTER = {"Round two.": 1}  # the player's text, and how many lies before the game master tells it true


def telling_for(result: str, lie: bool) -> str:
    return TELLINGS[OPPOSITE[result] if lie else result]


def reading_judge(request: dict[str, Any]) -> Step:
    """A judge that reads the words: the door swinging wide is a success, a snapped pick a failure."""
    asked = read_judge_request(next(m["content"] for m in request["messages"] if m["role"] == "user"))
    assert asked is not None
    told = next((result for result, words in TELLINGS.items() if words == asked.narration), "not_told")
    verdicts = [{"character": o.character, "told_as": told, "quote": asked.narration[:30]} for o in asked.outcomes]
    return reply(json.dumps({"outcomes": verdicts}))


def lying_game_master() -> Any:
    lies: dict[str, int] = {}

    def answer(request: dict[str, Any]) -> Step:
        if request.get("response_format") is not None:
            return reading_judge(request)
        if "tools" not in request:
            return reply("Something memorable happened.")
        player = next(
            m["content"] for m in reversed(request["messages"]) if m["role"] == "user" and "[" not in m["content"][:1]
        )
        # The player's text, though a failed attempt's roll may come with it as a fact (gm.engine._earlier_rolls).
        player = next((text for text in HONEST_AFTER if text in player), player)
        rolled = [r for r in tool_results(request) if "band" in r]
        if not rolled:
            return call("roll_check", {"check": "notice", "character": "Mara", "reason": "watch the door"})
        told = lies.get(player, 0)
        lies[player] = told + 1
        lie = told < HONEST_AFTER.get(player, 99)
        outcome = {"character": "Mara", "result": rolled[-1]["result"], "roll": rolled[-1]["roll"]}
        return call("narrate", {"narration": telling_for(rolled[-1]["result"], lie), "outcomes": [outcome]})

    return answer


@pytest.fixture
def liar() -> Iterator[FakeModel]:
    model = fake(lying_game_master()).start()
    yield model
    model.close()
    assert model.failures == [], model.failures


def test_gm_play_never_shows_prose_that_tells_the_opposite_of_the_dice(liar: FakeModel, harbor: Path) -> None:
    env = {"OPENAI_BASE_URL": liar.base_url, "OPENAI_API_KEY": "test", "GM_MODEL": liar.model}
    played = gm("play", harbor, stdin="Round one.\nRound two.\n", env=env)
    assert "Traceback" not in played.stderr
    # round one: the game master lies every time, so the round fails cleanly, with one line
    assert "could not end the round in agreement with the dice after 4 refusals" in played.stderr
    story = played.stdout.split("story ")[1].split(",")[0]
    shown = json.loads(gm("show", story, "--json", env=env).stdout)
    [round_two] = shown["rounds"]
    [roll] = round_two["rolls"]
    truth = telling_for(roll["result"], lie=False)
    lie = telling_for(roll["result"], lie=True)
    assert round_two["player_text"] == "Round two." and round_two["narration"] == truth
    assert truth in played.stdout and lie not in played.stdout  # the player never read the lie
    assert len(round_two["refusals"]) == 1 and "tell it as" in round_two["refusals"][0]
    assert [v["told_as"] for v in round_two["judge"]["verdicts"]] == [roll["result"]]


def test_a_rehearsal_shows_the_author_the_judge_step(tmp_path: Path) -> None:
    world = SAMPLE_WORLDS / "harbour-heist"
    played = gm("play", world, "--model", "rehearsal", stdin="I pick the lock of the harbour office.\n")
    assert "Traceback" not in played.stderr
    judged = [line for line in played.stdout.splitlines() if line.startswith("[judge]")]
    assert len(judged) == 1 and "the judge read Odile's outcome as" in judged[0], played.stdout
    told = judged[0].rsplit(" as ", 1)[1]
    assert told in ("succeeded", "partial", "failed")  # the rehearsal tells its own roll, and its judge reads it
    story = played.stdout.split("story ")[1].split(",")[0]
    shown = json.loads(gm("show", story, "--json").stdout)
    [record] = shown["rounds"]
    assert record["judge"]["model"] == "rehearsal" and [v["told_as"] for v in record["judge"]["verdicts"]] == [told]
    assert [roll["result"] for roll in record["rolls"]] == [told]
