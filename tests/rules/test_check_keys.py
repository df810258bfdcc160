"""Check keys as the reference has them: lower-case letters, digits, '-' and '_', starting with a letter,
at most 40. The schema, the tool the game master calls, and the editor's hint all agree."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gm.editor import create_app
from gm.rules.validation import validate
from gm.store import Store
from gm.testing import call
from tests.support.rounds import narrate_roll, table
from tests.support.worlds import HARBOR_DICE, HARBOR_WORLD, write_world


def dice_with_key(key: str) -> dict[str, Any]:
    dice = copy.deepcopy(HARBOR_DICE)
    dice["checks"][1]["key"] = key
    return dice


@pytest.mark.parametrize("key", ["sleight-of-hand", "sleight_of_hand", "d20-check", "a", "x" + "-" * 39])
def test_keys_the_reference_allows(key: str) -> None:
    assert [p for p in validate(dice_with_key(key)) if p.severity == "error"] == []


@pytest.mark.parametrize(
    "key", ["-sleight", "1st-aid", "Sleight-of-hand", "sleight of hand", "sleight.hand", "x" * 41, ""]
)
def test_keys_it_refuses(key: str) -> None:
    problems = [p for p in validate(dice_with_key(key)) if p.severity == "error"]
    assert [p.path for p in problems] == ["$.checks[1].key"], problems
    if key and len(key) <= 40:
        assert "lower-case letters, digits, '-' and '_', starting with a letter" in problems[0].message


def test_the_game_master_rolls_a_hyphenated_check(store: Store, tmp_path: Path) -> None:
    world = write_world(tmp_path / "sleight", HARBOR_WORLD, dice_with_key("sleight-of-hand"))
    script = [call("roll_check", {"check": "sleight-of-hand", "character": "Mara", "reason": "palm the key"})]
    script.append(narrate_roll("The key is in your sleeve."))

    async def play() -> Any:
        async with table(store, script, faces=[5, 5]) as t:
            result = await t.game.play(t.game.start_story(world), "I palm the key.")
            return t, result

    t, result = asyncio.run(play())
    properties = t.master.requests[0]["tools"][0]["function"]["parameters"]["properties"]
    assert properties["check"]["enum"] == ["attempt", "sleight-of-hand"]
    [roll] = result.rolls
    assert (roll.check, roll.band, roll.result) == ("sleight-of-hand", "See it", "succeeded")


def test_the_editor_hint_says_the_same(tmp_path: Path) -> None:
    write_world(tmp_path / "worlds" / "bay", HARBOR_WORLD, HARBOR_DICE)
    with TestClient(create_app(tmp_path / "worlds"), base_url="http://127.0.0.1") as client:
        page = client.get("/worlds/bay/dice").text
    assert "How the game master names it: a-z, 0-9, - and _, starting with a letter, such as sleight-of-hand." in page
