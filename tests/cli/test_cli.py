"""The `gm` command line: output, exit codes, and never a traceback.

Commands run in this process through `gm.cli.main`; the last test runs the installed `gm` command
as a real process.
"""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tests.support.command_line import Ran, gm, installed_gm
from tests.support.paths import REPOSITORY

EXAMPLE = REPOSITORY / "examples" / "dice.json"


def assert_one_error_line(result: Ran | subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0]


def test_roll_with_seed_is_reproducible_and_adds_up() -> None:
    first, second = (
        gm("roll", "4d6kh3", "+", "2", "--seed", "7", "--json"),
        gm("roll", "4d6kh3+2", "--seed", "7", "--json"),
    )
    assert first.returncode == 0 and first.stdout == second.stdout
    data = json.loads(first.stdout)
    dice_term = data["terms"][0]
    kept = sorted(dice_term["faces"])[1:]
    assert data["total"] == sum(kept) + 2
    assert dice_term["kept"].count(False) == 1


def test_roll_plain_line() -> None:
    result = gm("roll", "3d6")
    assert result.returncode == 0
    line = result.stdout.strip()
    faces = [int(face) for face in line.split("(")[1].split(")")[0].split(", ")]
    assert line == f"3d6 ({', '.join(map(str, faces))}) = {sum(faces)}"


def test_roll_successes() -> None:
    data = json.loads(gm("roll", "6d10", "--hit", "8", "--seed", "1", "--json").stdout)
    assert data["successes"] == sum(1 for face in data["terms"][0]["faces"] if face >= 8)


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (("roll", "2d6+x"), ("unexpected 'x' at column 5",)),
        (("roll", "4d6kh5"), ("keep 5 of 4",)),
        (("roll", "5d10+2", "--hit", "7"), ("constant",)),
        (("roll",), ("required",)),
        (("roll", "2d6", "--seed", "abc"), ("--seed",)),
        (("dance",), ("invalid choice",)),
        (("odds", "1d6*2"), ("column 4",)),
        (("odds", "2d6", "--target", "3"), ("--target",)),
        (("odds", str(EXAMPLE), "nope"), ("no check 'nope'", "attempt")),
        (("odds", str(EXAMPLE), "attempt"), ("needs a target",)),
        (("odds", "missing/dice.json", "attempt"), ("does not exist",)),
        (("check", "missing/dice.json"), ("does not exist",)),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(arguments: tuple[str, ...], words: tuple[str, ...]) -> None:
    assert_one_error_line(gm(*arguments), *words)


def test_odds_json_is_exact_when_asked() -> None:
    result = gm("odds", "3d6", "--json", "--exact")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert (data["min"], data["max"], data["mean"]) == (3, 18, "21/2")
    assert data["distribution"]["3"] == "1/216" and data["distribution"]["10"] == "1/8"  # 27 of 216 ways
    assert sum(Fraction(value) for value in data["distribution"].values()) == 1


def test_odds_json_is_decimal_and_small_for_wide_dice() -> None:
    result = gm("odds", "100d1000", "--json")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) < 1_000_000  # exact fractions of every value took 57 MB
    data = json.loads(result.stdout)
    assert (data["min"], data["max"], data["mean"]) == (100, 100_000, 50_050.0)
    assert data["distribution"]["50050"] == pytest.approx(0.000138, rel=0.01)  # about 1 / (sd * sqrt(2 pi))
    assert data["omitted"]["values"] + len(data["distribution"]) == 99_901
    assert data["omitted"]["probability"] < 1e-5
    refused = gm("odds", "2d6", "--exact")
    assert refused.returncode == 2 and "add --json" in refused.stderr


def test_odds_histogram_has_a_row_per_value() -> None:
    lines = gm("odds", "2d6").stdout.splitlines()
    assert lines[0].startswith("2d6: total 2 to 12")
    rows = {int(line.split()[0]): line for line in lines[1:]}
    assert sorted(rows) == list(range(2, 13))
    assert "16.67%" in rows[7] and "2.78%" in rows[12]
    assert rows[7].count("\u2588") > rows[12].count("\u2588")


def test_odds_of_a_check() -> None:
    result = gm("odds", EXAMPLE, "attempt", "--target", "15", "--modifier", "2", "--json", "--exact")
    data = json.loads(result.stdout)
    probabilities = {band["label"]: band["probability"] for band in data["bands"]}
    assert probabilities["Critical failure"] == "3/20"  # faces 1-3: 1 + 2 - 15 = -12 .. -10
    text = gm("odds", EXAMPLE.parent, "attempt", "--target", "15", "--modifier", "2").stdout
    assert "Critical failure" in text and "15.00%" in text


def test_check_good_and_bad(tmp_path: Path) -> None:
    assert gm("check", EXAMPLE).returncode == 0
    world = tmp_path / "world"
    world.mkdir()
    bad = {
        "checks": [
            {
                "key": "a",
                "name": "A",
                "use": "x",
                "dice": "2d6",
                "bands": [{"label": "L", "max": 6, "result": "failed"}],
            }
        ]
    }
    (world / "dice.json").write_text(json.dumps(bad))
    result = gm("check", world)
    assert result.returncode == 1
    assert "$.checks[0].bands" in result.stdout and "7 to 12" in result.stdout
    report = json.loads(gm("check", world, "--json").stdout)
    assert report["ok"] is False and report["problems"][0]["severity"] == "error"


def test_check_broken_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "dice.json"
    path.write_text('{\n  "checks": [\n    {"key": "a",}\n  ]\n}\n')
    assert_one_error_line(gm("check", path), "line 3")
    path.write_text('{"checks": [], "checks": []}')
    assert_one_error_line(gm("check", path), "appears twice")


def test_folder_without_dice_json(tmp_path: Path) -> None:
    assert_one_error_line(gm("check", tmp_path), "no dice.json")


def write_world(folder: Path, characters: list[dict[str, Any]], dice: dict[str, Any] | None = None) -> Path:
    """A world folder: world.json with `characters`, and dice.json (the shipped example unless given)."""
    folder.mkdir()
    world = {"title": "The Drowned Lantern", "premise": "A harbour town gone dark.", "characters": characters}
    (folder / "world.json").write_text(json.dumps(world))
    (folder / "dice.json").write_text(json.dumps(dice) if dice is not None else EXAMPLE.read_text())
    return folder


MARA_AND_TOMAS = [
    {"name": "Mara", "role": "player", "variables": {"skill": 3}},
    {"name": "Tomas", "role": "npc", "variables": {"strength": 2}},
]


def test_check_a_world_lists_problems_of_both_files(tmp_path: Path) -> None:
    brawl = {
        "key": "brawl",
        "name": "Brawl",
        "use": "x",
        "dice": "2d6",
        "modifier": "strength",
        "bands": [
            {"label": "Miss", "max": 6, "result": "failed"},
            {"label": "Hit", "min": 7, "max": 12, "result": "succeeded"},
        ],
    }
    characters = [
        {"name": "Mara", "role": "player", "variables": {"strength": "big"}},
        {"name": "Tomas", "role": "npc", "variables": {"strength": 2}},  # 2d6+2 reaches 14
    ]
    world = write_world(tmp_path / "world", characters, {"checks": [brawl]})
    result = gm("check", world)
    assert result.returncode == 1, result
    lines = result.stdout.splitlines()
    assert "has problems" in lines[0] and "2 errors" in lines[0]
    assert any("error: world.json $.characters[0].variables.strength:" in line and "'brawl'" in line for line in lines)
    assert any(
        "error: dice.json $.checks[0].bands:" in line and "Tomas" in line and "13 to 14" in line for line in lines
    )
    report = json.loads(gm("check", world / "world.json", "--json").stdout)
    assert report["ok"] is False
    assert [(p["file"], p["path"]) for p in report["problems"]] == [
        ("world.json", "$.characters[0].variables.strength"),
        ("dice.json", "$.checks[0].bands"),
    ]


def test_check_a_world_with_warnings_only_or_without_dice_json(tmp_path: Path) -> None:
    # Nobody has 'skill' any more, so the example's 'attempt' can never be rolled: a warning, exit 0.
    characters = [{"name": "Mara", "role": "player", "variables": {"wits": 3}}]
    result = gm("check", write_world(tmp_path / "warned", characters))
    assert result.returncode == 0, result
    assert "is fine" in result.stdout and "1 warning" in result.stdout
    assert "warning: dice.json $.checks[0].modifier:" in result.stdout and "'skill'" in result.stdout
    plain = write_world(tmp_path / "plain", characters)
    (plain / "dice.json").unlink()
    result = gm("check", plain)
    assert result.returncode == 0 and "no dice.json" in result.stdout and "0 errors" in result.stdout


def test_check_a_world_with_broken_json_is_one_error_line(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", MARA_AND_TOMAS)
    (world / "world.json").write_text('{"title": "T",,}')
    assert_one_error_line(gm("check", world), "world.json", "column 15")


def test_odds_for_a_character_takes_its_modifier(tmp_path: Path) -> None:
    world = write_world(tmp_path / "world", MARA_AND_TOMAS)
    result = gm("odds", world, "attempt", "--target", "12", "--character", "mara", "--json", "--exact")
    assert result.returncode == 0, result
    data = json.loads(result.stdout)
    assert (data["character"], data["modifier"]) == ("Mara", 3)
    # d20 + 3 - 12 reads -8 to 11: faces 1-8 fail (-8..-1), 9-13 partial, 14-18 succeed, 19-20 (10, 11) critical.
    probabilities = {band["label"]: band["probability"] for band in data["bands"]}
    assert probabilities == {
        "Critical failure": "0",
        "Failure": "2/5",
        "Partial success": "1/4",
        "Success": "1/4",
        "Critical success": "1/10",
    }
    text = gm("odds", world / "world.json", "attempt", "--target", "12", "--character", "Mara").stdout
    assert text.splitlines()[0].startswith("Risky attempt (attempt) for Mara: 1d20 +3, over target 12")
    assert "40.00%" in text


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (("attempt", "--target", "12", "--character", "Ilse"), ("no character 'Ilse'", "Mara, Tomas")),
        (("attempt", "--target", "12", "--character", "Tomas"), ("'attempt'", "Tomas", "'skill'")),
        (("attempt", "--target", "12", "--character", "Mara", "--modifier", "1"), ("not both",)),
        (("climb", "--character", "Mara"), ("no check 'climb'", "attempt")),
    ],
)
def test_odds_for_a_character_refuses_bad_input(
    tmp_path: Path, arguments: tuple[str, ...], words: tuple[str, ...]
) -> None:
    world = write_world(tmp_path / "world", MARA_AND_TOMAS)
    assert_one_error_line(gm("odds", world, *arguments), *words)


def test_odds_for_a_character_needs_a_sound_world(tmp_path: Path) -> None:
    assert_one_error_line(gm("odds", EXAMPLE, "attempt", "--target", "9", "--character", "Mara"), "not a world")
    assert_one_error_line(gm("odds", "2d6", "--character", "Mara"), "--character belongs to a check")
    npcs_only = write_world(tmp_path / "npcs", [{"name": "Tomas", "role": "npc", "variables": {"skill": 1}}])
    assert_one_error_line(gm("odds", npcs_only, "attempt", "--target", "9", "--character", "Tomas"), "'player'")


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_installed_command_as_a_process() -> None:
    roll = installed_gm("roll", "4d6kh3+2", "--seed", "7", "--json")
    assert roll.returncode == 0 and roll.stderr == ""
    assert roll.stdout == gm("roll", "4d6kh3+2", "--seed", "7", "--json").stdout  # the same as in this process
    assert_one_error_line(installed_gm("roll", "2d6+x"), "unexpected 'x' at column 5")
