"""The rehearsal stand-in never asks for a roll whose outcome is certain: its targets can go either
way for every sample world, check and character, a target that would be certain is moved, and a
check that can never go either way for the player is passed over with a sentence saying why."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.engine.game import Game
from gm.engine.round import RoundResult
from gm.errors import CharacterCannotRoll
from gm.rehearsal._checks import choose_check, target_for
from gm.rehearsal.model import RehearsalModel
from gm.rules.chances import certain
from gm.store import Store
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS
from tests.support.worlds import write_world

SAMPLES = sorted(folder for folder in SAMPLE_WORLDS.iterdir() if (folder / "world.json").exists())

OVER_BANDS = [
    {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
    {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
    {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
    {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
    {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
]

DICE: dict[str, Any] = {
    "checks": [
        {
            "key": "lockpicking",
            "name": "Lockpicking",
            "use": "Picking a lock.",
            "dice": "1d20",
            "compare": "over",
            "modifier": "skill",
            "bands": OVER_BANDS,
        },
        {
            "key": "medicine",
            "name": "Medicine",
            "use": "Treating wounds.",
            "dice": "d%",
            "compare": "under",
            "bands": [
                {"label": "Failure", "max": -1, "result": "failed"},
                {"label": "Success", "min": 0, "result": "succeeded"},
            ],
        },
        {
            "key": "haul",
            "name": "Hauling",
            "use": "Hauling a boat or a net ashore.",
            "dice": "1d6",
            "modifier": "strength",
            "bands": [
                {"label": "Too heavy", "max": 3, "result": "failed"},
                {"label": "Ashore", "min": 4, "result": "succeeded"},
            ],
        },
        {
            "key": "net",
            "name": "Net mending",
            "use": "Mending a net.",
            "dice": "2d6",
            "bands": [
                {"label": "Torn", "max": 6, "result": "failed"},
                {"label": "Mended", "min": 7, "result": "succeeded"},
            ],
        },
    ]
}


def world_with(**variables: Any) -> dict[str, Any]:
    return {
        "title": "Extremes",
        "premise": "A harbour of people too good or too poor at things.",
        "characters": [{"name": "Ada", "role": "player", "variables": variables}],
    }


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


@pytest.mark.parametrize("folder", SAMPLES, ids=lambda folder: folder.name)
def test_every_sample_world_check_and_character_gets_a_target_that_can_go_either_way(folder: Path) -> None:
    world = load_world(folder)
    checks = world.rules.checks if world.rules is not None else ()
    tried = 0
    for check in checks:
        for character in world.characters:
            try:
                modifier = world.modifier_for(check, character)
            except CharacterCannotRoll:
                continue
            target = target_for(check, character)
            assert certain(check, target, modifier) is None, (check.key, character.name, target)
            tried += 1
    assert tried > 0 or not checks


@pytest.mark.parametrize(
    ("variables", "check", "target"),
    [
        # d% under 0 reads -100 to -1: certain failure; under 1 reads -99 to 0, where 0 succeeds.
        ({"medicine": 0}, "medicine", 1),
        # d% under 150 reads 50 to 149: certain success; under 99 reads -1 to 98, where -1 fails.
        ({"medicine": 150}, "medicine", 99),
        # 1d20 + 40 over the usual 11 reads 30 to 49: certain success. Over 37 it reads 4 to 23,
        # where 4 is a partial success; over 36 it would read 5 to 24, all successes.
        ({"skill": 40}, "lockpicking", 37),
        # 1d20 - 40 over 11 reads -50 to -31: certain failure. Over -20 it reads -19 to 0, where 0 is a
        # partial success; over -19 it would read -20 to -1, all failures.
        ({"skill": -40}, "lockpicking", -20),
    ],
)
def test_a_target_that_would_be_certain_is_moved_to_the_nearest_that_is_not(
    tmp_path: Path, variables: dict[str, Any], check: str, target: int
) -> None:
    world = load_world(write_world(tmp_path / "extremes", world_with(**variables), DICE))
    assert target_for(world.check(check), world.character("Ada")) == target


async def play(store: Store, folder: Path, texts: list[str], faces: list[int]) -> list[RoundResult]:
    game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces(faces))
    story = game.start_story(folder)
    results = [await game.play(story, text) for text in texts]
    await game.settle()
    return results


def test_a_check_that_cannot_go_either_way_is_passed_over_for_the_next(store: Store, tmp_path: Path) -> None:
    # Ada's strength 3 makes hauling read 4 to 9: always ashore. The net check also matches "net".
    folder = write_world(tmp_path / "strong", world_with(strength=3), DICE)
    world = load_world(folder)
    chosen = choose_check(world, "I haul the net ashore.")
    assert chosen is not None and chosen[0].key == "net"
    [result] = run(play(store, folder, ["I haul the net ashore."], [3, 4]))
    assert [(roll.check, roll.band) for roll in result.rolls] == [("net", "Mended")]
    assert result.refusals == []


def test_when_no_matching_check_can_go_either_way_the_narration_says_why(store: Store, tmp_path: Path) -> None:
    folder = write_world(tmp_path / "strong", world_with(strength=3), DICE)
    [result] = run(play(store, folder, ["I haul the boat."], []))
    assert result.rolls == [] and result.refusals == []
    assert result.narration.startswith("(rehearsal)")
    assert (
        "Nothing was rolled: every roll of Hauling for Ada succeeds (1d6 reads 1 to 6, 4 to 9 with strength +3),"
        " so its outcome is certain." in result.narration
    )
