"""The sample worlds' character sheets: what the story changes is there to play with, and every band effect
lands on a bounded number held by whoever it can fall on."""

from __future__ import annotations

import pytest

from gm.world.loading import load_world
from gm.world.sheet import kind_of
from tests.support.paths import SAMPLE_WORLDS

SHEETED = ["harbour-heist", "storm-wall"]


@pytest.mark.parametrize("name", SHEETED)
def test_the_player_has_wounds_items_and_conditions(name: str) -> None:
    world = load_world(SAMPLE_WORLDS / name)
    player = world.players[0]
    kinds = {variable: kind_of(value) for variable, value in player.variables.items()}
    bounded = [player.variables[variable] for variable, kind in kinds.items() if kind == "number"]
    assert any("min" in value and "max" in value for value in bounded), kinds  # wounds: a number with both ends
    assert {"number", "items", "conditions"} <= set(kinds.values())
    assert any(kind is None for kind in kinds.values())  # fixed variables stay for the checks' modifiers
    assert world.sheet_changes and player.name in world.start_sheets


def test_odile_carries_what_the_premise_says() -> None:
    odile = load_world(SAMPLE_WORLDS / "harbour-heist").character("Odile")
    assert odile.variables["carrying"] == {
        "items": ["wax", {"name": "blank manifest", "count": 3}, "shuttered lantern", "roll of picks"]
    }


@pytest.mark.parametrize("name", SHEETED)
def test_every_band_effect_falls_on_a_bounded_number_of_whoever_can_roll(name: str) -> None:
    world = load_world(SAMPLE_WORLDS / name)
    assert world.rules is not None
    effects = 0
    for check in world.rules.checks:
        rollers = [c for c in world.characters if check.modifier is None or check.modifier in c.variables]
        for band in check.bands:
            for effect in band.effects:
                effects += 1
                for character in rollers:
                    assert kind_of(character.variables.get(effect.variable)) == "number", (check.key, character.name)
                assert effect.by.startswith("-")  # the samples' effects are harm
    assert effects >= 1
