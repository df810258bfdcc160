"""A world's calendar (world.json's `calendar`): its dates, the story's clock, and time moving on. No I/O.

A calendar has months (each a name and a number of days), optional weekday names, an optional era
written after the year, the start date and time of day, and optional names for parts of the day
(each from a time of day until the next; the last runs past midnight to the first). Days have 24
hours of 60 minutes: an invented calendar renames and re-lengthens months and weeks, not hours.

A story keeps its time as a clock: whole minutes since the story began (0 at the start date and
time), so it never depends on how far from year 1 the world starts. `Calendar.text(clock)` is the
date a player and the game master read, such as "Fireday, 12 Rainmoon 311 AL, 19:30 (dusk)". The
start date falls on the weekday named in `start.weekday`, else on the first weekday; weeks then run
on without a break across months and years.

The game master moves the clock with `advance_time(amount, unit, reason)` (`advance`): units are
minutes, hours and days; the amount is a whole number from 1 up to `MAX_ADVANCE_DAYS` days' worth,
so time never goes backwards and never jumps without bound in one call. Anything else is a
`ModelRetry` the model can act on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gm.errors import ModelRetry
from gm.problems import Problem

MINUTES_PER_DAY = 24 * 60
MAX_ADVANCE_DAYS = 30  # the most one advance_time call moves the clock: a month's journey, not an age
UNIT_MINUTES = {"minutes": 1, "hours": 60, "days": MINUTES_PER_DAY}
TIME_OF_DAY = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")


@dataclass(frozen=True, slots=True)
class Month:
    """One month of a calendar: its name and how many days it has."""

    name: str
    days: int


@dataclass(frozen=True, slots=True)
class DayPart:
    """A named part of the day, from `start` (minutes after midnight) until the next part begins."""

    name: str
    start: int


@dataclass(frozen=True, slots=True)
class Moment:
    """A clock reading on a calendar, taken apart: year, month (its index and name), day, time, weekday, part."""

    year: int
    month: int
    month_name: str
    day: int
    minute_of_day: int
    weekday: str | None
    part: str | None

    @property
    def time(self) -> str:
        """The time of day as HH:MM, on a 24-hour clock."""
        return f"{self.minute_of_day // 60:02d}:{self.minute_of_day % 60:02d}"


@dataclass(frozen=True, slots=True)
class Calendar:
    """A validated calendar (see the module): built by `calendar_from_data` from world.json's `calendar`."""

    months: tuple[Month, ...]
    weekdays: tuple[str, ...]
    era: str
    parts: tuple[DayPart, ...]
    start_day: int  # days from the first day of year 1 to the start date
    start_minute: int  # the start's time of day, in minutes after midnight
    start_weekday: int  # the index in `weekdays` of the start date's weekday

    @property
    def days_per_year(self) -> int:
        return sum(month.days for month in self.months)

    def moment(self, clock: int) -> Moment:
        """The date and time `clock` minutes after the story's start."""
        minutes = self.start_minute + clock
        days, minute_of_day = divmod(minutes, MINUTES_PER_DAY)
        year_index, day_of_year = divmod(self.start_day + days, self.days_per_year)
        month = 0
        while day_of_year >= self.months[month].days:
            day_of_year -= self.months[month].days
            month += 1
        weekday = self.weekdays[(self.start_weekday + days) % len(self.weekdays)] if self.weekdays else None
        return Moment(
            year_index + 1,
            month,
            self.months[month].name,
            day_of_year + 1,
            minute_of_day,
            weekday,
            self.part_at(minute_of_day),
        )

    def part_at(self, minute_of_day: int) -> str | None:
        """The name of the part of the day holding `minute_of_day` (None when the calendar names none)."""
        if not self.parts:
            return None
        current = self.parts[-1].name  # before the first part starts, the last (say, night) is still going
        for part in self.parts:
            if part.start <= minute_of_day:
                current = part.name
        return current

    def text(self, clock: int) -> str:
        """The date and time as people read it: "Fireday, 12 Rainmoon 311 AL, 19:30 (dusk)"."""
        moment = self.moment(clock)
        weekday = f"{moment.weekday}, " if moment.weekday else ""
        era = f" {self.era}" if self.era else ""
        part = f" ({moment.part})" if moment.part else ""
        return f"{weekday}{moment.day} {moment.month_name} {moment.year}{era}, {moment.time}{part}"

    def describe(self) -> str:
        """The calendar in one paragraph, for the game master's prompt."""
        months = ", ".join(f"{month.name} ({month.days} days)" for month in self.months)
        lines = [f"Years of {self.days_per_year} days in {len(self.months)} months: {months}."]
        if self.weekdays:
            lines.append(f"Weeks of {len(self.weekdays)} days: {', '.join(self.weekdays)}.")
        if self.parts:
            parts = ", ".join(f"{part.name} from {part.start // 60:02d}:{part.start % 60:02d}" for part in self.parts)
            lines.append(f"Parts of the day: {parts}.")
        return " ".join(lines)


def duration_text(minutes: int) -> str:
    """A span of time in words: "3 hours", "1 day 2 hours 5 minutes"."""
    days, rest = divmod(minutes, MINUTES_PER_DAY)
    hours, mins = divmod(rest, 60)
    parts = [f"{n} {unit}{'' if n == 1 else 's'}" for n, unit in ((days, "day"), (hours, "hour"), (mins, "minute"))]
    return " ".join(part for part, n in zip(parts, (days, hours, mins)) if n) or "no time"


def advance(clock: int, arguments: dict[str, Any]) -> int:
    """The clock after an advance_time call's `amount` of `unit`; `ModelRetry` says what is wrong with them."""
    unit, amount = arguments.get("unit"), arguments.get("amount")
    if unit not in UNIT_MINUTES:
        raise ModelRetry(f"advance_time: unit must be one of minutes, hours or days, not {unit!r}")
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise ModelRetry(f"advance_time: amount must be a whole number of {unit}, not {amount!r}")
    if amount < 1:
        raise ModelRetry(
            f"advance_time: time never goes backwards or stands still; amount must be at least 1, not {amount}"
        )
    most = MAX_ADVANCE_DAYS * MINUTES_PER_DAY // UNIT_MINUTES[unit]
    if amount > most:
        raise ModelRetry(
            f"advance_time: at most {MAX_ADVANCE_DAYS} days pass in one call ({most} {unit}), not {amount} {unit};"
            " tell a longer stretch over several rounds"
        )
    return clock + amount * UNIT_MINUTES[unit]


def advance_time_schema() -> dict[str, Any]:
    """The advance_time tool's parameters (JSON Schema), offered only in a world with a calendar."""
    return {
        "amount": {
            "type": "integer",
            "description": f"How much time passes: a whole number from 1 up to {MAX_ADVANCE_DAYS} days' worth.",
        },
        "unit": {"type": "string", "enum": list(UNIT_MINUTES)},
        "reason": {"type": "string", "description": "What takes the time, such as 'waiting for nightfall'."},
    }


def minutes_of(time_text: str) -> int:
    """Minutes after midnight of an HH:MM time (already checked against `TIME_OF_DAY`)."""
    hours, minutes = time_text.split(":")
    return int(hours) * 60 + int(minutes)


def story_time(world_data: Any, clock: int | None) -> str | None:
    """A story's time in words, from the world.json copied into it; None without a calendar or a clock."""
    return calendar_time(world_data.get("calendar") if isinstance(world_data, dict) else None, clock)


def calendar_time(calendar: Any, clock: int | None) -> str | None:
    """A time in words, from the `calendar` of a world.json copied into a story; None without either."""
    if clock is None or not isinstance(calendar, dict):
        return None
    return calendar_from_data(calendar).text(clock)


def calendar_from_data(data: dict[str, Any]) -> Calendar:
    """The `Calendar` of a world.json `calendar` that `calendar_problems` found no error in."""
    months = tuple(Month(month["name"], month["days"]) for month in data["months"])
    start = data["start"]
    month_index = _index(months, start["month"])
    assert month_index is not None  # checked by calendar_problems
    weekdays = tuple(data.get("weekdays", ()))
    folded = [name.strip().casefold() for name in weekdays]
    wanted = start.get("weekday")
    return Calendar(
        months=months,
        weekdays=weekdays,
        era=data.get("era", ""),
        parts=tuple(DayPart(part["name"], minutes_of(part["from"])) for part in data.get("parts_of_day", ())),
        start_day=(start["year"] - 1) * sum(m.days for m in months)
        + sum(m.days for m in months[:month_index])
        + start["day"]
        - 1,
        start_minute=minutes_of(start["time"]),
        start_weekday=folded.index(wanted.strip().casefold()) if isinstance(wanted, str) else 0,
    )


def _index(months: tuple[Month, ...] | list[Any], name: Any) -> int | None:
    """The index of the month called `name` (ignoring case), or None."""
    if not isinstance(name, str):
        return None
    for index, month in enumerate(months):
        month_name = month.name if isinstance(month, Month) else month.get("name") if isinstance(month, dict) else None
        if isinstance(month_name, str) and month_name.casefold() == name.strip().casefold():
            return index
    return None


def calendar_problems(data: Any, path: str = "$.calendar") -> list[Problem]:
    """What the schema cannot say about a calendar: repeated names, the start date, the parts' order.

    Parts the schema refuses are skipped here (it reports them), so each mistake is named once.
    """
    if not isinstance(data, dict):
        return []
    problems: list[Problem] = []
    months, weekdays, parts = _list(data, "months"), _list(data, "weekdays"), _list(data, "parts_of_day")
    problems += _name_problems([_name(month) for month in months], f"{path}.months", True)
    problems += _name_problems(weekdays, f"{path}.weekdays", False)
    problems += _name_problems([_name(part) for part in parts], f"{path}.parts_of_day", True)
    if isinstance(data.get("era"), str):
        problems += _text_problem(data["era"], f"{path}.era")
    start = data.get("start")
    if isinstance(start, dict):
        problems += _start_problems(start, months, weekdays, f"{path}.start")
    previous: tuple[int, str] | None = None
    for index, part in enumerate(parts):
        when = part.get("from") if isinstance(part, dict) else None
        if not isinstance(when, str) or not TIME_OF_DAY.match(when):
            continue
        if previous is not None and minutes_of(when) <= previous[0]:
            message = f"parts of the day go in order through the day: {when} does not come after {previous[1]}"
            problems.append(Problem(f"{path}.parts_of_day[{index}].from", message))
        previous = (minutes_of(when), when)
    return problems


def _list(data: dict[str, Any], key: str) -> list[Any]:
    found = data.get(key)
    return found if isinstance(found, list) else []


def _name(item: Any) -> Any:
    return item.get("name") if isinstance(item, dict) else None


def _text_problem(name: str, path: str) -> list[Problem]:
    if name and (name != name.strip() or not name.isprintable()):
        return [Problem(path, f"{name!r} must not start or end with spaces or hold line breaks or tabs")]
    return []


def _name_problems(names: list[Any], path: str, keyed: bool) -> list[Problem]:
    """Spaces at either end, line breaks, and a name used twice (ignoring case) in one list."""
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name:
            continue
        where = f"{path}[{index}].name" if keyed else f"{path}[{index}]"
        problems += _text_problem(name, where)
        folded = name.strip().casefold()
        if folded in seen:
            problems.append(
                Problem(where, f"the name '{name}' is already used by {path[2:]}[{seen[folded]}] (names ignore case)")
            )
        seen.setdefault(folded, index)
    return problems


def _start_problems(start: dict[str, Any], months: list[Any], weekdays: list[Any], path: str) -> list[Problem]:
    """The start date must be a day of a month the calendar has, on one of its weekdays."""
    problems: list[Problem] = []
    month = start.get("month")
    index = _index(months, month)
    names = ", ".join(str(m.get("name")) for m in months if isinstance(m, dict))
    if isinstance(month, str) and month and index is None and months:
        problems.append(Problem(f"{path}.month", f"there is no month '{month}'; the months are {names}"))
    day = start.get("day")
    if index is not None and isinstance(day, int) and not isinstance(day, bool):
        days = months[index].get("days")
        if isinstance(days, int) and not isinstance(days, bool) and day > days:
            problems.append(
                Problem(f"{path}.day", f"{months[index]['name']} has {days} days, so there is no day {day}")
            )
    weekday = start.get("weekday")
    if isinstance(weekday, str) and weekday:
        known = [name for name in weekdays if isinstance(name, str)]
        if not known:
            problems.append(
                Problem(f"{path}.weekday", "a start weekday needs the calendar's weekdays; add them or leave it out")
            )
        elif weekday.strip().casefold() not in [name.strip().casefold() for name in known]:
            problems.append(
                Problem(f"{path}.weekday", f"there is no weekday '{weekday}'; the weekdays are {', '.join(known)}")
            )
    return problems
