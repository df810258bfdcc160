"""`gm check` over several worlds at once, and every problem in a file the schema refuses in part."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.support.command_line import gm
from tests.support.paths import SAMPLE_WORLDS

BROKEN: dict[str, Any] = {
    "checks": [
        {
            "key": "a",
            "name": "A",
            "use": "x",
            "dice": "2d6",
            "modifer": "skill",  # a typo the schema refuses...
            "bands": [
                {"label": "Low", "min": 9, "max": 3, "result": "failed"},  # ...which must not hide this
                {"label": "low", "min": 2, "result": "meh"},  # ...nor this label, used twice
            ],
        }
    ]
}


def worlds_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "worlds"
    for name in ("harbour-heist", "tea-house"):
        shutil.copytree(SAMPLE_WORLDS / name, folder / name)
    broken = folder / "broken"
    shutil.copytree(SAMPLE_WORLDS / "harbour-heist", broken)
    (broken / "dice.json").write_text(json.dumps(BROKEN))
    return folder


def test_a_folder_of_worlds_checks_each_world(tmp_path: Path) -> None:
    folder = worlds_folder(tmp_path)
    result = gm("check", folder)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if not line.startswith(" ")][:3] == [
        str(folder / name) for name in ("broken", "harbour-heist", "tea-house")
    ]
    assert lines[-1] == "3 worlds checked: 1 with errors"


def test_several_paths_as_a_shell_glob_gives_them(tmp_path: Path) -> None:
    folder = worlds_folder(tmp_path)
    fine = gm("check", folder / "harbour-heist", folder / "tea-house")
    assert fine.returncode == 0 and fine.stdout.splitlines()[-1] == "2 worlds checked: 0 with errors"
    report = json.loads(gm("check", *sorted(folder.iterdir()), "--json").stdout)
    assert report["ok"] is False
    assert [(world["path"].rsplit("/", 1)[1], world["ok"]) for world in report["worlds"]] == [
        ("broken", False),
        ("harbour-heist", True),
        ("tea-house", True),
    ]
    assert {problem["world"] for problem in report["problems"]} == {str(folder / "broken")}


def test_every_problem_is_listed_even_where_the_schema_refuses_part_of_a_check(tmp_path: Path) -> None:
    result = gm("check", worlds_folder(tmp_path) / "broken")
    assert result.returncode == 1
    problems = [line.strip() for line in result.stdout.splitlines()[1:]]
    assert "error: dice.json $.checks[0].bands[0]: min 9 is above max 3" in problems
    assert "error: dice.json $.checks[0].bands[1].label: the label 'low' is already used by bands[0]" in problems
    assert any("'modifer' is not known here; did you mean 'modifier'?" in line for line in problems)
    assert any("found 'meh'" in line for line in problems)


def test_an_unknown_field_far_from_any_known_one_gets_no_guess(tmp_path: Path) -> None:
    world = worlds_folder(tmp_path) / "tea-house"
    data = json.loads((world / "world.json").read_text())
    (world / "world.json").write_text(json.dumps({**data, "zzz": 1, "Premise ": "x"}))
    result = gm("check", world)
    [line] = [line for line in result.stdout.splitlines() if "not known here" in line]
    assert "'Premise ', 'zzz' are not known here; did you mean 'premise'? (expected only" in line


def test_a_path_that_means_the_whole_file_is_not_printed(tmp_path: Path) -> None:
    folder = worlds_folder(tmp_path)
    (folder / "tea-house" / "world.json").write_text('{"title": "T",,}')
    alone = gm("check", folder / "tea-house")
    assert alone.returncode == 2 and "$" not in alone.stderr
    expected = "world.json: line 1, column 15: expecting property name enclosed in double quotes"
    assert alone.stderr == f"error: {folder / 'tea-house'}: {expected}\n"
    together = gm("check", folder / "tea-house", folder / "harbour-heist")
    assert together.returncode == 1  # the broken world is reported and the other one still checked
    assert "  error: world.json: line 1, column 15" in together.stdout and "$" not in together.stdout
    assert f"{folder / 'harbour-heist'}: is fine" in together.stdout
