"""The characters' sheets at the command line, from the database: `/sheet` and the round's changes in `gm play`,
and `gm show` (text and --json), each run as the installed command in a process of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.command_line import installed_gm, story_id_in
from tests.support.paths import SAMPLE_WORLDS

HEIST = SAMPLE_WORLDS / "harbour-heist"
# Dice at the table: the rehearsal rolls Risky attempt for "creep", and the player types the face 5:
# 5 + 2 (nerve) - 11 = -4, Failure, which costs Odile 1 grit and, as the words name it, turns `spotted` on.
SCRIPT = "/sheet\nI creep along the quay, trying not to be spotted.\n5\n/sheet\n"
ODILE_AFTER = (
    "[sheet] Odile: grit 2 (0 to 3); coin 12 (0 or more); carrying wax, blank manifest x3, shuttered lantern,"
    " roll of picks; state spotted (of soaked, spotted, sealed the manifests)"
)


@pytest.mark.subprocess
def test_sheet_shows_the_sheets_and_each_round_its_changes(tmp_path: Path) -> None:
    env = {"GM_DATABASE_URL": f"sqlite:///{tmp_path / 'gm.sqlite'}"}
    played = installed_gm("play", HEIST, "--model", "rehearsal", "--dice-from", "player", stdin=SCRIPT, env=env)
    assert played.returncode == 0, played.stderr
    lines = played.stdout.splitlines()
    sheets = [line for line in lines if line.startswith("[sheet] Odile: ")]
    assert sheets[0].startswith("[sheet] Odile: grit 3 (0 to 3); coin 12 (0 or more); carrying wax")
    assert sheets[1] == ODILE_AFTER
    assert "[sheet] Quell: grit 3 (0 to 3); coin 40 (0 or more); carrying Sorrel Line manifest x4" in lines
    assert lines.index("[sheet] Odile's grit 3 -> 2 (-1) - a failed check costs 1") < lines.index(sheets[1])
    assert "[sheet] Odile's state: spotted on - the check failed" in lines

    story = story_id_in(played.stdout)
    shown = installed_gm("show", story, env=env)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.splitlines()
    assert text[text.index("Sheets now:") + 1] == "  " + ODILE_AFTER.removeprefix("[sheet] ")
    assert "  [sheet] Odile's grit 3 -> 2 (-1) - a failed check costs 1" in text
    exported = json.loads(installed_gm("show", story, "--json", env=env).stdout)
    assert exported["story"]["sheet"]["Odile"]["grit"] == {"value": 2, "min": 0, "max": 3}
    change = exported["rounds"][0]["changes"][0]
    assert (change["character"], change["variable"], change["before"], change["after"]) == ("Odile", "grit", 3, 2)


@pytest.mark.subprocess
def test_sheet_in_a_world_without_sheets_says_so(tmp_path: Path) -> None:
    env = {"GM_DATABASE_URL": f"sqlite:///{tmp_path / 'gm.sqlite'}"}
    played = installed_gm("play", SAMPLE_WORLDS / "tea-house", "--model", "rehearsal", stdin="/sheet\n", env=env)
    assert played.returncode == 0, played.stderr
    assert "This story's characters have no sheet that changes." in played.stdout.splitlines()
