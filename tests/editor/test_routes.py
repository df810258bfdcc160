"""The world editor's routes, through FastAPI's TestClient: forms, validation, chances and saving.

Most tests read the page's form the way a browser would (every field with its current value), change
a few fields, and post it back with one button's action, as an author pressing that button does.
The raw JSON view and saving are in test_editor_saving.py, safety and bad input in test_editor_safety.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from gm.dice import odds
from gm.editor import create_app
from gm.editor.saving import world_text
from tests.support.editor_forms import BASE, NOTICE, SAMPLES, form_of, post, problems_at, segments, submit, with_dice

# The list of worlds and creating one.


def test_the_list_shows_every_sample_world_with_its_title_and_verdict(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    for name, title in [("harbour-heist", "Low Water at Greyquay"), ("tea-house", None), ("ward-nine", None)]:
        assert f'href="/worlds/{name}/dice"' in page.text
        if title:
            assert title in page.text
    assert page.text.count('<span class="ok-text">fine</span>') == 4


def test_creating_a_world_writes_its_folder_and_world_json(client: TestClient, worlds: Path) -> None:
    fields = form_of(client.get("/new").text)
    fields.update(
        {
            "folder": "night-ferry",
            "title": "The Night Ferry",
            "premise": "A ferry crosses a fogbound strait.\r\nSomeone aboard is not who they say.",
            "characters-0-name": "Ines",
        }
    )
    page = post(client, "/new", {**fields, "action": "add-variable:0"})
    fields = form_of(page.text)
    fields.update({"characters-0-variables-0-name": "wits", "characters-0-variables-0-value": "2"})
    saved = post(client, "/new", {**fields, "action": "save"})
    assert saved.status_code == 303 and saved.headers["location"] == "/worlds/night-ferry?saved=created"
    assert (worlds / "night-ferry" / "world.json").read_text() == (
        "{\n"
        '  "title": "The Night Ferry",\n'
        '  "premise": "A ferry crosses a fogbound strait.\\nSomeone aboard is not who they say.",\n'
        '  "characters": [\n'
        "    {\n"
        '      "name": "Ines",\n'
        '      "role": "player",\n'
        '      "variables": {"wits": 2}\n'
        "    }\n"
        "  ]\n"
        "}\n"
    )
    assert "Created the world" in client.get(saved.headers["location"]).text


@pytest.mark.parametrize(
    ("folder", "words"),
    [
        ("Night Ferry", "lower-case letters"),
        ("../outside", "lower-case letters"),
        ("harbour-heist", "already a folder"),
        ("", "lower-case letters"),
    ],
)
def test_a_world_is_not_created_with_a_bad_or_taken_folder_name(
    client: TestClient, worlds: Path, folder: str, words: str
) -> None:
    before = sorted(path.name for path in worlds.parent.iterdir())
    fields = {**form_of(client.get("/new").text), "folder": folder, "title": "T", "premise": "P"}
    fields["characters-0-name"] = "Ines"
    page = post(client, "/new", {**fields, "action": "save"})
    assert page.status_code == 422
    assert any(words in problem for problem in problems_at(page.text, "folder"))
    assert f'value="{folder}"' in page.text  # the author's input is kept
    assert sorted(path.name for path in worlds.parent.iterdir()) == before
    assert len(list(worlds.iterdir())) == 4


def test_a_new_world_needs_a_title_premise_and_player(client: TestClient, worlds: Path) -> None:
    fields = {**form_of(client.get("/new").text), "folder": "empty", "characters-0-role": "npc"}
    page = post(client, "/new", {**fields, "action": "save"})
    assert page.status_code == 422
    assert problems_at(page.text, "title") == ["error: must not be empty"]
    assert problems_at(page.text, "characters-0-name") == ["error: must not be empty"]
    assert any("no character has the role 'player'" in problem for problem in problems_at(page.text, "characters"))
    assert not (worlds / "empty").exists()


# world.json as a form.


def test_the_world_form_saves_edits_in_the_reference_layout(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "world.json"
    before = path.read_text()
    page = submit(client, "/worlds/harbour-heist", "add-variable:1")
    assert 'name="characters-1-variables-5-name"' in page.text and not path.with_name("world.json.bak").exists()
    fields = form_of(page.text)
    fields.update(
        {
            "title": "Low Water",
            "characters-1-variables-5-name": "mood",
            "characters-1-variables-5-kind": "text",
            "characters-1-variables-5-value": "sullen",
        }
    )
    saved = post(client, "/worlds/harbour-heist", {**fields, "action": "save"})
    assert saved.status_code == 303 and saved.headers["location"] == "/worlds/harbour-heist?saved=yes"
    expected = json.loads(before)
    expected["title"] = "Low Water"
    expected["characters"][1]["variables"]["mood"] = "sullen"
    assert path.read_text() == world_text(expected)
    assert '\n        "coin": {"value": 2, "min": 0},\n        "mood": "sullen"\n' in path.read_text()
    assert path.with_name("world.json.bak").read_text() == before


def test_a_number_variable_that_is_not_a_number_is_an_error_at_its_value(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "world.json"
    before = path.read_bytes()
    page = submit(client, "/worlds/harbour-heist", "save", {"characters-0-variables-0-value": "three"})
    assert page.status_code == 422
    assert problems_at(page.text, "characters-0-variables-0-value") == [
        "error: expected a number, found 'three' (or choose the kind 'text')"
    ]
    assert 'value="three"' in page.text
    assert path.read_bytes() == before


def test_a_modifier_held_as_text_is_an_error_at_that_variable(client: TestClient, worlds: Path) -> None:
    page = submit(
        client,
        "/worlds/harbour-heist",
        "check",
        {"characters-1-variables-0-kind": "text", "characters-1-variables-0-value": "steady"},
    )
    assert page.status_code == 200
    assert problems_at(page.text, "characters-1-variables-0-value") == [
        "error: 'nerve' is the modifier of checks 'attempt' and 'outwit', so it must be a whole number, not 'steady'"
    ]


def test_a_modifier_that_opens_a_gap_stops_the_world_from_saving(client: TestClient, worlds: Path) -> None:
    steady = {
        **NOTICE,
        "key": "steady",
        "dice": "1d6",
        "modifier": "hands",
        "bands": [
            {"label": "Low", "max": 3, "result": "failed"},
            {"label": "High", "min": 4, "max": 10, "result": "succeeded"},
        ],
    }
    with_dice(worlds, "harbour-heist", [steady])
    page = submit(client, "/worlds/harbour-heist", "save", {"characters-0-variables-1-value": "5"})
    assert page.status_code == 422
    assert problems_at(page.text, "characters") == [
        "error: check 'steady' can roll the value 11 for Odile (hands +5), which no band holds (in dice.json)"
    ]


def test_characters_are_added_moved_and_removed_without_saving(client: TestClient, worlds: Path) -> None:
    before = (worlds / "harbour-heist" / "world.json").read_bytes()
    page = submit(client, "/worlds/harbour-heist", "down-character:0")
    fields = form_of(page.text)
    assert (fields["characters-0-name"], fields["characters-1-name"]) == ("Dace", "Odile")
    page = post(client, "/worlds/harbour-heist", {**fields, "action": "remove-character:3"})
    page = post(client, "/worlds/harbour-heist", {**form_of(page.text), "action": "add-character"})
    fields = form_of(page.text)
    assert [fields[f"characters-{number}-name"] for number in range(4)] == ["Dace", "Odile", "Pruitt", ""]
    assert fields["characters-3-role"] == "npc"
    assert (worlds / "harbour-heist" / "world.json").read_bytes() == before


# dice.json as a form.


@pytest.mark.parametrize("name", ["harbour-heist", "storm-wall", "ward-nine"])
def test_saving_a_sample_unchanged_writes_nothing(client: TestClient, worlds: Path, name: str) -> None:
    before = (worlds / name / "dice.json").read_bytes()
    saved = submit(client, f"/worlds/{name}/dice", "save")
    assert saved.status_code == 303 and saved.headers["location"].endswith("saved=same")
    assert (worlds / name / "dice.json").read_bytes() == before
    assert not (worlds / name / "dice.json.bak").exists()


def test_the_dice_form_shows_every_field_of_a_check(client: TestClient) -> None:
    fields = form_of(client.get("/worlds/storm-wall/dice").text)
    assert {name: value for name, value in fields.items() if name.startswith("checks-0-") and "bands" not in name} == {
        "checks-0-key": "labour",
        "checks-0-name": "Labour against the sea",
        "checks-0-use": json.loads((SAMPLES / "storm-wall" / "dice.json").read_text())["checks"][0]["use"],
        "checks-0-dice": "5d10",
        "checks-0-advantage": "",
        "checks-0-disadvantage": "",
        "checks-0-reading": "successes",
        "checks-0-hit": "7",
        "checks-0-compare": "absolute",
        "checks-0-modifier": "brawn",
        "checks-0-target": "",
        "checks-0-character": "Hesper",
    }
    assert fields["checks-0-bands-3-critical"] == "true" and "checks-0-bands-2-critical" not in fields
    assert (fields["checks-0-bands-0-min"], fields["checks-0-bands-0-max"]) == ("", "0")


def test_the_modifier_picker_offers_the_characters_number_variables_bounded_or_not(client: TestClient) -> None:
    page = client.get("/worlds/harbour-heist/dice").text
    picker = re.search(r'<select id="checks-0-modifier".*?</select>', page, re.S)
    assert picker
    assert re.findall(r'<option value="([^"]*)"', picker[0]) == ["", "coin", "grit", "hands", "nerve", "tongue"]


def test_checks_and_bands_are_added_removed_and_moved_without_saving(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "dice.json"
    before = path.read_bytes()
    page = submit(client, "/worlds/harbour-heist/dice", "add-check")
    fields = form_of(page.text)
    assert fields["checks-4-key"] == "" and fields["checks-4-bands-0-label"] == ""
    assert "checks-4-bands-1-label" not in fields
    assert problems_at(page.text, "checks-4-key") == []  # a new row is not scolded before it is filled in
    page = post(client, "/worlds/harbour-heist/dice", {**fields, "action": "add-band:0"})
    fields = form_of(page.text)
    assert fields["checks-0-bands-5-min"] == "" and fields["checks-0-bands-5-result"] == "failed"
    page = post(client, "/worlds/harbour-heist/dice", {**fields, "action": "remove-band:0:5"})
    page = post(client, "/worlds/harbour-heist/dice", {**form_of(page.text), "action": "add-band:0"})
    fields = form_of(page.text)
    page = post(client, "/worlds/harbour-heist/dice", {**fields, "action": "up-check:2"})
    fields = form_of(page.text)
    assert [fields[f"checks-{number}-key"] for number in range(5)] == ["attempt", "talk", "lockwork", "outwit", ""]
    page = post(client, "/worlds/harbour-heist/dice", {**fields, "action": "down-band:1:0"})
    fields = form_of(page.text)
    assert [fields[f"checks-1-bands-{band}-label"] for band in range(2)] == ["Failure", "Critical failure"]
    page = post(client, "/worlds/harbour-heist/dice", {**fields, "action": "remove-check:4"})
    assert "checks-4-key" not in form_of(page.text)
    assert path.read_bytes() == before and not path.with_name("dice.json.bak").exists()


def test_a_new_band_starts_above_the_last_ones_max(client: TestClient, worlds: Path) -> None:
    with_dice(worlds, "harbour-heist", [{**NOTICE, "bands": NOTICE["bands"][:2]}])
    fields = form_of(submit(client, "/worlds/harbour-heist/dice", "add-band:0").text)
    assert (fields["checks-0-bands-2-min"], fields["checks-0-bands-2-max"]) == ("10", "")


def test_invalid_fields_are_shown_next_to_them_with_the_input_kept_and_nothing_written(
    client: TestClient, worlds: Path
) -> None:
    path = worlds / "harbour-heist" / "dice.json"
    before = path.read_bytes()
    changes = {
        "checks-0-key": "Risky Attempt",
        "checks-1-dice": "1d20+x",
        "checks-1-bands-1-max": "lots",
        "checks-2-bands-2-min": "5",
        "checks-2-bands-2-max": "2",
        "checks-2-bands-3-label": "partial SUCCESS",
    }
    page = submit(client, "/worlds/harbour-heist/dice", "save", changes)
    assert page.status_code == 422
    assert "Not saved" in page.text
    assert problems_at(page.text, "checks-0-key")[0].startswith("error: 'Risky Attempt' is not allowed here")
    assert problems_at(page.text, "checks-1-dice") == [
        "error: 1d20+x: unexpected 'x' at column 6, expected a number or dice"
    ]
    assert problems_at(page.text, "checks-1-bands-1-all") == ["error: max: expected a whole number, found 'lots'"]
    assert problems_at(page.text, "checks-2-bands-2-all") == ["error: min 5 is above max 2"]
    assert problems_at(page.text, "checks-2-bands-3-all") == [
        "error: label: the label 'partial SUCCESS' is already used by bands[2]"
    ]
    assert 'id="checks-1-dice" name="checks-1-dice" value="1d20+x"' in page.text
    assert 'name="checks-1-dice" value="1d20+x" autocomplete="off" spellcheck="false" aria-invalid="true"' in page.text
    kept = form_of(page.text)
    assert all(kept[name] == value for name, value in changes.items())
    assert path.read_bytes() == before


def test_a_gap_in_an_absolute_check_is_an_error_naming_the_value_and_shows_in_the_strip(
    client: TestClient, worlds: Path
) -> None:
    with_dice(worlds, "harbour-heist", [NOTICE])
    page = submit(client, "/worlds/harbour-heist/dice", "save", {"checks-0-bands-1-min": "8"})
    assert page.status_code == 422
    assert problems_at(page.text, "checks-0-bands") == [
        "error: check 'notice' can roll the value 7, which no band holds"
    ]
    # 2d6: 6 or less 15/36, 7 is 6/36, 8 and 9 are 9/36, 10 or more 6/36.
    assert segments(page.text, 0) == [
        ("Miss it", "41.67%"),
        ("gap", "16.67%"),
        ("Glimpse", "25.00%"),
        ("See it", "16.67%"),
    ]
    assert "Gap: no band" in page.text
    fixed = submit(client, "/worlds/harbour-heist/dice", "check", {"checks-0-bands-1-min": "7"})
    assert problems_at(fixed.text, "checks-0-bands") == []
    assert segments(fixed.text, 0) == [("Miss it", "41.67%"), ("Glimpse", "41.67%"), ("See it", "16.67%")]


def test_a_gap_opened_by_a_characters_modifier_names_the_character(client: TestClient, worlds: Path) -> None:
    with_dice(worlds, "harbour-heist", [NOTICE])
    page = submit(
        client, "/worlds/harbour-heist/dice", "check", {"checks-0-modifier": "hands", "checks-0-bands-2-max": "12"}
    )
    assert problems_at(page.text, "checks-0-bands") == [
        "error: check 'notice' can roll the values 13 to 16 for Odile (hands +4), which no band holds",
        "error: check 'notice' can roll the value 13 for Dace (hands +1), which no band holds",
    ]


def test_a_modifier_held_as_text_is_an_error_at_the_modifier(client: TestClient) -> None:
    page = submit(client, "/worlds/harbour-heist/dice", "save", {"checks-0-modifier": "knows"})
    assert page.status_code == 422
    assert problems_at(page.text, "checks-0-modifier") == [
        "error: Pruitt: 'knows' is the modifier of check 'attempt', so it must be a whole number, not"
        ' "the strongroom key hangs inside Quell\'s desk, which is never locked" (in world.json)'
    ]


def test_warnings_are_shown_in_amber_and_do_not_stop_a_save(client: TestClient, worlds: Path) -> None:
    changes = {
        "checks-0-bands-4-min": "",  # the last band now holds everything: the others before it still win
        "checks-1-bands-1-max": "-3",  # a stretch of values no band holds in an over check is void
        "checks-1-modifier": "luck",  # no character has it
    }
    page = submit(client, "/worlds/harbour-heist/dice", "check", changes)
    assert problems_at(page.text, "checks-1-bands") == [
        "warning: check 'lockwork' has no band for the values -2 to -1; a roll landing there is void"
    ]
    assert problems_at(page.text, "checks-1-modifier") == [
        "warning: no character has the variable 'luck', so check 'lockwork' can never be rolled"
    ]
    assert "No errors: this can be saved. 2 warnings" in page.text
    saved = submit(client, "/worlds/harbour-heist/dice", "save", changes)
    assert saved.status_code == 303
    data = json.loads((worlds / "harbour-heist" / "dice.json").read_text())
    assert data["checks"][1]["modifier"] == "luck" and "min" not in data["checks"][0]["bands"][4]


def test_an_unreachable_band_is_a_warning(client: TestClient, worlds: Path) -> None:
    with_dice(worlds, "harbour-heist", [NOTICE])
    page = submit(client, "/worlds/harbour-heist/dice", "add-band:0")
    fields = form_of(page.text)
    fields.update({"checks-0-bands-3-label": "Impossible", "checks-0-bands-3-min": "13"})
    page = post(client, "/worlds/harbour-heist/dice", {**fields, "action": "check"})
    assert problems_at(page.text, "checks-0-bands-3-all") == [
        "warning: the band 'Impossible' is covered by earlier bands and can never be reached"
    ]


# The chance strips.


def test_strip_of_an_over_check_follows_target_and_character(client: TestClient) -> None:
    page = client.get("/worlds/harbour-heist/dice").text
    # 1d20 + 2 (Odile's nerve) - 11: -8 to 11. Failure -8..-1 is 8 of 20, partial 0..3 is 4, success 4..8 is 5;
    # but a natural 1 (reading -8) steps down to Critical failure, so failure keeps 7.
    assert segments(page, 0) == [
        ("Critical failure", "5.00%"),
        ("Failure", "35.00%"),
        ("Partial success", "20.00%"),
        ("Success", "25.00%"),
        ("Critical success", "15.00%"),
    ]
    assert "1d20 +2 (Odile&#39;s nerve), over target 11" in page
    changed = submit(
        client, "/worlds/harbour-heist/dice", "check", {"checks-0-target": "15", "checks-0-character": "Dace"}
    )
    # 1d20 + 1 - 15: -13 to 6. Critical failure -13..-10 is 4 of 20, failure 9, partial 4, success 4..6 is 3,
    # of which a natural 20 (reading 6) steps up to Critical success, which no value reaches by itself.
    assert segments(changed.text, 0) == [
        ("Critical failure", "20.00%"),
        ("Failure", "45.00%"),
        ("Partial success", "20.00%"),
        ("Success", "10.00%"),
        ("Critical success", "5.00%"),
    ]
    table = re.search(r'<div id="strip-0".*?</table>', changed.text, re.S)
    assert (
        table
        and 'Critical success</td><td>9 or more</td><td>succeeded, critical</td><td class="number">5.00%' in table[0]
    )


def test_strip_of_an_under_check_and_of_a_successes_check(client: TestClient) -> None:
    page = submit(client, "/worlds/ward-nine/dice", "check", {"checks-1-target": "35"})
    assert segments(page.text, 1) == [("Unlucky", "65.00%"), ("Lucky", "35.00%")]
    # 4d10, a die hits on 6 or more (1 in 2): none 1/16, one 4/16, two or three 10/16, four 1/16.
    storm = client.get("/worlds/storm-wall/dice").text
    assert segments(storm, 2) == [
        ("Misread", "6.25%"),
        ("Half the picture", "25.00%"),
        ("Read true", "62.50%"),
        ("Read to the last seep", "6.25%"),
    ]


def test_a_target_that_is_not_a_number_is_noted_and_the_default_used(client: TestClient) -> None:
    page = submit(client, "/worlds/harbour-heist/dice", "check", {"checks-0-target": "hard"})
    assert problems_at(page.text, "checks-0-target") == ["warning: the target must be a whole number, not 'hard'"]
    assert "over target 11" in page.text


@pytest.mark.slow
def test_odds_too_slow_to_work_out_are_a_labelled_estimate(client: TestClient, worlds: Path) -> None:
    # Two wide keeps: each is exact in a fraction of a second, but convolving them is not (docs/dice-notation.md).
    dice = "50d1000kh25+50d1000kh25"
    big = {
        **NOTICE,
        "dice": dice,
        "bands": [
            {"label": "Low", "max": 25_000, "result": "failed"},
            {"label": "High", "min": 25_001, "result": "succeeded"},
        ],
    }
    with_dice(worlds, "harbour-heist", [NOTICE, big])
    page = client.get("/worlds/harbour-heist/dice").text
    assert page.count('<span class="badge">exact</span>') == 1
    samples = odds(dice).samples
    assert f'<span class="badge estimate">estimate from {samples:,} rolls, each chance within \u00b1' in page


def test_no_strip_while_the_dice_cannot_be_read(client: TestClient) -> None:
    page = submit(client, "/worlds/harbour-heist/dice", "check", {"checks-0-dice": "1d"})
    assert "The chances show once the dice notation is right." in page.text


def test_the_preview_sends_the_slots_of_the_form(client: TestClient) -> None:
    fields = form_of(client.get("/worlds/harbour-heist/dice").text)
    fields["checks-0-bands-2-min"] = "1"
    answer = post(client, "/worlds/harbour-heist/dice/preview", fields)
    assert answer.status_code == 200
    assert problems_at(answer.text, "checks-0-bands") == [
        "warning: check 'attempt' has no band for the value 0; a roll landing there is void"
    ]
    assert ("gap", "5.00%") in segments(answer.text, 0)
    assert 'id="summary" data-slot' in answer.text and "<form" not in answer.text
    del fields["csrf"]
    assert post(client, "/worlds/harbour-heist/dice/preview", fields).status_code == 403


def test_the_editor_can_be_mounted_under_a_path(worlds: Path) -> None:
    outer = FastAPI()
    outer.mount("/editor", create_app(worlds))
    with TestClient(outer, base_url=BASE) as client:
        page = client.get("/editor/worlds/harbour-heist/dice").text
        assert 'action="/editor/worlds/harbour-heist/dice"' in page
        assert 'href="/editor/static/editor.css"' in page and client.get("/editor/static/editor.css").status_code == 200
        saved = submit(client, "/editor/worlds/harbour-heist/dice", "save", {"checks-0-name": "Chancy"})
        assert saved.headers["location"] == "/editor/worlds/harbour-heist/dice?saved=yes"
    assert json.loads((worlds / "harbour-heist" / "dice.json").read_text())["checks"][0]["name"] == "Chancy"
