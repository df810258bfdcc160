"""The sample worlds in worlds/: each passes its check, and a short scripted story is played in each.

Every expected band below is worked out by hand from the world's own dice.json:

- harbour-heist: `lockwork` is 1d20 + hands over the target, `talk` 1d20 + tongue; Odile has hands 4
  and tongue 1. The bands read: Critical failure up to -10, Failure -9 to -1, Partial success 0 to 3,
  Success 4 to 8, Critical success 9 and up. Face 12 on lockwork against 13 reads 12 + 4 - 13 = 3:
  "Partial success". Face 20 on talk against 8 reads 20 + 1 - 8 = 13: "Critical success".
- storm-wall: `labour` counts the dice of 5d10 showing 7 or more, plus brawn (Hesper's is 0): faces
  7, 3, 10, 6, 8 give 3 (the 7, 10 and 8): "Holding" (2 to 3). `read_water` counts 4d10 showing 6 or
  more, with no modifier: faces 6, 5, 6, 10 give 3: "Read true" (2 to 3).
- ward-nine: `skill` is d% under the character's skill, reading target minus roll: Critical success
  45 and up, Success 0 to 44, Near miss -10 to -1, Failure -45 to -11, Fumble -46 and down. Agnes's
  medicine is 65 and a roll of 70 reads -5: "Near miss"; her stealth is 30 and a roll of 88 reads
  -58: "Fumble".
- tea-house has no dice.json: plain 2d6 with faces 5 and 2 total 7.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.rules.chances import check_odds
from gm.store import Store
from gm.testing import Step, call, reply
from gm.world.loading import check_world, load_world
from tests.support.paths import SAMPLE_WORLDS
from tests.support.rounds import last_tool_result, narrate_roll, table

FOLDERS = sorted(folder for folder in SAMPLE_WORLDS.iterdir() if folder.is_dir())
FIVE_BANDS = ["Critical failure", "Failure", "Partial success", "Success", "Critical success"]


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def read(folder: Path, name: str) -> Any:
    path = folder / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def kinds(folder: Path) -> set[str]:
    """What sort of dice a world uses, read from its files."""
    rules = read(folder, "dice.json")
    if rules is None:
        return {"no dice.json"}
    found = set()
    for check in rules["checks"]:
        if check.get("reading") == "successes":
            found.add("successes")
        if check["dice"].strip().lower() in {"d%", "1d%"} and check.get("compare") == "under":
            found.add("percentile under")
        bands = check["bands"]
        if (
            check.get("compare") == "over"
            and check.get("modifier")
            and [band["label"] for band in bands] == FIVE_BANDS
            and "min" not in bands[0]
            and "max" not in bands[-1]
        ):
            found.add("five-band over with a modifier")
    return found


# The worlds and their checks


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_each_sample_world_passes_its_check_without_warnings(folder: Path) -> None:
    assert (folder / "world.json").exists()
    assert check_world(folder) == []


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_each_sample_world_is_a_small_scenario_to_run(folder: Path) -> None:
    world = read(folder, "world.json")
    assert 80 <= len(world["premise"].split()) <= 200
    assert world["instructions"].strip()
    assert 2 <= len(world["characters"]) <= 4
    assert any(character["role"] == "player" for character in world["characters"])
    assert all(character["description"].strip() for character in world["characters"])
    values = [value for character in world["characters"] for value in character.get("variables", {}).values()]
    assert any(isinstance(value, str) for value in values)
    assert any(isinstance(value, int | float) for value in values) or read(folder, "dice.json") is None


def test_the_samples_cover_the_four_usual_kinds_of_world() -> None:
    assert len(FOLDERS) >= 4
    found = {folder.name: kinds(folder) for folder in FOLDERS}
    for kind in ["five-band over with a modifier", "successes", "percentile under", "no dice.json"]:
        assert any(kind in world_kinds for world_kinds in found.values()), (kind, found)


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_over_and_under_checks_give_every_character_a_band_at_any_target(folder: Path) -> None:
    world = load_world(folder)
    checks = [check for check in (world.rules.checks if world.rules else ()) if check.needs_target]
    for check in checks:
        holders = [c for c in world.characters if check.modifier is None or check.modifier in c.variables]
        assert holders, check.key
        for character in holders:
            modifier = world.modifier_for(check, character)
            for target in range(-10, 131, 7):
                assert check_odds(check, target, modifier).void == 0, (check.key, character.name, target)


@pytest.mark.parametrize(
    ("name", "key", "target", "character", "expected"),
    [
        # d20 + 2 against 13 reads d - 11, from -10 to 9: faces 1 | 2-10 | 11-14 | 15-19 | 20
        ("harbour-heist", "attempt", 13, "Odile", ["1/20", "9/20", "4/20", "5/20", "1/20"]),
        # d20 + 4 against 13 reads d - 9, from -8 to 11: none | 1-8 | 9-12 | 13-17 | 18-20
        ("harbour-heist", "lockwork", 13, "Odile", ["0", "8/20", "4/20", "5/20", "3/20"]),
        # 5d10, a hit 2/5: none (3/5)^5; one 5(2/5)(3/5)^4; two or three 10(4/25)(27/125) + 10(8/125)(9/25);
        # four or five 5(16/625)(3/5) + 32/3125
        ("storm-wall", "labour", None, "Hesper", ["243/3125", "810/3125", "1800/3125", "272/3125"]),
        # 4d10, a hit 1/2: none 1/16, one 4/16, two or three 6/16 + 4/16, four 1/16
        ("storm-wall", "read_water", None, "Hesper", ["1/16", "4/16", "10/16", "1/16"]),
        # d% under 50 reads 50 - r: r 1-5 | 6-50 | 51-60 | 61-95 | 96-100
        ("ward-nine", "skill", 50, "Agnes", ["5/100", "45/100", "10/100", "35/100", "5/100"]),
        # d% under 65 reads 65 - r: r 1-20 | 21-65 | 66-75 | 76-99 | a natural 100, always a fumble
        ("ward-nine", "skill", 65, "Agnes", ["20/100", "45/100", "10/100", "24/100", "1/100"]),
    ],
)
def test_the_odds_chosen_for_play(name: str, key: str, target: int | None, character: str, expected: list[str]) -> None:
    world = load_world(SAMPLE_WORLDS / name)
    check = world.check(key)
    odds = check_odds(check, target, world.modifier_for(check, world.character(character)))
    assert [chance.probability for chance in odds.bands] == [Fraction(value) for value in expected]
    assert odds.void == 0


# A short story in each world


def copied(folder_name: str, tmp_path: Path) -> Path:
    """A copy of the sample world, to be deleted once the story has started: the story runs on its own copy."""
    return Path(shutil.copytree(SAMPLE_WORLDS / folder_name, tmp_path / folder_name))


async def play_story(
    store: Store, folder: Path, script: list[Any], texts: list[str], faces: list[int]
) -> tuple[Any, str, list[Any]]:
    async with table(store, script, lambda request: reply("The round is remembered."), faces=faces) as t:
        story = t.game.start_story(folder)
        shutil.rmtree(folder)
        results = [await t.game.play(story, text) for text in texts]
        t.master.assert_done()
        source = t.game.source
        assert isinstance(source, dice.GivenFaces) and source.left_over == 0  # every face planned was rolled
        return t, story, results


def assert_world_copied(store: Store, story: str, name: str, title: str) -> None:
    stored = store.story(story)
    assert stored.title == title
    assert stored.world_data == read(SAMPLE_WORLDS / name, "world.json")
    assert stored.dice_data == read(SAMPLE_WORLDS / name, "dice.json")


def check_rolls(record: Any) -> list[tuple[Any, ...]]:
    return [
        (
            roll["kind"],
            roll["check_key"],
            roll["character"],
            roll["target"],
            roll["modifier"],
            roll["faces"],
            roll["value"],
            roll["band"],
            roll["result"],
            roll["critical"],
            roll["void"],
        )
        for roll in record.rolls
    ]


def test_a_story_in_the_harbour_heist(store: Store, tmp_path: Path) -> None:
    texts = ["I work a pick into the strongroom lock.", "I tell Pruitt I'm Quell's new copyist.", "I wait."]
    script = [
        call("roll_check", {"check": "lockwork", "character": "Odile", "target": 13, "reason": "strongroom lock"}),
        narrate_roll("The lock gives, but a pin snaps and rattles down inside the door."),
        call("roll_check", {"check": "talk", "character": "Odile", "target": 8, "reason": "bluff the clerk"}),
        narrate_roll("Pruitt apologises for not recognising you and offers to carry the lantern."),
        reply("Water laps at the gate below. Somewhere upstairs, a door closes."),
    ]
    t, story, results = run(play_story(store, copied("harbour-heist", tmp_path), script, texts, [12, 20]))

    system = t.master.requests[0]["messages"][0]["content"]
    assert "Low Water at Greyquay" in system and "Harbourmaster's seal" in system
    assert_world_copied(store, story, "harbour-heist", "Low Water at Greyquay")
    records = store.rounds(story)
    assert [(r.number, r.player_text) for r in records] == [(1, texts[0]), (2, texts[1]), (3, texts[2])]
    assert [check_rolls(r) for r in records] == [
        [("check", "lockwork", "Odile", 13, 4, [[12]], 3, "Partial success", "partial", False, False)],
        [("check", "talk", "Odile", 8, 1, [[20]], 13, "Critical success", "succeeded", True, False)],
        [],
    ]
    first, second = records[0].rolls[0]["id"], records[1].rolls[0]["id"]
    assert [r.outcomes for r in records] == [
        [{"character": "Odile", "result": "partial", "roll": first}],
        [{"character": "Odile", "result": "succeeded", "roll": second}],
        [],
    ]
    assert records[2].narration == "Water laps at the gate below. Somewhere upstairs, a door closes."
    assert [result.narration for result in results] == [r.narration for r in records]
    assert last_tool_result(t.master.requests[3])["note"]  # the critical band was flagged to the game master


def test_a_story_on_the_storm_wall(store: Store, tmp_path: Path) -> None:
    texts = ["Sandbags to the Gannet Sluice, now!", "I put my lantern to the seep and watch it.", "We wait."]
    script = [
        call("roll_check", {"check": "labour", "character": "Hesper", "reason": "bag the sluice"}),
        narrate_roll("The bags go down in a wall of wet sacking and the seep slows to a trickle."),
        call("roll_check", {"check": "read_water", "character": "Hesper", "reason": "read the seep"}),
        narrate_roll("The water runs clear: it is rain through the bank, not the sea under it. Not yet."),
        reply("The gale drops for a breath. Far out, the next set of rollers is building."),
    ]
    faces = [7, 3, 10, 6, 8, 6, 5, 6, 10]
    t, story, results = run(play_story(store, copied("storm-wall", tmp_path), script, texts, faces))

    told = [last_tool_result(t.master.requests[n]) for n in (1, 3)]
    assert [(r["band"], r["result"], r["critical"]) for r in told] == [
        ("Holding", "succeeded", False),
        ("Read true", "succeeded", False),
    ]
    assert all("successes" not in r and "total" not in r for r in told)  # the band, never the count
    assert_world_copied(store, story, "storm-wall", "The Wall at Skelder Fen")
    records = store.rounds(story)
    assert [r.number for r in records] == [1, 2, 3]
    assert [check_rolls(r) for r in records] == [
        [("check", "labour", "Hesper", None, 0, [[7, 3, 10, 6, 8]], 3, "Holding", "succeeded", False, False)],
        [("check", "read_water", "Hesper", None, 0, [[6, 5, 6, 10]], 3, "Read true", "succeeded", False, False)],
        [],
    ]
    assert [roll["successes"] for r in records for roll in r.rolls] == [3, 3]
    assert [roll["line"] for r in records for roll in r.rolls] == [
        "5d10 (7, 3, 10, 6, 8) = 3 successes (hit 7+)",
        "4d10 (6, 5, 6, 10) = 3 successes (hit 6+)",
    ]
    assert [[o["result"] for o in r.outcomes] for r in records] == [["succeeded"], ["succeeded"], []]
    assert records[2].narration == "The gale drops for a breath. Far out, the next set of rollers is building."
    assert [result.narration for result in results] == [r.narration for r in records]


def test_a_story_on_ward_nine(store: Store, tmp_path: Path) -> None:
    texts = [
        "I take Cyril's pulse and smell the tonic.",
        "I slip down to the dispensary to read the book.",
        "I sit by Cyril's bed.",
    ]
    script = [
        call("roll_check", {"check": "skill", "character": "Agnes", "target": 65, "reason": "medicine: the tonic"}),
        narrate_roll("The pulse is slow and skipping. The tonic smells bitter, but of what, you cannot be sure."),
        call("roll_check", {"check": "skill", "character": "Agnes", "target": 30, "reason": "stealth: dispensary"}),
        narrate_roll("The stair creaks like a shot. A lamp comes up in the dispensary window."),
        reply("Cyril sleeps. The clock over the door says ten past two."),
    ]
    folder = copied("ward-nine", tmp_path)
    agnes = next(c for c in read(folder, "world.json")["characters"] if c["name"] == "Agnes")
    assert (agnes["variables"]["medicine"], agnes["variables"]["stealth"]) == (65, 30)  # the targets named above
    t, story, results = run(play_story(store, folder, script, texts, [70, 88]))

    assert "medicine 65" in t.master.requests[0]["messages"][0]["content"]  # the game master reads the skill
    assert_world_copied(store, story, "ward-nine", "Ward Nine")
    records = store.rounds(story)
    assert [r.number for r in records] == [1, 2, 3]
    assert [check_rolls(r) for r in records] == [
        [("check", "skill", "Agnes", 65, 0, [[70]], -5, "Near miss", "partial", False, False)],
        [("check", "skill", "Agnes", 30, 0, [[88]], -58, "Fumble", "failed", True, False)],
        [],
    ]
    assert [[o["result"] for o in r.outcomes] for r in records] == [["partial"], ["failed"], []]
    assert records[2].narration == "Cyril sleeps. The clock over the door says ten past two."
    assert [result.narration for result in results] == [r.narration for r in records]


def test_a_story_in_the_tea_house(store: Store, tmp_path: Path) -> None:
    def tell_the_rain(request: dict[str, Any]) -> Step:
        total = last_tool_result(request)["total"]
        return reply("The rain stops. Osk notices." if total >= 7 else "The rain keeps on. Nobody can leave.")

    texts = ["I listen for the rain on the roof.", "I bring the second pot, and serve Celestine first."]
    script = [
        call("roll_dice", {"notation": "2d6", "reason": "does the rain stop (7 or more)"}),
        tell_the_rain,
        reply("Osk's smile does not move. Pell turns a page he is not reading."),
    ]
    t, story, results = run(play_story(store, copied("tea-house", tmp_path), script, texts, [5, 2]))

    assert [tool["function"]["name"] for tool in t.master.requests[0]["tools"]] == ["roll_dice", "narrate"]
    assert_world_copied(store, story, "tea-house", "The Second Pot")
    assert store.story(story).dice_data is None
    records = store.rounds(story)
    assert [(r.number, r.player_text) for r in records] == [(1, texts[0]), (2, texts[1])]
    [dice_roll] = records[0].rolls
    assert (dice_roll["kind"], dice_roll["faces"], dice_roll["total"], dice_roll["band"]) == ("dice", [[5, 2]], 7, None)
    assert dice_roll["line"] == "2d6 (5, 2) = 7"
    assert records[1].rolls == []
    assert [r.narration for r in records] == [
        "The rain stops. Osk notices.",
        "Osk's smile does not move. Pell turns a page he is not reading.",
    ]
    assert [r.outcomes for r in records] == [[], []]
    assert [result.narration for result in results] == [r.narration for r in records]
