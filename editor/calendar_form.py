"""The calendar part of the world form: world.json's `calendar` as fields, and back (see `gm.world.calendar`).

A box says whether the world has a calendar at all; unticked, the calendar is left out of world.json
(and what was typed stays in the form until the page is left). Months and parts of the day are rows
(name and days; name and from), weekdays one line of names separated by commas. Fields are named after
the JSON paths their problems come back at: `calendar-months-0-days`, `calendar-start-month`,
`calendar-parts_of_day-1-from`; buttons send `add-month`, `remove-month:2`, `add-part`, `remove-part:0`.
Whole numbers that are not whole numbers are the form's own errors, at their fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.exceptions import HTTPException

from gm.problems import Problem

from .fields import change, field_text, index_in, one_line, positions

WHOLE = re.compile(r"^\s*[+-]?\d{1,9}\s*$")
_MONTH = re.compile(r"^calendar-months-(\d{1,4})-")
_PART = re.compile(r"^calendar-parts_of_day-(\d{1,4})-")
START_FIELDS = ("year", "month", "day", "time", "weekday")


@dataclass
class MonthDraft:
    name: str = ""
    days: str = ""


@dataclass
class PartDraft:
    name: str = ""
    start: str = ""  # "from" in world.json


@dataclass
class CalendarDraft:
    """A calendar as typed; `on` says whether world.json gets one."""

    on: bool = False
    months: list[MonthDraft] = field(default_factory=lambda: [MonthDraft()])
    weekdays: str = ""
    era: str = ""
    start: dict[str, str] = field(default_factory=lambda: dict.fromkeys(START_FIELDS, ""))
    parts: list[PartDraft] = field(default_factory=list)


def calendar_from_data(data: Any) -> CalendarDraft:
    """A draft showing world.json's `calendar` (absent or not an object: no calendar)."""
    if not isinstance(data, dict):
        return CalendarDraft()
    months, parts, weekdays = _list(data, "months"), _list(data, "parts_of_day"), _list(data, "weekdays")
    start = data["start"] if isinstance(data.get("start"), dict) else {}
    return CalendarDraft(
        on=True,
        months=[
            MonthDraft(field_text(m.get("name")), field_text(m.get("days"))) for m in months if isinstance(m, dict)
        ],
        weekdays=", ".join(field_text(name) for name in weekdays),
        era=field_text(data.get("era")),
        start={name: field_text(start.get(name)) for name in START_FIELDS},
        parts=[PartDraft(field_text(p.get("name")), field_text(p.get("from"))) for p in parts if isinstance(p, dict)],
    )


def _list(data: dict[str, Any], key: str) -> list[Any]:
    found = data.get(key)
    return found if isinstance(found, list) else []


def calendar_from_form(form: Mapping[str, str]) -> CalendarDraft:
    """The calendar a posted form describes; rows in the order of their numbers."""
    months = sorted({int(match[1]) for name in form if (match := _MONTH.match(name))})
    parts = sorted({int(match[1]) for name in form if (match := _PART.match(name))})
    return CalendarDraft(
        on=form.get("calendar-on") == "on",
        months=[
            MonthDraft(
                one_line(form.get(f"calendar-months-{n}-name", "")), one_line(form.get(f"calendar-months-{n}-days", ""))
            )
            for n in months
        ],
        weekdays=one_line(form.get("calendar-weekdays", "")),
        era=one_line(form.get("calendar-era", "")),
        start={name: one_line(form.get(f"calendar-start-{name}", "")) for name in START_FIELDS},
        parts=[
            PartDraft(
                one_line(form.get(f"calendar-parts_of_day-{n}-name", "")),
                one_line(form.get(f"calendar-parts_of_day-{n}-from", "")),
            )
            for n in parts
        ],
    )


def calendar_data(draft: CalendarDraft, found: dict[str, list[Problem]]) -> dict[str, Any]:
    """world.json's `calendar` for a ticked draft; what only the form can see goes into `found` by field id."""

    def whole(text: str, field_id: str) -> int | str:
        if WHOLE.match(text):
            return int(text)
        found.setdefault(field_id, []).append(Problem("$", f"expected a whole number, found {text!r}"))
        return text

    data: dict[str, Any] = {
        "months": [
            {"name": month.name, "days": whole(month.days, f"calendar-months-{number}-days")}
            for number, month in enumerate(draft.months)
            if month.name or month.days.strip()
        ]
    }
    weekdays = [name.strip() for name in draft.weekdays.split(",") if name.strip()]
    if weekdays:
        data["weekdays"] = weekdays
    if draft.era:
        data["era"] = draft.era
    start: dict[str, Any] = {}
    for name in START_FIELDS:
        typed = draft.start.get(name, "")
        if name in ("year", "day"):
            start[name] = whole(typed, f"calendar-start-{name}")
        elif typed or name != "weekday":
            start[name] = typed
    data["start"] = start
    parts = [{"name": part.name, "from": part.start} for part in draft.parts if part.name or part.start]
    if parts:
        data["parts_of_day"] = parts
    return data


def calendar_field_ids(draft: CalendarDraft) -> set[str]:
    """Every field id the calendar part of the form shows (problems elsewhere in it go to `calendar`)."""
    ids = {
        "calendar",
        "calendar-months",
        "calendar-weekdays",
        "calendar-era",
        "calendar-start",
        "calendar-parts_of_day",
    }
    ids.update(f"calendar-start-{name}" for name in START_FIELDS)
    for number in range(len(draft.months)):
        ids.update({f"calendar-months-{number}", f"calendar-months-{number}-name", f"calendar-months-{number}-days"})
    for number in range(len(draft.parts)):
        prefix = f"calendar-parts_of_day-{number}"
        ids.update({prefix, f"{prefix}-name", f"{prefix}-from"})
    return ids


def apply_calendar_action(draft: CalendarDraft, verb: str, where: str) -> bool:
    """Add or remove a month or part of the day as a button says; False for an action that is not the calendar's."""
    numbers = positions(where)
    if verb == "add-month" and not numbers:
        draft.on = True
        draft.months.append(MonthDraft())
    elif verb == "remove-month" and len(numbers) == 1:
        change(draft.months, "remove", index_in(draft.months, numbers[0]))
    elif verb == "add-part" and not numbers:
        draft.on = True
        draft.parts.append(PartDraft())
    elif verb == "remove-part" and len(numbers) == 1:
        change(draft.parts, "remove", index_in(draft.parts, numbers[0]))
    elif verb in ("add-month", "remove-month", "add-part", "remove-part"):
        raise HTTPException(400, f"The editor does not know the action {verb}:{where}.")
    else:
        return False
    return True
