"""The world editor's raw JSON view and its saving, through FastAPI's TestClient: pasting, layout, backups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm.editor.saving import dice_text
from tests.support.editor_forms import NOTICE, form_of, post, submit, with_dice

# The raw JSON view.


def test_the_raw_view_shows_dice_json_escaped(client: TestClient, worlds: Path) -> None:
    path = with_dice(worlds, "harbour-heist", [{**NOTICE, "name": "<b>Notice</b> & see"}])
    page = client.get("/worlds/harbour-heist/dice/raw")
    assert page.status_code == 200
    assert "&#34;name&#34;: &#34;&lt;b&gt;Notice&lt;/b&gt; &amp; see&#34;" in page.text
    assert "<b>Notice</b>" not in page.text
    assert path.exists()


def test_pasting_valid_json_saves_it_in_the_reference_layout(client: TestClient, worlds: Path) -> None:
    pasted = json.dumps(
        {
            "checks": [
                {
                    "bands": [{"result": "succeeded", "label": "All", "critical": False}],
                    "dice": "d6",
                    "use": "Anything.",
                    "name": "Any",
                    "key": "any",
                    "compare": "absolute",
                }
            ]
        }
    )
    path = worlds / "harbour-heist" / "dice.json"
    before = path.read_text()
    saved = submit(client, "/worlds/harbour-heist/dice/raw", "save", {"text": pasted})
    assert saved.status_code == 303
    assert path.read_text() == (
        "{\n"
        '  "checks": [\n'
        "    {\n"
        '      "key": "any",\n'
        '      "name": "Any",\n'
        '      "use": "Anything.",\n'
        '      "dice": "d6",\n'
        '      "bands": [\n'
        '        {"label": "All", "result": "succeeded"}\n'
        "      ]\n"
        "    }\n"
        "  ]\n"
        "}\n"
    )
    assert path.with_name("dice.json.bak").read_text() == before


@pytest.mark.parametrize(
    ("pasted", "words"),
    [
        ('{"checks": [', "line 1, column 13"),
        ('{"checks": [], "checks": []}', "appears twice"),
        ('{"checks": [{"key": "a", "name": "A", "use": "U", "dice": "d6", "bands": [], "extra": 1}]}', "$.checks[0]"),
        (
            '{"checks": [{"key": "a", "name": "A", "use": "U", "dice": "d6", "bands": [{"label": "L", "max": 3,'
            ' "result": "failed"}]}]}',
            "can roll the values 4 to 6",
        ),
    ],
)
def test_pasting_invalid_json_lists_its_problems_keeps_it_and_writes_nothing(
    client: TestClient, worlds: Path, pasted: str, words: str
) -> None:
    path = worlds / "harbour-heist" / "dice.json"
    before = path.read_bytes()
    page = submit(client, "/worlds/harbour-heist/dice/raw", "save", {"text": pasted})
    assert page.status_code == 422
    assert words in page.text
    assert form_of(page.text)["text"] == pasted
    assert path.read_bytes() == before


def test_pasted_json_can_be_checked_and_opened_in_the_form(client: TestClient, worlds: Path) -> None:
    pasted = dice_text({"checks": [NOTICE]})
    checked = submit(client, "/worlds/harbour-heist/dice/raw", "check", {"text": pasted})
    assert checked.status_code == 200 and "No problems: this can be saved." in checked.text
    opened = submit(client, "/worlds/harbour-heist/dice/raw", "open", {"text": pasted})
    fields = form_of(opened.text)
    assert fields["checks-0-key"] == "notice" and "checks-1-key" not in fields
    assert opened.text.count('class="card check"') == 1
    assert json.loads((worlds / "harbour-heist" / "dice.json").read_text())["checks"][0]["key"] == "attempt"


def test_the_form_can_be_shown_as_json(client: TestClient) -> None:
    page = submit(client, "/worlds/harbour-heist/dice", "json", {"checks-0-name": "Chancy"})
    text = form_of(page.text)["text"]
    assert json.loads(text)["checks"][0]["name"] == "Chancy"
    assert "it is not saved yet" in page.text


# Saving.


def test_saving_writes_the_reference_layout_atomically_and_keeps_a_backup(client: TestClient, worlds: Path) -> None:
    path = with_dice(worlds, "tea-house", [])
    before = path.read_text()
    page = submit(client, "/worlds/tea-house/dice", "add-check")
    fields = form_of(page.text)
    fields.update(
        {
            "checks-0-key": "haggle",
            "checks-0-name": "Haggle",
            "checks-0-use": "Bargaining over a price.\r\nThe target is how stubborn they are.",
            "checks-0-dice": "2d6",
            "checks-0-compare": "over",
            "checks-0-bands-0-label": "No deal",
            "checks-0-bands-0-max": "-1",
            "checks-0-bands-0-result": "failed",
        }
    )
    page = post(client, "/worlds/tea-house/dice", {**fields, "action": "add-band:0"})
    fields = form_of(page.text)
    assert fields["checks-0-bands-1-min"] == "0"
    fields.update({"checks-0-bands-1-label": "Deal", "checks-0-bands-1-result": "succeeded"})
    fields["checks-0-bands-1-critical"] = "true"
    saved = post(client, "/worlds/tea-house/dice", {**fields, "action": "save"})
    assert saved.status_code == 303
    assert path.read_text() == (
        "{\n"
        '  "checks": [\n'
        "    {\n"
        '      "key": "haggle",\n'
        '      "name": "Haggle",\n'
        '      "use": "Bargaining over a price.\\nThe target is how stubborn they are.",\n'
        '      "dice": "2d6",\n'
        '      "compare": "over",\n'
        '      "bands": [\n'
        '        {"label": "No deal", "max": -1, "result": "failed"},\n'
        '        {"label": "Deal", "min": 0, "result": "succeeded", "critical": true}\n'
        "      ]\n"
        "    }\n"
        "  ]\n"
        "}\n"
    )
    assert path.with_name("dice.json.bak").read_text() == before
    assert sorted(entry.name for entry in path.parent.iterdir()) == ["dice.json", "dice.json.bak", "world.json"]
    assert "Saved dice.json" in client.get(saved.headers["location"]).text


def test_a_world_without_dice_json_gets_one_on_its_first_save(client: TestClient, worlds: Path) -> None:
    page = client.get("/worlds/tea-house/dice")
    assert "has no dice.json yet" in page.text
    saved = submit(client, "/worlds/tea-house/dice", "save")
    assert saved.status_code == 303
    assert (worlds / "tea-house" / "dice.json").read_text() == '{\n  "checks": []\n}\n'
    assert not (worlds / "tea-house" / "dice.json.bak").exists()


def test_an_unreadable_dice_json_is_reported_and_kept_when_replaced(client: TestClient, worlds: Path) -> None:
    path = worlds / "harbour-heist" / "dice.json"
    path.write_text('{"checks": [}')
    page = client.get("/worlds/harbour-heist/dice")
    assert page.status_code == 200 and "dice.json cannot be read (line 1, column 13" in page.text
    assert "cannot be read: dice.json: line 1, column 13" in client.get("/").text
    assert submit(client, "/worlds/harbour-heist/dice", "save").status_code == 303
    assert path.with_name("dice.json.bak").read_text() == '{"checks": [}'


def test_fields_the_form_cannot_hold_are_announced(client: TestClient, worlds: Path) -> None:
    (worlds / "harbour-heist" / "dice.json").write_text(json.dumps({"checks": [{**NOTICE, "colour": "red"}]}))
    page = client.get("/worlds/harbour-heist/dice")
    assert "holds things the form cannot show" in page.text
    assert form_of(page.text)["checks-0-key"] == "notice"
