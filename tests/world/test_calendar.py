"""A world's calendar: its dates, checking it with the world, and the advance_time tool's arguments (no I/O)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gm.errors import ModelRetry
from gm.world.calendar import MAX_ADVANCE_DAYS, advance, calendar_from_data, duration_text, story_time
from gm.world.definition import validate_world, world_from_data
from tests.support.worlds import CALENDAR, HARBOR_WORLD

HOUR, DAY = 60, 24 * 60


def world_with(calendar: Any) -> dict[str, Any]:
    return {**copy.deepcopy(HARBOR_WORLD), "calendar": calendar}


def test_the_start_is_the_date_and_time_world_json_gives() -> None:
    calendar = calendar_from_data(CALENDAR)
    assert calendar.text(0) == "Threeday, 11 Bloom 311 AL, 19:30 (day)"


@pytest.mark.parametrize(
    ("clock", "expected"),
    [
        (30, "Threeday, 11 Bloom 311 AL, 20:00 (night)"),  # a part of the day begins on its minute
        (4 * HOUR + 30, "Fourday, 12 Bloom 311 AL, 00:00 (night)"),  # past midnight, night goes on until dawn
        (4 * HOUR + 30 + 5 * HOUR, "Fourday, 12 Bloom 311 AL, 05:00 (dawn)"),
        (DAY, "Fourday, 12 Bloom 311 AL, 19:30 (day)"),  # the last day of Bloom
        (2 * DAY, "Oneday, 1 Rime 311 AL, 19:30 (day)"),  # a new month; the week wraps round
        (10 * DAY, "Oneday, 1 Thaw 312 AL, 19:30 (day)"),  # 8 days of Rime later: a new year
        (40 * DAY, "Threeday, 1 Thaw 313 AL, 19:30 (day)"),  # a year of 30 days is 7 weeks and 2 days
    ],
)
def test_dates_run_on_across_midnight_months_years_and_weeks(clock: int, expected: str) -> None:
    assert calendar_from_data(CALENDAR).text(clock) == expected


def test_the_optional_parts_leave_nothing_out_of_the_text() -> None:
    bare = {
        "months": [{"name": "Long", "days": 100}],
        "start": {"year": 1, "month": "long", "day": 100, "time": "23:59"},
    }
    calendar = calendar_from_data(bare)
    assert calendar.text(0) == "100 Long 1, 23:59"
    assert calendar.text(1) == "1 Long 2, 00:00"  # the month named ignoring case; a one-month year
    assert "Weeks" not in calendar.describe() and "Parts" not in calendar.describe()


def test_the_game_master_reads_the_whole_calendar() -> None:
    described = calendar_from_data(CALENDAR).describe()
    assert "Years of 30 days in 3 months: Thaw (10 days), Bloom (12 days), Rime (8 days)." in described
    assert "Weeks of 4 days: Oneday, Twoday, Threeday, Fourday." in described
    assert "dawn from 05:00, day from 08:00, night from 20:00" in described


def test_a_story_time_needs_a_calendar_and_a_clock() -> None:
    assert story_time({"calendar": CALENDAR}, 30) == "Threeday, 11 Bloom 311 AL, 20:00 (night)"
    assert story_time({"calendar": CALENDAR}, None) is None
    assert story_time(HARBOR_WORLD, 0) is None


def test_a_world_with_a_calendar_is_built_with_it_and_one_without_has_none() -> None:
    assert world_from_data(world_with(CALENDAR)).calendar == calendar_from_data(CALENDAR)
    assert world_from_data(HARBOR_WORLD).calendar is None


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (lambda c: c["months"].append({"name": "thaw", "days": 3}), "$.calendar.months[3].name", "already used by"),
        (lambda c: c["weekdays"].append("Oneday"), "$.calendar.weekdays[4]", "already used by calendar.weekdays[0]"),
        (lambda c: c["start"].update(month="Frost"), "$.calendar.start.month", "no month 'Frost'; the months are Thaw"),
        (lambda c: c["start"].update(day=13), "$.calendar.start.day", "Bloom has 12 days, so there is no day 13"),
        (lambda c: c["start"].update(weekday="Funday"), "$.calendar.start.weekday", "no weekday 'Funday'"),
        (lambda c: c.pop("weekdays"), "$.calendar.start.weekday", "needs the calendar's weekdays"),
        (lambda c: c["parts_of_day"][2].update({"from": "07:00"}), "$.calendar.parts_of_day[2].from", "07:00 does not"),
        (lambda c: c["start"].update(time="24:00"), "$.calendar.start.time", "HH:MM, 00:00 to 23:59"),
        (lambda c: c["months"].clear(), "$.calendar.months", "at least 1"),
        (lambda c: c["months"][0].update(days=0), "$.calendar.months[0].days", "too small"),
        (lambda c: c.update(era=" AL"), "$.calendar.era", "must not start or end with spaces"),
        (lambda c: c.update(seasons=[]), "$.calendar", "'seasons' is not known"),
        (lambda c: c["start"].pop("year"), "$.calendar.start", "'year' is missing"),
    ],
)
def test_each_calendar_mistake_is_an_error_at_its_path(change: Any, path: str, words: str) -> None:
    calendar = copy.deepcopy(CALENDAR)
    change(calendar)
    problems = [p for p in validate_world(world_with(calendar)) if p.severity == "error"]
    assert any(p.path == path and words in p.message and p.file == "world.json" for p in problems), problems


def test_a_sound_calendar_has_no_problems() -> None:
    assert validate_world(world_with(CALENDAR)) == []


def test_advance_moves_the_clock_by_each_unit() -> None:
    assert advance(100, {"amount": 5, "unit": "minutes"}) == 105
    assert advance(100, {"amount": 2, "unit": "hours"}) == 220
    assert advance(100, {"amount": 3, "unit": "days"}) == 100 + 3 * DAY
    assert advance(0, {"amount": MAX_ADVANCE_DAYS, "unit": "days"}) == 30 * DAY  # the bound itself is allowed
    assert advance(0, {"amount": 720, "unit": "hours"}) == 30 * DAY


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"amount": 0, "unit": "hours"}, "never goes backwards or stands still"),
        ({"amount": -2, "unit": "days"}, "at least 1, not -2"),
        ({"amount": 31, "unit": "days"}, "at most 30 days pass in one call (30 days), not 31 days"),
        ({"amount": 721, "unit": "hours"}, "(720 hours)"),
        ({"amount": 43201, "unit": "minutes"}, "(43200 minutes)"),
        ({"amount": 1.5, "unit": "hours"}, "a whole number of hours, not 1.5"),
        ({"amount": True, "unit": "hours"}, "a whole number"),
        ({"amount": 2, "unit": "weeks"}, "minutes, hours or days, not 'weeks'"),
    ],
)
def test_bad_advance_arguments_are_errors_the_model_can_act_on(arguments: dict[str, Any], words: str) -> None:
    with pytest.raises(ModelRetry) as raised:
        advance(50, arguments)
    assert words in str(raised.value) and str(raised.value).startswith("advance_time: ")


def test_durations_in_words() -> None:
    assert duration_text(1) == "1 minute"
    assert duration_text(3 * HOUR) == "3 hours"
    assert duration_text(DAY + 2 * HOUR + 5) == "1 day 2 hours 5 minutes"
