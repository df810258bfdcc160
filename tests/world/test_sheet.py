"""A character's sheet: world.json's changeable variables, their problems, and a change applied or refused."""

from __future__ import annotations

from typing import Any

import pytest

from gm.errors import SheetRefused
from gm.world.definition import validate_world, world_from_data
from gm.world.sheet import Change, apply, start_sheets, value_text

WORLD: dict[str, Any] = {
    "title": "The Customs House",
    "premise": "A forger at work.",
    "characters": [
        {
            "name": "Mara",
            "role": "player",
            "variables": {
                "hp": {"value": 7, "min": 0, "max": 10},
                "kit": {"items": ["wax", {"name": "blank manifest", "count": 3}]},
                "state": {"conditions": {"wounded": False, "soaked": True}},
                "nerve": 2,
                "home": "the docks",
            },
        },
        {"name": "Tomas", "role": "npc", "variables": {"hp": {"value": 5, "min": 0}}},
    ],
}
DICE = {
    "checks": [
        {
            "key": "fight",
            "name": "Fight",
            "use": "a blow",
            "dice": "1d20",
            "modifier": "hp",
            "bands": [
                {
                    "label": "Hit",
                    "result": "succeeded",
                    "min": 11,
                    "effects": [{"variable": "hp", "of": "opponent", "by": "-1d6"}],
                },
                {"label": "Miss", "result": "failed", "max": 10},
            ],
        }
    ]
}


def _variables() -> dict[str, dict[str, Any]]:
    world = world_from_data(WORLD, DICE)
    return {character.name: dict(character.variables) for character in world.characters}


def test_the_start_sheets_hold_only_what_can_change_in_normal_form() -> None:
    sheets = start_sheets(WORLD["characters"])
    assert sheets == {
        "Mara": {
            "hp": {"value": 7, "min": 0, "max": 10},
            "kit": {"items": [{"name": "wax", "count": 1}, {"name": "blank manifest", "count": 3}]},
            "state": {"conditions": {"wounded": False, "soaked": True}},
        },
        "Tomas": {"hp": {"value": 5, "min": 0}},
    }
    assert [value_text(entry) for entry in sheets["Mara"].values()] == [
        "7 (0 to 10)",
        "wax, blank manifest x3",
        "soaked (of wounded, soaked)",
    ]


def test_a_check_modifier_reads_the_sheet_value_of_the_moment() -> None:
    world = world_from_data(WORLD, DICE)
    check, mara = world.check("fight"), world.character("Mara")
    assert world.modifier_for(check, mara) == 7
    sheets, _ = apply(world.start_sheets, Change("Mara", "hp", "adjust", -4), _variables())
    assert world.modifier_for(check, mara, sheets) == 3
    assert world.rules is not None and world.rules["fight"].bands[0].effects[0].by == "-1d6"


@pytest.mark.parametrize(
    ("change", "kind", "words"),
    [
        (Change("Zed", "hp", "set", 1), "unknown_character", "there is no character 'Zed'"),
        (Change("Mara", "mana", "set", 1), "unknown_variable", "Mara has no variable 'mana'"),
        (Change("Mara", "nerve", "adjust", 1), "fixed", "'nerve' is fixed for the story"),
        (Change("Mara", "kit", "adjust", 1), "wrong_type", "must be add or remove"),
        (Change("Mara", "hp", "adjust", -8), "out_of_bounds", "cannot become -1"),
        (Change("Mara", "hp", "set", 11), "out_of_bounds", "within its bounds 0 to 10"),
        (Change("Mara", "kit", "remove", 1, item="rope"), "not_held", "holds no 'rope'"),
        (Change("Mara", "kit", "remove", 4, item="Blank Manifest"), "not_held", "holds 3 'blank manifest'"),
        (Change("Mara", "state", "on", condition="cold"), "unknown_condition", "has no condition 'cold'"),
    ],
)
def test_a_change_the_sheet_cannot_take_is_refused_in_one_sentence(change: Change, kind: str, words: str) -> None:
    sheets = start_sheets(WORLD["characters"])
    with pytest.raises(SheetRefused) as refused:
        apply(sheets, change, _variables())
    assert refused.value.kind == kind
    assert words in refused.value.sentence and "\n" not in refused.value.sentence
    assert sheets == start_sheets(WORLD["characters"])  # nothing changed


def test_a_rolled_amount_is_clamped_at_the_bound_and_says_so() -> None:
    sheets = start_sheets(WORLD["characters"])
    after, applied = apply(sheets, Change("mara", "HP", "adjust", -30, source="rolled", roll=4), _variables())
    assert after["Mara"]["hp"]["value"] == 0 and applied.clamped and (applied.before, applied.after) == (7, 0)
    assert applied.character == "Mara" and applied.variable == "hp"


def test_items_and_conditions_change_with_counts_and_states() -> None:
    sheets = start_sheets(WORLD["characters"])
    sheets, removed = apply(sheets, Change("Mara", "kit", "remove", 3, item="blank manifest"), _variables())
    sheets, added = apply(sheets, Change("Mara", "kit", "add", 2, item="lock picks"), _variables())
    sheets, wounded = apply(sheets, Change("Mara", "state", "on", condition="Wounded"), _variables())
    assert sheets["Mara"]["kit"] == {"items": [{"name": "wax", "count": 1}, {"name": "lock picks", "count": 2}]}
    assert (removed.before, removed.after, added.after, wounded.condition, wounded.after) == (3, 0, 2, "wounded", True)
    assert Change.from_json(added.to_json()) == added


@pytest.mark.parametrize(
    ("variable", "path", "words"),
    [
        ({"value": 12, "min": 0, "max": 10}, "$.characters[0].variables.v.value", "starts at 12, outside"),
        ({"value": 1, "min": 5, "max": 2}, "$.characters[0].variables.v.min", "min 5 above its max 2"),
        ({"value": 1.5}, "$.characters[0].variables.v.value", "expected a whole number"),
        ({"items": ["wax", "Wax"]}, "$.characters[0].variables.v.items", "names the item 'Wax' twice"),
        ({"items": [{"name": "wax", "count": 0}]}, "$.characters[0].variables.v.items[0].count", "too small"),
        ({"conditions": {"wet": 1}}, "$.characters[0].variables.v.conditions.wet", "expected true or false"),
        ({"hp": 3}, "$.characters[0].variables.v", "or a sheet entry"),
    ],
)
def test_a_sheet_mistake_names_character_and_variable(variable: Any, path: str, words: str) -> None:
    world = {
        "title": "t",
        "premise": "p",
        "characters": [{"name": "M", "role": "player", "variables": {"v": variable}}],
    }
    problems = validate_world(world)
    assert any(problem.path == path and words in problem.message for problem in problems), problems


def test_a_bad_effect_amount_in_dice_json_is_a_problem_at_its_path() -> None:
    broken = {
        "checks": [
            {
                **DICE["checks"][0],
                "bands": [
                    {**DICE["checks"][0]["bands"][0], "effects": [{"variable": "hp", "by": "-x"}]},
                    DICE["checks"][0]["bands"][1],
                ],
            }
        ]
    }
    problems = validate_world(WORLD, broken)
    assert any(p.path == "$.checks[0].bands[0].effects[0].by" and p.file == "dice.json" for p in problems), problems


def test_an_effect_on_a_number_nobody_holds_is_a_warning() -> None:
    band = {**DICE["checks"][0]["bands"][0], "effects": [{"variable": "mana", "by": "-1d4"}]}
    dice = {"checks": [{**DICE["checks"][0], "bands": [band, DICE["checks"][0]["bands"][1]]}]}
    problems = validate_world(WORLD, dice)
    found = [p for p in problems if p.path == "$.checks[0].bands[0].effects[0].variable"]
    assert [(p.severity, p.file) for p in found] == [("warning", "dice.json")] and "'mana'" in found[0].message
