"""Character sheets in the world form: bounded numbers, item lists and conditions, as fields and back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm.editor.saving import world_text
from tests.support.editor_forms import form_of, post, problems_at, submit

SHEET = {
    "grit": {"value": 3, "min": 0, "max": 3},
    "coin": {"value": 12, "min": 0},
    "luck": {"value": 2},
    "carrying": {"items": ["wax", {"name": "blank manifest", "count": 3}, {"name": "lantern", "count": 1}]},
    "state": {"conditions": {"soaked": False, "seen": True}},
    "nerve": 2,
    "mood": "wary",
}


def with_sheet(worlds: Path) -> Path:
    """harbour-heist with Odile's variables replaced by a sheet of every kind, written in the reference layout."""
    path = worlds / "harbour-heist" / "world.json"
    world = json.loads(path.read_text())
    world["characters"][0]["variables"] = {**SHEET, "hands": 4, "tongue": 1}
    path.write_text(world_text(world))
    return path


def test_every_kind_shows_its_own_fields(client: TestClient, worlds: Path) -> None:
    with_sheet(worlds)
    fields = form_of(client.get("/worlds/harbour-heist").text)
    row = "characters-0-variables-"
    assert [fields[f"{row}{n}-kind"] for n in range(7)] == [
        "bounded",
        "bounded",
        "bounded",
        "items",
        "conditions",
        "number",
        "text",
    ]
    assert (fields[f"{row}0-value"], fields[f"{row}0-min"], fields[f"{row}0-max"]) == ("3", "0", "3")
    assert (fields[f"{row}1-min"], fields[f"{row}1-max"]) == ("0", "")
    items = [(fields[f"{row}3-items-{n}-name"], fields[f"{row}3-items-{n}-count"]) for n in range(3)]
    assert items == [("wax", ""), ("blank manifest", "3"), ("lantern", "1")]
    assert fields[f"{row}4-conditions-0-name"] == "soaked" and f"{row}4-conditions-0-on" not in fields
    assert fields[f"{row}4-conditions-1-name"] == "seen" and fields[f"{row}4-conditions-1-on"] == "on"


def test_a_world_with_a_sheet_saved_unchanged_writes_nothing(client: TestClient, worlds: Path) -> None:
    path = with_sheet(worlds)
    before = path.read_bytes()
    saved = submit(client, "/worlds/harbour-heist", "save")
    assert saved.status_code == 303 and saved.headers["location"].endswith("saved=same")
    assert path.read_bytes() == before
    assert '\n        "carrying": {"items": ["wax", {"name": "blank manifest", "count": 3}' in path.read_text()


def test_items_and_conditions_are_added_filled_and_saved(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "world.json"
    page = submit(client, "/worlds/harbour-heist", "add-variable:1")
    fields = form_of(page.text)
    fields.update({"characters-1-variables-3-name": "oars", "characters-1-variables-3-kind": "items"})
    page = post(client, "/worlds/harbour-heist", {**fields, "action": "add-item:1:3"})
    page = post(client, "/worlds/harbour-heist", {**form_of(page.text), "action": "add-item:1:3"})
    page = post(client, "/worlds/harbour-heist", {**form_of(page.text), "action": "add-variable:1"})
    fields = form_of(page.text)
    fields.update(
        {
            "characters-1-variables-3-items-0-name": "oar",
            "characters-1-variables-3-items-0-count": "2",
            "characters-1-variables-3-items-1-name": "boathook",
            "characters-1-variables-4-name": "state",
            "characters-1-variables-4-kind": "conditions",
        }
    )
    page = post(client, "/worlds/harbour-heist", {**fields, "action": "add-condition:1:4"})
    fields = form_of(page.text)
    fields.update(
        {"characters-1-variables-4-conditions-0-name": "drunk", "characters-1-variables-4-conditions-0-on": "on"}
    )
    saved = post(client, "/worlds/harbour-heist", {**fields, "action": "save"})
    assert saved.status_code == 303, problems_at(saved.text, "form")
    dace = json.loads(path.read_text())["characters"][1]["variables"]
    assert dace["oars"] == {"items": [{"name": "oar", "count": 2}, "boathook"]}
    assert dace["state"] == {"conditions": {"drunk": True}}


def test_rows_are_removed_and_blank_item_rows_dropped(client: TestClient, worlds: Path) -> None:
    path = with_sheet(worlds)
    page = submit(client, "/worlds/harbour-heist", "remove-item:0:3:0")
    page = post(client, "/worlds/harbour-heist", {**form_of(page.text), "action": "remove-condition:0:4:1"})
    page = post(client, "/worlds/harbour-heist", {**form_of(page.text), "action": "add-item:0:3"})
    saved = post(client, "/worlds/harbour-heist", {**form_of(page.text), "action": "save"})
    assert saved.status_code == 303
    odile = json.loads(path.read_text())["characters"][0]["variables"]
    assert odile["carrying"] == {"items": [{"name": "blank manifest", "count": 3}, {"name": "lantern", "count": 1}]}
    assert odile["state"] == {"conditions": {"soaked": False}}


def test_what_the_form_finds_wrong_is_shown_beside_each_field(client: TestClient, worlds: Path) -> None:
    path = with_sheet(worlds)
    before = path.read_bytes()
    row = "characters-0-variables-"
    page = submit(
        client,
        "/worlds/harbour-heist",
        "save",
        {
            f"{row}0-value": "full",
            f"{row}1-min": "none",
            f"{row}3-items-1-count": "0",
            f"{row}3-items-2-name": "",
            f"{row}4-conditions-1-name": "soaked",
        },
    )
    assert page.status_code == 422 and path.read_bytes() == before
    assert problems_at(page.text, f"{row}0-value") == ["error: the value is a whole number, found 'full'"]
    assert problems_at(page.text, f"{row}1-min") == ["error: min (when given) is a whole number, found 'none'"]
    assert problems_at(page.text, f"{row}3-items-1-count") == ["error: a count is 1 or more, found 0"]
    assert problems_at(page.text, f"{row}3-items-2-name") == ["error: an item needs a name"]
    assert problems_at(page.text, f"{row}4-conditions-1-name") == [
        "error: the condition 'soaked' is already in this list"
    ]
    assert 'value="full"' in page.text


def test_what_gm_check_finds_wrong_in_a_sheet_is_shown_beside_its_field(client: TestClient, worlds: Path) -> None:
    with_sheet(worlds)
    row = "characters-0-variables-"
    page = submit(
        client,
        "/worlds/harbour-heist",
        "check",
        {
            f"{row}0-value": "5",  # above its max of 3
            f"{row}1-max": "-1",  # below its min of 0
            f"{row}3-items-2-name": "Wax",  # the same item twice, ignoring case
            f"{row}4-conditions-0-name": "",  # an empty list is not conditions
            f"{row}4-conditions-1-name": "",
        },
    )
    assert problems_at(page.text, f"{row}0-value") == ["error: 'grit' starts at 5, outside its bounds 0 to 3"]
    assert problems_at(page.text, f"{row}1-min") == ["error: 'coin' has min 0 above its max -1"]
    assert problems_at(page.text, f"{row}3-items") == [
        "error: 'carrying' names the item 'Wax' twice (names ignore case)"
    ]
    assert len(problems_at(page.text, f"{row}4-conditions")) == 1


def test_a_kind_switched_back_keeps_what_was_typed(client: TestClient, worlds: Path) -> None:
    path = with_sheet(worlds)
    before = path.read_bytes()
    page = submit(client, "/worlds/harbour-heist", "check", {"characters-0-variables-3-kind": "text"})
    assert problems_at(page.text, "characters-0-variables-3-value") == []  # JSON text of nothing is ""
    fields = form_of(page.text)
    assert fields["characters-0-variables-3-items-1-name"] == "blank manifest"
    saved = post(
        client, "/worlds/harbour-heist", {**fields, "characters-0-variables-3-kind": "items", "action": "save"}
    )
    assert saved.headers["location"].endswith("saved=same") and path.read_bytes() == before


@pytest.mark.parametrize("name", ["harbour-heist", "storm-wall", "ward-nine", "tea-house"])
def test_saving_a_sample_world_unchanged_writes_nothing(client: TestClient, worlds: Path, name: str) -> None:
    before = (worlds / name / "world.json").read_bytes()
    saved = submit(client, f"/worlds/{name}", "save")
    assert saved.status_code == 303 and saved.headers["location"].endswith("saved=same")
    assert (worlds / name / "world.json").read_bytes() == before


# A band's effects in the Dice form.


def test_a_bands_effects_are_shown_on_one_line_and_saved_back(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "dice.json"
    fields = form_of(client.get("/worlds/harbour-heist/dice").text)
    assert fields["checks-3-bands-0-effects"] == "-1d2 grit"
    assert fields["checks-3-bands-4-effects"] == "-1d2 grit of opponent"
    assert fields["checks-1-bands-0-effects"] == ""
    page = submit(
        client, "/worlds/harbour-heist/dice", "save", {"checks-1-bands-0-effects": "-1d3 grit; -1 coin of self"}
    )
    assert page.status_code == 422  # -1 rolls no dice
    assert problems_at(page.text, "checks-1-bands-0-all")[0].startswith("error: effects: 'by' must be dice notation")
    saved = submit(
        client, "/worlds/harbour-heist/dice", "save", {"checks-1-bands-0-effects": "-1d3 grit; -1d4 coin of self"}
    )
    assert saved.status_code == 303
    band = json.loads(path.read_text())["checks"][1]["bands"][0]
    assert band["effects"] == [{"variable": "grit", "by": "-1d3"}, {"variable": "coin", "of": "self", "by": "-1d4"}]


def test_an_effect_that_cannot_be_read_is_shown_at_its_band(client: TestClient, worlds: Path) -> None:
    before = (worlds / "harbour-heist" / "dice.json").read_bytes()
    page = submit(client, "/worlds/harbour-heist/dice", "save", {"checks-1-bands-0-effects": "-1d2"})
    assert page.status_code == 422
    assert problems_at(page.text, "checks-1-bands-0-all") == [
        "error: effects: cannot read the effect '-1d2': write an amount and a variable, such as -1d6 hp"
    ]
    assert (worlds / "harbour-heist" / "dice.json").read_bytes() == before
