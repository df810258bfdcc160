"""The world editor's calendar: world.json's calendar as a form on the World page, checked and saved."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from tests.support.editor_forms import form_of, post, problems_at, submit

HEIST = "/worlds/harbour-heist"


def test_the_sample_calendar_fills_the_form(client: TestClient) -> None:
    fields = form_of(client.get(HEIST).text)
    assert fields["calendar-on"] == "on"
    assert (fields["calendar-months-0-name"], fields["calendar-months-0-days"]) == ("Brine", "36")
    assert (fields["calendar-months-9-name"], fields["calendar-months-9-days"]) == ("Low Water", "30")
    assert "calendar-months-10-name" not in fields
    assert fields["calendar-weekdays"] == "Moorday, Tideday, Netday, Saltday, Ropeday, Lanternday"
    assert fields["calendar-era"] == "AQ"
    start = {name: fields[f"calendar-start-{name}"] for name in ("year", "month", "day", "time", "weekday")}
    assert start == {"year": "1187", "month": "Low Water", "day": "28", "time": "22:40", "weekday": "Lanternday"}
    assert (fields["calendar-parts_of_day-6-name"], fields["calendar-parts_of_day-6-from"]) == ("night", "20:30")


def test_a_world_without_a_calendar_shows_the_box_unticked_and_saves_none(client: TestClient, worlds: Path) -> None:
    fields = form_of(client.get("/worlds/tea-house").text)
    assert "calendar-on" not in fields
    before = (worlds / "tea-house" / "world.json").read_text()
    saved = post(client, "/worlds/tea-house", {**fields, "calendar-months-0-name": "Typed", "action": "save"})
    assert saved.headers["location"].endswith("saved=same")  # unticked, what was typed there is not written
    assert (worlds / "tea-house" / "world.json").read_text() == before


def test_editing_the_calendar_saves_it_in_the_reference_layout(client: TestClient, worlds: Path) -> None:
    changes = {"calendar-start-day": "3", "calendar-start-month": "Brine", "calendar-era": "", "calendar-weekdays": ""}
    changes["calendar-start-weekday"] = ""
    saved = submit(client, HEIST, "save", changes)
    assert saved.status_code == 303 and saved.headers["location"].endswith("saved=yes")
    text = (worlds / "harbour-heist" / "world.json").read_text()
    calendar = json.loads(text)["calendar"]
    assert calendar["start"] == {"year": 1187, "month": "Brine", "day": 3, "time": "22:40"}
    assert "weekdays" not in calendar and "era" not in calendar
    assert '    "start": {"year": 1187, "month": "Brine", "day": 3, "time": "22:40"},\n' in text
    assert '      {"name": "Brine", "days": 36},\n' in text


def test_adding_and_removing_rows(client: TestClient) -> None:
    page = submit(client, HEIST, "add-month")
    fields = form_of(page.text)
    assert fields["calendar-months-10-name"] == "" and fields["calendar-months-10-days"] == ""
    page = post(client, HEIST, {**fields, "action": "remove-part:0"})
    fields = form_of(page.text)
    assert fields["calendar-parts_of_day-0-name"] == "dawn" and "calendar-parts_of_day-6-name" not in fields
    page = post(client, HEIST, {**fields, "action": "add-part"})
    assert form_of(page.text)["calendar-parts_of_day-6-from"] == ""


def test_each_mistake_is_shown_at_its_field_and_nothing_is_saved(client: TestClient, worlds: Path) -> None:
    before = (worlds / "harbour-heist" / "world.json").read_text()
    changes = {
        "calendar-months-1-days": "many",
        "calendar-months-2-name": "brine",
        "calendar-start-day": "31",
        "calendar-start-time": "9pm",
        "calendar-start-weekday": "Sunday",
        "calendar-parts_of_day-2-from": "04:00",
    }
    page = submit(client, HEIST, "save", changes)
    assert page.status_code == 422
    assert problems_at(page.text, "calendar-months-1-days") == ["error: expected a whole number, found 'many'"]
    assert "already used by calendar.months[0]" in problems_at(page.text, "calendar-months-2-name")[0]
    assert problems_at(page.text, "calendar-start-day") == ["error: Low Water has 30 days, so there is no day 31"]
    assert "HH:MM" in problems_at(page.text, "calendar-start-time")[0]
    assert "no weekday 'Sunday'" in problems_at(page.text, "calendar-start-weekday")[0]
    assert "04:00 does not come after 05:30" in problems_at(page.text, "calendar-parts_of_day-2-from")[0]
    assert (worlds / "harbour-heist" / "world.json").read_text() == before
    assert 'value="many"' in page.text  # the author's input is kept


def test_unticking_the_box_takes_the_calendar_out(client: TestClient, worlds: Path) -> None:
    fields = form_of(client.get(HEIST).text)
    del fields["calendar-on"]
    saved = post(client, HEIST, {**fields, "action": "save"})
    assert saved.status_code == 303
    assert "calendar" not in json.loads((worlds / "harbour-heist" / "world.json").read_text())
