"""The `gm` command line, run as a real process: output, exit codes, and never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "dice.json"


def gm(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gm.cli", *map(str, arguments)], capture_output=True, text=True, timeout=120
    )


def assert_one_error_line(result: subprocess.CompletedProcess[str], *words: str) -> None:
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


def test_odds_json_is_exact() -> None:
    result = gm("odds", "3d6", "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert (data["min"], data["max"], data["mean"]) == (3, 18, "21/2")
    assert data["distribution"]["3"] == "1/216" and data["distribution"]["10"] == "1/8"  # 27 of 216 ways
    assert sum(Fraction(value) for value in data["distribution"].values()) == 1


def test_odds_histogram_has_a_row_per_value() -> None:
    lines = gm("odds", "2d6").stdout.splitlines()
    assert lines[0].startswith("2d6: total 2 to 12")
    rows = {int(line.split()[0]): line for line in lines[1:]}
    assert sorted(rows) == list(range(2, 13))
    assert "16.67%" in rows[7] and "2.78%" in rows[12]
    assert rows[7].count("\u2588") > rows[12].count("\u2588")


def test_odds_of_a_check() -> None:
    result = gm("odds", EXAMPLE, "attempt", "--target", "15", "--modifier", "2", "--json")
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
