"""Authoring details of dice.json and the commands around it (issue 41, point 5), and the new dice forms
where a world meets them: `gm check`, `/roll`, `gm odds`, dice at the table and fair dice."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.engine.commands import RollDice, parse_command
from gm.engine.typed_dice import WrongFaces, question_for, read_faces
from gm.integrity import fair
from gm.rules.validation import parse_rules, validate
from tests.support.command_line import gm


def check(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "key": "climb",
        "name": "Climb",
        "use": "Scaling a wall.",
        "dice": "1d20",
        "bands": [
            {"label": "Fall", "max": 9, "result": "failed"},
            {"label": "Up", "min": 10, "result": "succeeded"},
        ],
    }
    return {**base, **changes}


def test_a_check_whose_bands_all_give_one_result_is_a_warning() -> None:
    same = check(
        bands=[{"label": "Slip", "max": 9, "result": "failed"}, {"label": "Fall", "min": 10, "result": "failed"}]
    )
    [problem] = validate({"checks": [same]})
    assert problem.severity == "warning" and problem.path == "$.checks[0].bands"
    assert "'climb'" in problem.message and "'failed'" in problem.message
    assert validate({"checks": [check()]}) == []


def test_band_labels_are_compared_in_composed_form() -> None:
    composed = unicodedata.normalize("NFC", "Café")
    decomposed = unicodedata.normalize("NFD", "Café")
    assert composed != decomposed
    bands = [
        {"label": composed, "max": 9, "result": "failed"},
        {"label": decomposed, "min": 10, "result": "succeeded"},
    ]
    [problem] = [p for p in validate({"checks": [check(bands=bands)]}) if p.severity == "error"]
    assert problem.path == "$.checks[0].bands[1].label" and "already used by bands[0]" in problem.message


def test_a_natural_finds_its_band_in_either_form() -> None:
    bands = [
        {"label": unicodedata.normalize("NFC", "Échec"), "max": 9, "result": "failed"},
        {"label": "Up", "min": 10, "result": "succeeded"},
    ]
    natural = {"face": 1, "band": unicodedata.normalize("NFD", "échec")}
    data = {"checks": [check(bands=bands, naturals=[natural])]}
    assert [p for p in validate(data) if p.severity == "error"] == []
    assert parse_rules(data)["climb"].naturals[0].band == natural["band"]


def test_check_json_on_a_file_that_is_not_json_is_json(tmp_path: Path) -> None:
    broken = tmp_path / "dice.json"
    broken.write_text("{not json")
    alone = gm("check", broken, "--json")
    assert alone.returncode == 1 and alone.stderr == ""
    report = json.loads(alone.stdout)
    assert report["ok"] is False and report["problems"][0]["world"] == str(broken)
    plain = gm("check", broken)  # without --json it stays one error line, exit 2
    assert plain.returncode == 2 and plain.stderr.startswith("error:")


@pytest.mark.parametrize("line", ["/roll\t2d6 pick the lock", "/roll \t 2d6 pick the lock", "/ROLL\t2d6 pick the lock"])
def test_roll_followed_by_a_tab_is_a_roll(line: str) -> None:
    command = parse_command(line)
    assert isinstance(command, RollDice)
    assert command.roll.expression.text == "2d6" and command.roll.purpose == "pick the lock"


def test_the_new_forms_in_a_world_check() -> None:
    pool = check(
        dice="8d10!",
        reading="successes",
        hit=8,
        bands=[{"label": "Miss", "max": 0, "result": "failed"}, {"label": "Hit", "min": 1, "result": "succeeded"}],
    )
    aces = check(dice="1d6!")  # 6 always explodes: a band need not hold 6 (only 1-5, then 7 and more)
    aces["bands"] = [
        {"label": "Low", "max": 5, "result": "failed"},
        {"label": "High", "min": 7, "result": "succeeded"},
    ]
    counted = check(key="counted", dice="5d10>=7f1", bands=[{"label": "No", "max": 0, "result": "failed"}])
    counted["bands"].append({"label": "Yes", "min": 1, "result": "succeeded"})
    problems = validate({"checks": [pool, {**aces, "key": "aces"}, counted]})
    assert [p for p in problems if p.severity == "error"] == []
    refused = validate({"checks": [check(dice="5d10>=7", reading="successes", hit=8)]})
    assert any("counts its own successes" in p.message for p in refused)


@pytest.mark.slow
def test_odds_command_on_the_hardest_keep_is_exact() -> None:
    ran = gm("odds", "100d1000kh50", "--json", "--exact")
    assert ran.returncode == 0, ran.stderr
    data = json.loads(ran.stdout)
    assert data["exact"] is True and data["min"] == 50 and data["max"] == 50_000


def test_typed_faces_of_exploding_dice() -> None:
    question = question_for(1, "climb", "Climb", "Odile", dice.parse("3d6!"))
    assert "each 6 on a d6 adds one more d6, at most 32 more a die" in question.text
    assert read_faces("6 2 3 4", question) == [6, 2, 3, 4]
    with pytest.raises(WrongFaces, match="needs more faces than the 3 typed"):
        read_faces("6 2 3", question)
    with pytest.raises(WrongFaces, match="used 4 of the 5 faces typed"):
        read_faces("6 2 3 4 5", question)
    fudge = question_for(1, "climb", "Climb", "Odile", dice.parse("4dF"))
    assert read_faces("+ - 0 +", fudge) == [3, 1, 2, 3]


def test_fair_dice_derive_rerolls_and_explosions_as_rolled() -> None:
    key = fair.key_for(fair.new_seed(), None)
    for notation in ("3d6!", "4d6r1kh3", "2d20ro<3kh1", "4dF", "10d10!>=8"):
        faces = fair.derive_faces(key, "story", 7, notation)
        rolled = dice.replay(notation, faces)  # the derived faces are exactly what the notation rolls
        expected = [fair.face(key, "story", 7, index, term.sides) for index, term in _dice_in_order(notation, faces)]
        assert [face for term in faces for face in term] == expected
        assert rolled.total in {value for value, _ in dice.odds(notation).items()}


def _dice_in_order(notation: str, faces: list[list[int]]) -> list[tuple[int, dice.Dice]]:
    """Each face's die number in the roll, with its term: numbered in the order drawn, term after term."""
    expression = dice.parse(notation)
    numbered: list[tuple[int, dice.Dice]] = []
    for term, term_faces in zip(expression.dice, faces):
        for _ in term_faces:
            numbered.append((len(numbered), term))
    return numbered
