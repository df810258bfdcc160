"""When the rehearsal stand-in moves the clock, and by how much (see `gm.rehearsal.model`).

In a world with a calendar, the rehearsal calls `advance_time` before anything else when the
player's words say that time passes (`time_wanted`):

- "until" (or "till") a time of day: a part of the day the calendar names ("until the small
  hours"), or one of the usual words, looked for among the calendar's parts first and otherwise
  taken at a fixed hour (`TIMES_OF_DAY`: nightfall 20:00, dawn 06:00, noon 12:00, midnight 00:00...).
  The clock moves on to the next time that part begins: later today, or tomorrow if it has begun.
- A span: a number (digits, or "a", "an", "one" to "twelve", "a few" = 3, "several" = 4) and a unit
  (minutes, hours, days), or "half an hour": that much time.
- Sleeping ("sleep", "rest for the night", "bed down") with no span or time named: until morning.
- "tomorrow" or "the next day" with none of the above: until morning.

Only words that say time passes count: a span or "until" needs a verb of waiting, resting,
sleeping or travelling before it in the same sentence (`PASSING_VERBS`), so "I pick the lock for
an hour" moves the clock but "a two-hour walk away" said of a place does not. The amount is told
in hours when it is whole hours, else in minutes, and never beyond what one call may move
(`gm.world.calendar.MAX_ADVANCE_DAYS`), so the engine never refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gm.world.calendar import MAX_ADVANCE_DAYS, MINUTES_PER_DAY, Calendar

_VERBS = """
    wait waits waiting waited rest rests resting rested sleep sleeps sleeping slept nap naps napping
    linger lingers lingering stay stays staying hide hides hiding camp camps camping travel travels
    travelling traveling journey journeys ride rides riding sail sails sailing walk walks walking march
    marches marching row rows rowing spend spends spending pass passes passing keep watch watching work
    works working sit sits sitting lie lies lying hole for
"""
PASSING_VERBS = frozenset(_VERBS.split())
# A word for a time of day: the parts of a calendar it may name, and the hour it means when none does.
TIMES_OF_DAY: dict[str, tuple[tuple[str, ...], int]] = {
    "nightfall": (("nightfall", "night", "dusk", "evening"), 20 * 60),
    "night": (("night", "nightfall"), 21 * 60),
    "dusk": (("dusk", "evening", "sunset"), 18 * 60),
    "sunset": (("sunset", "dusk", "evening"), 18 * 60),
    "evening": (("evening", "dusk"), 18 * 60),
    "dawn": (("dawn", "sunrise", "daybreak"), 6 * 60),
    "sunrise": (("sunrise", "dawn", "daybreak"), 6 * 60),
    "daybreak": (("daybreak", "dawn", "sunrise"), 6 * 60),
    "morning": (("morning", "dawn"), 8 * 60),
    "noon": (("noon", "midday"), 12 * 60),
    "midday": (("midday", "noon"), 12 * 60),
    "afternoon": (("afternoon",), 14 * 60),
    "midnight": (("midnight",), 0),
}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a few": 3, "few": 3, "several": 4,
}  # fmt: skip
UNITS = {"minute": 1, "hour": 60, "day": MINUTES_PER_DAY}

_NUMBER = r"(\d{1,4}|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_SPAN = re.compile(rf"\b{_NUMBER}\s+(minute|hour|day)s?\b|\b(half an hour)\b")
_UNTIL = re.compile(r"\b(?:until|till|til)\s+(?:the\s+|it\s+is\s+|it's\s+)?([a-z][a-z ]{0,40})")
_SLEEP = re.compile(r"\b(sleep|sleeps|slept|bed down|turn in|rest for the night|camp for the night|overnight)\b")
_TOMORROW = re.compile(r"\b(tomorrow|the next day|next morning|the following day)\b")
_SENTENCE = re.compile(r"[.!?;\n]")


@dataclass(frozen=True, slots=True)
class Advance:
    """How much time the rehearsal asks advance_time to pass, and why (the player's words that said so)."""

    amount: int
    unit: str
    reason: str


def time_wanted(text: str, calendar: Calendar, clock: int) -> Advance | None:
    """The advance_time call the player's words ask for, or None when they do not say time passes."""
    for sentence in _SENTENCE.split(text):
        minutes = _minutes(sentence.casefold(), calendar, clock)
        if minutes:
            return _advance(min(minutes, MAX_ADVANCE_DAYS * MINUTES_PER_DAY), " ".join(sentence.split()))
    return None


def _minutes(sentence: str, calendar: Calendar, clock: int) -> int | None:
    verb = _first_verb(sentence)
    if verb is not None:
        if (until := _UNTIL.search(sentence, verb)) is not None:
            target = _time_of_day(until.group(1), calendar)
            if target is not None:
                return _until(calendar, clock, target)
        if (span := _SPAN.search(sentence, verb)) is not None:
            if span.group(3):
                return 30
            return _count(span.group(1)) * UNITS[span.group(2)]
    if _SLEEP.search(sentence) or _TOMORROW.search(sentence):
        morning = _time_of_day("morning", calendar)
        assert morning is not None  # "morning" always has its fixed hour
        return _until(calendar, clock, morning)
    return None


def _first_verb(sentence: str) -> int | None:
    """Where the first word saying time passes ends in `sentence`, or None."""
    for word in re.finditer(r"[a-z]+", sentence):
        if word.group() in PASSING_VERBS:
            return word.end()
    return None


def _time_of_day(words: str, calendar: Calendar) -> int | None:
    """The minute of the day that `words` (what follows "until") name, or None if they name no time of day."""
    words = " ".join(words.split())
    for part in calendar.parts:  # the calendar's own names first: "until the small hours"
        if words.startswith(part.name.casefold()):
            return part.start
    first = words.split(" ")[0] if words else ""
    if first not in TIMES_OF_DAY:
        return None
    names, hour = TIMES_OF_DAY[first]
    for name in names:
        for part in calendar.parts:
            if part.name.casefold() == name:
                return part.start
    return hour


def _until(calendar: Calendar, clock: int, target: int) -> int:
    """Minutes from `clock` until the minute of the day `target` next comes round (a full day if it is now)."""
    now = calendar.moment(clock).minute_of_day
    return (target - now) % MINUTES_PER_DAY or MINUTES_PER_DAY


def _count(word: str) -> int:
    return int(word) if word.isdigit() else NUMBER_WORDS[word]


def _advance(minutes: int, reason: str) -> Advance:
    if minutes % MINUTES_PER_DAY == 0:
        return Advance(minutes // MINUTES_PER_DAY, "days", reason)
    if minutes % 60 == 0:
        return Advance(minutes // 60, "hours", reason)
    return Advance(minutes, "minutes", reason)
