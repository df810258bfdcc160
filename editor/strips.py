"""The chance of each band of a check as the editor draws it: one strip of segments, lowest value first.

A strip is drawn whenever the check's odds can be worked out (its dice parse, its reading and band
ends make sense), even while it has other mistakes: a gap in an absolute check shows as a gap
segment, which is the point. The odds are `gm.rules.chances.check_odds`: exact, or a labelled estimate for
dice whose exact odds would take too long. Over/under checks are shown against a target the author
types (by default the dice's mean, rounded as the rehearsal does), checks with a modifier for a
character the author picks among those holding it as a whole number, and opposed checks against an
opponent picked the same way (the strip reads the difference). A check with advantage or
disadvantage dice gets a strip for each edge under its own. A check with naturals is drawn band by
band along its ladder (lowest values first), each band's share counted after the naturals moved
rolls between bands, since a value no longer names one band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, cast

from gm import dice
from gm.problems import Problem
from gm.rules.chances import CheckOdds, band_runs, check_odds, cumulative
from gm.rules.checks import Band, Check, Compare, Edge, Natural, Reading, Result, ladder, opposed_expression, read_value
from gm.world.sheet import start_value

from .dice_form import COMPARES, READINGS, WHOLE, CheckDraft, NaturalDraft

NARROW = 0.08  # segments narrower than this show their percentage only; their label is in the table


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of neighbouring values that land in one band (`band` None: in no band, a gap)."""

    band: int | None
    label: str
    result: str
    critical: bool
    low: int
    high: int
    probability: Fraction

    @property
    def width(self) -> str:
        return f"{float(self.probability) * 100:.4f}%"

    @property
    def percent(self) -> str:
        return percent(self.probability)

    @property
    def values(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low} to {self.high}"

    @property
    def narrow(self) -> bool:
        return self.probability < NARROW


@dataclass(frozen=True, slots=True)
class BandRow:
    """One band in the table under the strip."""

    label: str
    values: str
    result: str
    critical: bool
    probability: Fraction

    @property
    def percent(self) -> str:
        return percent(self.probability)


@dataclass(frozen=True, slots=True)
class Strip:
    """One check's strip: its segments, the table of its bands, the chance of a void roll, and how it was read."""

    segments: tuple[Segment, ...]
    bands: tuple[BandRow, ...]
    void: Fraction
    exact: bool
    samples: int | None
    caption: str
    title: str = ""  # "With advantage: 2d20kh1" for an edge's strip
    error_bound: float = 0.0  # an estimate's bound on the error of each band's chance (gm.dice.Odds.error)

    @property
    def error(self) -> str:
        """An estimate's error bound as percentage points: "±1.70 points"."""
        return f"\u00b1{self.error_bound * 100:.2f} points"

    @property
    def void_percent(self) -> str:
        return percent(self.void)

    @property
    def gaps(self) -> str:
        """The values in no band, as the bands read them: "7", or "-2 to -1, 5"."""
        return ", ".join(segment.values for segment in self.segments if segment.band is None)


@dataclass(frozen=True, slots=True)
class Preview:
    """What the Dice form shows under a check: a strip (None, with `reason`, when its odds cannot be worked out),
    the target it was drawn for, and the characters to choose from for its modifier."""

    strip: Strip | None
    reason: str
    target: str
    characters: tuple[tuple[str, int], ...]
    character: str
    problems: tuple[Problem, ...] = ()
    edges: tuple[Strip, ...] = ()  # one more strip per edge the check declares
    opponents: tuple[tuple[str, int], ...] = ()  # an opposed check's choice of opponent
    opponent: str = ""


def percent(probability: Fraction) -> str:
    """A probability as a percentage with two decimals; a chance too small to show is "<0.01%"."""
    if 0 < probability < Fraction(1, 20_000):
        return "<0.01%"
    return f"{float(probability) * 100:.2f}%"


@lru_cache(maxsize=64)
def distribution(notation: str, hit: int | None) -> dice.Odds:
    """The dice's odds, kept: a preview is asked for at every keystroke, and big dice take a second."""
    return dice.odds(notation, hit)


def preview(draft: CheckDraft, world: Any | None) -> Preview:
    """The strip for one check of the form, with `world` (parsed world.json, or None) for its characters."""
    holders = _holders(draft.modifier, world)
    character = _chosen(draft.character, holders, world)
    built = build_check(draft)
    if isinstance(built, str):
        return Preview(None, built, draft.target, holders, character)
    check = built
    hit = check.hit if check.reading == "successes" else None
    odds = distribution(check.dice.text, hit)
    problems: tuple[Problem, ...] = ()
    target = None
    if check.needs_target:
        typed = draft.target.strip().replace("\u2212", "-")
        if WHOLE.match(typed):
            target = int(typed)
        else:
            if typed:
                problems = (Problem("$", f"the target must be a whole number, not {draft.target!r}"),)
            half = Fraction(1, 2)
            target = math.floor(odds.mean + half) if check.compare == "over" else math.ceil(odds.mean - half)
    modifier = dict(holders).get(character, 0)
    opponents: tuple[tuple[str, int], ...] = ()
    opponent = ""
    against = ""
    if check.opposed and holders:
        opponents = holders
        others = [name for name, _ in holders if name != character]
        opponent = draft.opponent if draft.opponent in dict(holders) else (others[0] if others else character)
        modifier -= dict(holders)[opponent]
        against = opponent
    strips = [
        _strip(
            check, edge, target, modifier, _caption(check, target, modifier, character, bool(holders), against, edge)
        )
        for edge in (None, *check.edges)
    ]
    shown = draft.target if problems else ("" if target is None else str(target))
    return Preview(strips[0], "", shown, holders, character, problems, tuple(strips[1:]), opponents, opponent)


def _strip(check: Check, edge: Edge | None, target: int | None, modifier: int, caption: str) -> Strip:
    odds = distribution(check.rolled(edge).text, check.hit_read)
    result = check_odds(check, target, modifier, odds, edge)
    segments = _ladder_segments(check, result) if check.naturals else _segments(check, odds, target, modifier)
    title = f"With {edge}: {check.rolled(edge).text}" if edge else ""
    return Strip(
        segments,
        tuple(
            BandRow(chance.band.label, _span(chance.band), chance.band.result, chance.band.critical, chance.probability)
            for chance in result.bands
        ),
        result.void,
        result.dice.exact,
        result.dice.samples,
        caption + (", naturals applied" if check.naturals else ""),
        title,
        result.dice.error,
    )


def _ladder_segments(check: Check, result: CheckOdds) -> tuple[Segment, ...]:
    """One segment per band a roll can end in, lowest values first, then the void share (if any)."""
    segments = []
    for index in ladder(check):
        band, chance = check.bands[index], result.bands[index].probability
        if chance:
            low, high = band.min if band.min is not None else 0, band.max if band.max is not None else 0
            segments.append(Segment(index, band.label, band.result, band.critical, low, high, chance))
    if result.void:
        segments.append(Segment(None, "gap", "void", False, 0, 0, result.void))
    return tuple(segments)


def build_check(draft: CheckDraft) -> Check | str:
    """The check a form describes, enough to work out its odds, or a sentence saying why it cannot be."""
    try:
        expression = dice.parse(draft.dice)
    except dice.DiceError:
        return "The chances show once the dice notation is right."
    if draft.reading not in READINGS or draft.compare not in COMPARES:
        return "The chances show once the reading and the comparison are chosen."
    edges: dict[str, dice.Expression | None] = {}
    for edge in ("advantage", "disadvantage"):
        typed = getattr(draft, edge).strip()
        try:
            edges[edge] = dice.parse(typed) if typed else None
            if typed and draft.compare == "opposed":
                opposed_expression(dice.parse(typed), expression)
        except dice.DiceError:
            return f"The chances show once the {edge} dice are right."
    if draft.compare == "opposed":
        if draft.reading == "successes":
            return "The chances show once the opposed check reads the total."
        try:
            opposed_expression(expression, expression)
        except dice.DiceError:
            return "The chances show once the dice can be rolled twice, one side against the other."
    naturals = _naturals(draft.naturals)
    if isinstance(naturals, str):
        return naturals
    hit = None
    if draft.reading == "successes":
        if not WHOLE.match(draft.hit.strip()):
            return "The chances show once 'hit' is a whole number."
        hit = int(draft.hit.strip())
        try:
            for notation in (expression, *(edge for edge in edges.values() if edge is not None)):
                dice.check_successes(notation, hit)
        except dice.DiceError:
            return "The chances show once the dice and 'hit' can be read as successes."
    bands = []
    for number, band in enumerate(draft.bands):
        ends = [band.min.strip(), band.max.strip()]
        if not all(not end or WHOLE.match(end) for end in ends):
            return f"The chances show once band {number + 1}'s min and max are whole numbers (or empty)."
        low, high = (int(end) if end else None for end in ends)
        bands.append(Band(band.label, cast(Result, band.result), band.critical, low, high))
    return Check(
        draft.key,
        draft.name,
        draft.use,
        expression,
        tuple(bands),
        cast(Reading, draft.reading),
        hit,
        cast(Compare, draft.compare),
        draft.modifier or None,
        edges["advantage"],
        edges["disadvantage"],
        naturals,
    )


def _naturals(drafts: list[NaturalDraft]) -> tuple[Natural, ...] | str:
    """The naturals typed, or a sentence saying which one stops the chances from showing."""
    found = []
    for number, natural in enumerate(drafts, 1):
        face, sides, step = (text.strip() for text in (natural.face, natural.sides, natural.step))
        if not WHOLE.match(face) or (sides and not WHOLE.match(sides)):
            return f"The chances show once natural {number}'s face (and sides, if given) are whole numbers."
        if natural.kind == "band":
            found.append(Natural(int(face), int(sides) if sides else None, 0, natural.band))
        elif WHOLE.match(step) and int(step) != 0:
            found.append(Natural(int(face), int(sides) if sides else None, int(step)))
        else:
            return f"The chances show once natural {number}'s step is a whole number other than 0."
    return tuple(found)


def _segments(check: Check, odds: dice.Odds, target: int | None, modifier: int) -> tuple[Segment, ...]:
    """Runs of values by band, in the order of the value the bands read (for `under`, highest roll first).

    Worked out run by run (`band_runs`), not value by value: 40 checks of 100d1000kh50 took 24 s a page before."""
    counts, lowest = odds.counts, odds.lowest
    summed = cumulative(odds)
    runs = []
    for start, stop, band in band_runs(check, lowest, len(counts), target, modifier):
        if summed[stop] == summed[start]:
            continue  # no roll reads these values
        while not counts[start]:
            start += 1
        while not counts[stop - 1]:
            stop -= 1
        ends = sorted(read_value(check, lowest + at, target, modifier) for at in (start, stop - 1))
        runs.append((ends[0], ends[1], band, summed[stop] - summed[start]))
    runs.sort(key=lambda run: run[0])
    segments: list[Segment] = []
    for low, high, band, count in runs:
        last = segments[-1] if segments else None
        if last is not None and last.band == band:
            probability = last.probability + Fraction(count, odds.denominator)
            segments[-1] = Segment(band, last.label, last.result, last.critical, last.low, high, probability)
            continue
        chosen = check.bands[band] if band is not None else None
        segments.append(
            Segment(
                band,
                chosen.label if chosen else "gap",
                chosen.result if chosen else "void",
                chosen.critical if chosen else False,
                low,
                high,
                Fraction(count, odds.denominator),
            )
        )
    return tuple(segments)


def _band_index(bands: tuple[Band, ...], value: int) -> int | None:
    for number, band in enumerate(bands):
        if band.holds(value):
            return number
    return None


def _span(band: Band) -> str:
    if band.min is None and band.max is None:
        return "any value"
    if band.min is None:
        return f"{band.max} or less"
    if band.max is None:
        return f"{band.min} or more"
    return str(band.min) if band.min == band.max else f"{band.min} to {band.max}"


def _caption(
    check: Check,
    target: int | None,
    modifier: int,
    character: str,
    has_holders: bool,
    opponent: str = "",
    edge: Edge | None = None,
) -> str:
    """What a strip shows the chances of: the dice rolled (with the edge, for an advantage strip), the modifier,
    the target."""
    actor = check.dice_for(edge) or check.dice
    what = f"{actor.text}" + (f", successes (hit {check.hit}+)" if check.reading == "successes" else "")
    if check.opposed and opponent:
        return what + f" for {character} against the same for {opponent}: the difference, {modifier:+d} net"
    if check.opposed:
        what += " against the same dice: the difference"
    if check.modifier:
        what += (
            f" {modifier:+d} ({character}'s {check.modifier})"
            if has_holders
            else f" (no character has '{check.modifier}', so no modifier)"
        )
    if target is not None:
        what += f", {check.compare} target {target}"
    return what


def _holders(variable: str, world: Any | None) -> tuple[tuple[str, int], ...]:
    """The characters of `world` holding `variable` as a whole number, with its value (a bounded number's start)."""
    if not variable or not isinstance(world, dict) or not isinstance(world.get("characters"), list):
        return ()
    found = []
    for raw in world["characters"]:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        variables = raw.get("variables")
        value = start_value(variables.get(variable)) if isinstance(variables, dict) else None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            found.append((raw["name"], value))
    return tuple(found)


def _chosen(typed: str, holders: tuple[tuple[str, int], ...], world: Any | None) -> str:
    """The character the strip is drawn for: the one picked, else the first player holding the variable."""
    names = [name for name, _ in holders]
    if typed in names:
        return typed
    characters = world.get("characters") if isinstance(world, dict) else None
    players = {
        raw.get("name")
        for raw in (characters if isinstance(characters, list) else [])
        if isinstance(raw, dict) and raw.get("role") == "player"
    }
    return next((name for name in names if name in players), names[0] if names else "")
