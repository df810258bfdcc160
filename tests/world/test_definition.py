"""world.json and a world folder: validation, coverage per character, and what a world can be asked
(gm.world.loading)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gm.errors import CharacterCannotRoll, ProblemsError, UnknownCharacter, UnknownCheck
from gm.problems import Problem
from gm.rules.validation import parse_rules
from gm.world.definition import Character, World, modifier_for, validate_world, world_from_data
from gm.world.loading import check_world, load_world


def world_json(**changes: Any) -> dict[str, Any]:
    world: dict[str, Any] = {
        "title": "The Drowned Lantern",
        "premise": "A harbour town whose lighthouse went dark the night the fishing fleet was due home.",
        "instructions": "Keep it tense; nobody in town tells the whole truth.",
        "characters": [
            {
                "name": "Mara",
                "role": "player",
                "description": "A smuggler who knows the reefs.",
                "variables": {"skill": 3, "strength": 2, "mood": "wary"},
            },
            {"name": "Tomas", "role": "npc", "description": "The lighthouse keeper.", "variables": {"skill": 1}},
        ],
    }
    world.update(changes)
    return world


def brawl(**changes: Any) -> dict[str, Any]:
    """An absolute check adding `strength`: 2d6 reads 2 to 12, and the bands hold everything up to 14."""
    check: dict[str, Any] = {
        "key": "brawl",
        "name": "Brawl",
        "use": "Fist fights.",
        "dice": "2d6",
        "modifier": "strength",
        "bands": [
            {"label": "Miss", "max": 6, "result": "failed"},
            {"label": "Graze", "min": 7, "max": 9, "result": "partial"},
            {"label": "Hit", "min": 10, "max": 14, "result": "succeeded"},
        ],
    }
    check.update(changes)
    return check


def attempt(**changes: Any) -> dict[str, Any]:
    """An over check adding `skill`."""
    check: dict[str, Any] = {
        "key": "attempt",
        "name": "Risky attempt",
        "use": "Anything risky.",
        "dice": "1d20",
        "compare": "over",
        "modifier": "skill",
        "bands": [
            {"label": "Failure", "max": -1, "result": "failed"},
            {"label": "Success", "min": 0, "result": "succeeded"},
        ],
    }
    check.update(changes)
    return check


def dice_json(*checks: dict[str, Any]) -> dict[str, Any]:
    return {"checks": list(checks) if checks else [brawl(), attempt()]}


def write_world(folder: Path, world: Any, dice: Any | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text(json.dumps(world))
    if dice is not None:
        (folder / "dice.json").write_text(json.dumps(dice))
    return folder


def errors_of(world: Any, dice: Any | None = None) -> list[Problem]:
    return [problem for problem in validate_world(world, dice) if problem.severity == "error"]


def warnings_of(world: Any, dice: Any | None = None) -> list[Problem]:
    return [problem for problem in validate_world(world, dice) if problem.severity == "warning"]


def has(problems: list[Problem], file: str, path: str, *words: str) -> bool:
    return any(p.file == file and p.path == path and all(word in p.message for word in words) for p in problems)


def test_a_valid_world_loads_with_its_rules(tmp_path: Path) -> None:
    folder = write_world(tmp_path / "lantern", world_json(), dice_json())
    assert check_world(folder) == []
    world = load_world(folder)
    assert world.title == "The Drowned Lantern"
    assert world.premise.startswith("A harbour town")
    assert world.instructions == "Keep it tense; nobody in town tells the whole truth."
    assert [(c.name, c.role) for c in world.characters] == [("Mara", "player"), ("Tomas", "npc")]
    assert dict(world.characters[0].variables) == {"skill": 3, "strength": 2, "mood": "wary"}
    assert world.characters[1].description == "The lighthouse keeper."
    assert [c.name for c in world.players] == ["Mara"] and [c.name for c in world.npcs] == ["Tomas"]
    assert world.rules is not None and [check.key for check in world.rules.checks] == ["brawl", "attempt"]
    assert world.check("attempt").compare == "over"
    assert world.world_data == world_json() and world.dice_data == dice_json()
    assert load_world(folder / "world.json") == world  # the world.json itself names the same world


def test_a_world_rebuilds_from_its_copied_definitions() -> None:
    world_data, dice_data = world_json(), dice_json()
    world = world_from_data(world_data, dice_data)
    world_data["title"] = "changed after loading"
    world_data["characters"][0]["variables"]["skill"] = 99
    assert world.title == "The Drowned Lantern" and world.world_data["title"] == "The Drowned Lantern"
    assert world.characters[0].variables["skill"] == 3
    with pytest.raises(TypeError):
        world.characters[0].variables["skill"] = 4  # type: ignore[index]
    assert world_from_data(world.world_data, world.dice_data) == world


def test_a_world_without_dice_json_has_no_checks(tmp_path: Path) -> None:
    folder = write_world(tmp_path / "quiet", world_json())
    assert check_world(folder) == []
    world = load_world(folder)
    assert world.rules is None and world.dice_data is None
    with pytest.raises(UnknownCheck, match=r"no dice\.json"):
        world.check("brawl")


def test_optional_fields_default_to_empty() -> None:
    data = world_json(characters=[{"name": "Mara", "role": "player"}])
    del data["instructions"]
    bare = world_from_data(data)
    assert bare.instructions == ""
    assert bare.characters[0].description == "" and dict(bare.characters[0].variables) == {}


def one_character(**fields: Any) -> dict[str, Any]:
    return world_json(characters=[{"name": "Mara", "role": "player", **fields}])


@pytest.mark.parametrize(
    ("world", "path", "words"),
    [
        (world_json(title=""), "$.title", "empty"),
        (world_json(title="T" * 121), "$.title", "121 characters long, at most 120"),
        ({k: v for k, v in world_json().items() if k != "premise"}, "$", "'premise' is missing"),
        (world_json(premise="P" * 4001), "$.premise", "at most 4000"),
        (world_json(instructions="I" * 4001), "$.instructions", "at most 4000"),
        (world_json(setting="x"), "$", "'setting' is not known"),
        (world_json(characters=[]), "$.characters", "at least 1"),
        (world_json(characters="Mara"), "$.characters", "expected a list"),
        (world_json(characters=["Mara"]), "$.characters[0]", "expected an object"),
        (world_json(characters=[{"name": "M", "role": "player"}] * 21), "$.characters", "21 entries, at most 20"),
        (one_character(role="hero"), "$.characters[0].role", "'player'"),
        (world_json(characters=[{"name": "Mara"}]), "$.characters[0]", "'role' is missing"),
        (one_character(name=""), "$.characters[0].name", "empty"),
        (one_character(name="M" * 41), "$.characters[0].name", "at most 40"),
        (one_character(name=" Mara"), "$.characters[0].name", "spaces"),
        (one_character(name="Ma\nra"), "$.characters[0].name", "line breaks"),
        (one_character(description="D" * 2001), "$.characters[0].description", "at most 2000"),
        (one_character(age=30), "$.characters[0]", "'age' is not known"),
        (one_character(variables=[1]), "$.characters[0].variables", "expected an object"),
        (
            one_character(variables={"lucky": True}),
            "$.characters[0].variables.lucky",
            "expected a number or text (fixed for the story), or a sheet entry",
        ),
        (one_character(variables={"gear": ["rope"]}), "$.characters[0].variables.gear", "a number or text"),
        (one_character(variables={"gold": None}), "$.characters[0].variables.gold", "found null"),
        (one_character(variables={"hit points": True}), "$.characters[0].variables['hit points']", "found true"),
        (one_character(variables={f"v{n}": n for n in range(41)}), "$.characters[0].variables", "at most 40"),
        (one_character(variables={"": 1}), "$.characters[0].variables", "name must not be empty"),
        (one_character(variables={"v" * 41: 1}), "$.characters[0].variables", "41 characters long, at most 40"),
        (one_character(variables={"luck": float("inf")}), "$.characters[0].variables.luck", "not a number"),
        ([], "$", "expected an object"),
    ],
)
def test_each_mistake_is_reported_at_its_path(world: Any, path: str, words: str) -> None:
    problems = errors_of(world)
    assert has(problems, "world.json", path, words), problems


def test_a_story_needs_a_player() -> None:
    npcs_only = world_json(characters=[{"name": "Tomas", "role": "npc"}, {"name": "Ilse", "role": "npc"}])
    [problem] = errors_of(npcs_only)
    assert (problem.file, problem.path) == ("world.json", "$.characters")
    assert "'player'" in problem.message
    assert len(errors_of(world_json(characters=[]))) == 1  # "needs at least 1 entry" says it already


def test_names_are_unique_ignoring_case() -> None:
    characters = [
        {"name": "Mara", "role": "player"},
        {"name": "Tomas", "role": "npc"},
        {"name": "MARA", "role": "npc"},
    ]
    [problem] = errors_of(world_json(characters=characters))
    assert problem.path == "$.characters[2].name"
    assert "'MARA'" in problem.message and "characters[0]" in problem.message


def test_character_lookup_ignores_case_and_lists_known_names() -> None:
    world = world_from_data(world_json())
    assert world.character("mara").name == "Mara"
    assert world.character(" TOMAS ").name == "Tomas"
    with pytest.raises(UnknownCharacter) as caught:
        world.character("Ilse")
    assert str(caught.value) == "there is no character 'Ilse'; the characters are: Mara, Tomas"


def test_modifier_variables_must_be_whole_numbers_where_a_check_adds_them() -> None:
    characters = [
        {"name": "Mara", "role": "player", "variables": {"skill": "sharp", "strength": 2.5}},
        {"name": "Tomas", "role": "npc", "variables": {"skill": 2.0, "strength": 1, "mood": 0.5}},
    ]
    problems = errors_of(world_json(characters=characters), dice_json())
    assert has(problems, "world.json", "$.characters[0].variables.skill", "'attempt'", "whole number", "'sharp'")
    assert has(problems, "world.json", "$.characters[0].variables.strength", "'brawl'", "whole number", "2.5")
    assert len(problems) == 2  # 2.0 counts as whole, and no check adds 'mood'
    world = world_from_data(world_json(characters=[{**characters[1], "role": "player"}]), dice_json())
    assert world.modifier_for(world.check("attempt"), world.character("Tomas")) == 2


def test_string_variables_are_fine_when_no_check_adds_them() -> None:
    world = world_json(characters=[{"name": "Mara", "role": "player", "variables": {"skill": "sharp"}}])
    assert validate_world(world) == []
    assert errors_of(world, dice_json(brawl())) == []


def test_a_modifier_that_pushes_an_absolute_check_past_its_bands_names_check_character_and_values() -> None:
    characters = [
        {"name": "Mara", "role": "player", "variables": {"strength": 5}},  # 2d6+5 reads 7 to 17; bands end at 14
        {"name": "Tomas", "role": "npc", "variables": {"skill": 1}},  # no strength: never rolls a brawl
        {"name": "Ilse", "role": "npc", "variables": {"strength": -3}},  # -1 to 9: Miss has no lower end
    ]
    problems = errors_of(world_json(characters=characters), dice_json())
    [problem] = problems
    assert (problem.file, problem.path) == ("dice.json", "$.checks[0].bands")
    assert "'brawl'" in problem.message and "Mara" in problem.message and "15 to 17" in problem.message
    assert "Tomas" not in problem.message and "Ilse" not in problem.message
    # Ilse can never reach "Hit" (10 to 14); a band out of one character's reach is no mistake.
    assert warnings_of(world_json(characters=characters), dice_json()) == []


def test_characters_sharing_a_modifier_share_one_problem() -> None:
    characters = [
        {"name": "Mara", "role": "player", "variables": {"strength": 3}},  # 5 to 15: 15 is past the bands
        {"name": "Tomas", "role": "npc", "variables": {"strength": 3}},
        {"name": "Ilse", "role": "npc", "variables": {"strength": 4}},  # 6 to 16
    ]
    messages = [problem.message for problem in errors_of(world_json(characters=characters), dice_json())]
    assert len(messages) == 2
    assert any("Mara and Tomas" in m and "the value 15 " in m for m in messages)
    assert any("Ilse" in m and "15 to 16" in m for m in messages)


def test_over_checks_take_any_modifier() -> None:
    # An over check's gaps depend on the target, so a large skill is no error (a gap roll is void instead).
    characters = [{"name": "Mara", "role": "player", "variables": {"skill": 40}}]
    bands = [
        {"label": "Failure", "max": -1, "result": "failed"},
        {"label": "Success", "min": 0, "max": 5, "result": "succeeded"},
    ]
    assert errors_of(world_json(characters=characters), dice_json(attempt(bands=bands))) == []


def test_a_check_no_character_can_roll_is_a_warning(tmp_path: Path) -> None:
    luck = {
        "key": "luck",
        "name": "Luck",
        "use": "Pure chance.",
        "dice": "1d6",
        "modifier": "fortune",
        "bands": [{"label": "Low", "max": 3, "result": "failed"}, {"label": "High", "min": 4, "result": "partial"}],
    }
    data = dice_json(brawl(), luck)
    assert errors_of(world_json(), data) == []
    [warning] = warnings_of(world_json(), data)
    assert (warning.file, warning.path) == ("dice.json", "$.checks[1].modifier")
    assert "'fortune'" in warning.message and "'luck'" in warning.message
    load_world(write_world(tmp_path / "w", world_json(), data))  # a warning does not stop a world


def test_modifier_for() -> None:
    rules = parse_rules(dice_json(brawl()))
    assert modifier_for(rules["brawl"], Character("Mara", "player", variables={"strength": 4})) == 4
    no_modifier = parse_rules({"checks": [{k: v for k, v in brawl().items() if k != "modifier"}]})["brawl"]
    assert modifier_for(no_modifier, Character("Tomas", "npc")) == 0
    with pytest.raises(CharacterCannotRoll) as caught:
        modifier_for(rules["brawl"], Character("Tomas", "npc", variables={"skill": 1}))
    assert (caught.value.check_key, caught.value.character, caught.value.variable) == ("brawl", "Tomas", "strength")
    message = str(caught.value)
    assert "'brawl'" in message and "Tomas" in message and "'strength'" in message
    for value in ("strong", 2.5, True):
        with pytest.raises(CharacterCannotRoll, match=r"'brawl'.*Mara.*'strength'.*whole number"):
            modifier_for(rules["brawl"], Character("Mara", "player", variables={"strength": value}))


def test_every_problem_at_once_across_both_files() -> None:
    world = world_json(
        title="",
        characters=[
            {"name": "Mara", "role": "npc", "variables": {"strength": "big"}},
            {"name": "mara", "role": "villain"},
        ],
    )
    dice = dice_json(brawl(dice="2d6+x"), attempt(name=""), brawl(key="shove", modifier="skill"))
    found = {(problem.file, problem.path) for problem in errors_of(world, dice)}
    assert found == {
        ("world.json", "$.title"),
        ("world.json", "$.characters"),  # no player: 'villain' is no role at all
        ("world.json", "$.characters[0].variables.strength"),  # brawl adds it, though its dice are broken
        ("world.json", "$.characters[1].name"),
        ("world.json", "$.characters[1].role"),
        ("dice.json", "$.checks[0].dice"),
        ("dice.json", "$.checks[1].name"),
    }
    problems = validate_world(world, dice)
    files = [problem.file for problem in problems]
    assert files == sorted(files, key=lambda file: file != "world.json")  # world.json's problems come first


def test_a_sound_check_beside_a_broken_one_still_tries_the_characters() -> None:
    world = world_json(characters=[{"name": "Mara", "role": "player", "variables": {"skill": "sharp"}}])
    problems = errors_of(world, dice_json(brawl(dice="2d6+x"), attempt()))
    assert has(problems, "dice.json", "$.checks[0].dice", "column 5")
    assert has(problems, "world.json", "$.characters[0].variables.skill", "'attempt'")


def test_load_world_refuses_a_world_failing_its_check_with_every_problem(tmp_path: Path) -> None:
    characters = [{"name": "Mara", "role": "player", "variables": {"strength": 5}}, {"name": "MARA", "role": "npc"}]
    folder = write_world(tmp_path / "bad", world_json(characters=characters), dice_json(brawl(), attempt(use="")))
    with pytest.raises(ProblemsError) as caught:
        load_world(folder)
    assert {(p.file, p.path) for p in caught.value.errors} == {
        ("world.json", "$.characters[1].name"),
        ("dice.json", "$.checks[0].bands"),  # Mara's strength 5 reaches 17
        ("dice.json", "$.checks[1].use"),
    }
    assert str(caught.value).startswith(f"{folder}: world.json $.characters[1].name:")
    assert str(caught.value).endswith("(and 2 more)")


def test_unreadable_files_are_reported_together_with_their_file(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "world.json").write_text('{\n  "title": "T",\n}\n')
    (folder / "dice.json").write_text('{"checks": [], "checks": []}')
    with pytest.raises(ProblemsError) as caught:
        check_world(folder)
    [world_problem, dice_problem] = caught.value.problems
    assert world_problem.file == "world.json" and "line 3" in world_problem.message
    assert dice_problem.file == "dice.json" and "appears twice" in dice_problem.message


def test_non_finite_numbers_in_the_file_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    text = json.dumps(world_json()).replace('"skill": 1', '"skill": Infinity')  # Python's json reads Infinity
    (folder / "world.json").write_text(text)
    [problem] = check_world(folder)
    assert problem.path == "$.characters[1].variables.skill" and "not a number" in problem.message


def test_a_folder_with_dice_json_only_is_checked_as_dice_json(tmp_path: Path) -> None:
    folder = tmp_path / "rules-only"
    folder.mkdir()
    (folder / "dice.json").write_text(
        json.dumps(
            dice_json(
                brawl(
                    bands=[
                        {"label": "Miss", "max": 3, "result": "failed"},
                        {"label": "Graze", "min": 4, "max": 6, "result": "partial"},
                    ]
                )
            )
        )
    )
    [problem] = check_world(folder)
    assert (problem.file, problem.path) == ("dice.json", "$.checks[0].bands") and "7 to 12" in problem.message
    with pytest.raises(ProblemsError, match=r"no world\.json"):
        load_world(folder)


def test_a_lone_dice_json_file_is_checked_as_before(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(dice_json(attempt(compare="sideways"))))
    [problem] = check_world(path)
    assert (problem.file, problem.path) == (None, "$.checks[0].compare")
    with pytest.raises(ProblemsError, match="not a world"):
        load_world(path)


def test_an_empty_folder_is_no_world(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError, match=r"no world\.json and no dice\.json"):
        check_world(tmp_path)


def test_world_is_frozen() -> None:
    world: World = world_from_data(copy.deepcopy(world_json()))
    with pytest.raises(AttributeError):
        world.title = "other"  # type: ignore[misc]


def test_each_missing_member_is_named_once() -> None:
    world = {k: v for k, v in world_json().items() if k not in ("title", "premise")}
    messages = sorted(problem.message for problem in errors_of(world))
    assert messages == ["'premise' is missing", "'title' is missing"]
