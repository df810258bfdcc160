"""dice.json's checks: what a check is, and how a rolled value finds its band.

A check rolls its `dice` for one character. The dice are read as a `total` (kept dice added up) or
as `successes` (kept dice showing `hit` or more). The character's `modifier` variable, if the check
names one, is added. Then `compare` makes the value the bands read: `absolute` reads it as it is,
`over` reads `value - target` and `under` reads `target - value`, with `target` given by the game
master when it asks for the roll; `opposed` reads the actor's value minus an opponent's (both roll
the dice, each with their own modifier: `Check.rolled`). Bands are tried in order; the first that
holds the value wins. A check may also declare `advantage` and `disadvantage` dice (rolled instead of
`dice` with that edge) and `naturals`, triggers on natural faces that move the band afterwards
(`gm.rules.naturals`). Reading dice.json into these types, with every problem found at once, is
`gm.rules.validation`. This module does no I/O; `gm.world.loading` reads dice.json from disk.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from gm import dice
from gm.dice.tree import Expression as Notation
from gm.errors import BandGapError, CheckRollError, UnknownCheck
from gm.rules.effects import Effect

Result = Literal["succeeded", "partial", "failed"]
Reading = Literal["total", "successes"]
Compare = Literal["absolute", "over", "under", "opposed"]
Edge = Literal["advantage", "disadvantage"]
EDGES: tuple[Edge, ...] = ("advantage", "disadvantage")


@dataclass(frozen=True, slots=True)
class Band:
    """A named stretch of values and the result it gives; an end left out is open."""

    label: str
    result: Result
    critical: bool = False
    min: int | None = None
    max: int | None = None
    effects: tuple[Effect, ...] = ()  # what a roll in this band changes on a sheet (gm.rules.effects)

    def holds(self, value: int) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


@dataclass(frozen=True, slots=True)
class Natural:
    """A trigger on a natural face: when a kept die of the actor (with `sides` sides, or any die that
    can show it) shows `face`, the band steps `step` places (up is toward higher values), or, with
    `band`, the roll goes to that band. See `gm.rules.naturals` for how triggers combine."""

    face: int
    sides: int | None = None
    step: int = 0
    band: str | None = None

    @property
    def watch(self) -> tuple[int, int | None]:
        return self.face, self.sides

    @property
    def text(self) -> str:
        """How the card names it: "natural 20", or "natural 6 on a d6" when the die is named."""
        return f"natural {self.face}" if self.sides is None else f"natural {self.face} on a d{self.sides}"


@dataclass(frozen=True, slots=True)
class Check:
    """One check of dice.json, validated, with its notation parsed."""

    key: str
    name: str
    use: str
    dice: dice.Expression
    bands: tuple[Band, ...]
    reading: Reading = "total"
    hit: int | None = None
    compare: Compare = "absolute"
    modifier: str | None = None
    advantage: Notation | None = None
    disadvantage: Notation | None = None
    naturals: tuple[Natural, ...] = ()
    secret: bool = False  # rolled in secret: no card for the player until revealed (gm.integrity.secret)

    @property
    def needs_target(self) -> bool:
        return self.compare in ("over", "under")

    @property
    def opposed(self) -> bool:
        return self.compare == "opposed"

    @property
    def hit_read(self) -> int | None:
        """`hit` when the dice are read as successes, else None (the total is read)."""
        return self.hit if self.reading == "successes" else None

    @property
    def edges(self) -> tuple[Edge, ...]:
        """The edges this check declares dice for, in the order advantage, disadvantage."""
        return tuple(edge for edge in EDGES if self.dice_for(edge) is not None)

    def dice_for(self, edge: Edge | None) -> Notation | None:
        """The actor's dice with `edge` (None: the check's own dice), or None if the check declares none."""
        if edge is None:
            return self.dice
        return self.advantage if edge == "advantage" else self.disadvantage

    def rolled(self, edge: Edge | None = None) -> Notation:
        """What one roll of this check rolls: the actor's dice with `edge`; for an opposed check,
        followed by the opponent's own dice subtracted (`1d20-1d20`), so one roll holds both."""
        actor = self.dice_for(edge)
        if actor is None:
            raise CheckRollError(f"check '{self.key}' declares no {edge} dice, so it takes no edge '{edge}'")
        return opposed_expression(actor, self.dice) if self.opposed else actor

    def reachable_for(self, edge: Edge | None = None) -> tuple[int, int]:
        """The lowest and highest values `rolled(edge)` can give under this reading, before any modifier.

        Every value between them can occur (see `gm.dice.bounds`)."""
        return dice.bounds(self.rolled(edge), self.hit_read)

    def spans_for(self, edge: Edge | None = None) -> tuple[tuple[int, int], ...]:
        """Every value `rolled(edge)` can give under this reading, before any modifier, as disjoint stretches
        (rerolled and exploding dice can skip values; see `gm.dice.spans`)."""
        return _spans(self.rolled(edge).text, self.hit_read)

    @property
    def reachable(self) -> tuple[int, int]:
        """`reachable_for` with no edge."""
        return self.reachable_for(None)


@dataclass(frozen=True, slots=True)
class Rules:
    """A whole dice.json: its checks in order, found by key."""

    checks: tuple[Check, ...]

    def __getitem__(self, key: str) -> Check:
        for check in self.checks:
            if check.key == key:
                return check
        known = ", ".join(check.key for check in self.checks) or "none"
        raise UnknownCheck(f"there is no check '{key}'; the checks are: {known}")

    def __contains__(self, key: object) -> bool:
        return any(check.key == key for check in self.checks)


def read_value(check: Check, rolled: int, target: int | None = None, modifier: int = 0) -> int:
    """The value the bands read: `rolled` (total or successes) plus `modifier`, compared with `target`.

    For an opposed check `rolled` is the actor's total minus the opponent's (see `Check.rolled`) and
    `modifier` the actor's modifier minus the opponent's (`opposed_modifier`)."""
    if check.needs_target and target is None:
        raise CheckRollError(f"check '{check.key}' compares {check.compare} a target, so it needs a target")
    if not check.needs_target and target is not None:
        said = "reads the actor's value minus the opponent's" if check.opposed else "reads its value as it is"
        raise CheckRollError(f"check '{check.key}' {said}, so it takes no target")
    value = rolled + modifier
    if check.compare == "over":
        return value - (target or 0)
    if check.compare == "under":
        return (target or 0) - value
    return value


def opposed_modifier(actor: int, opponent: int) -> int:
    """The modifier an opposed check's bands read: the actor's minus the opponent's."""
    return actor - opponent


def opposed_expression(actor: dice.Expression, opponent: dice.Expression) -> dice.Expression:
    """One notation for both sides of an opposed roll: the actor's dice, then the opponent's
    subtracted term by term (`2d20kh1` against `1d20` is `2d20kh1-1d20`). Raises `dice.DiceError`
    when the two together pass the notation's limits."""
    return _opposed_text(actor.text, opponent.text)


@lru_cache(maxsize=1024)  # by text: a parsed expression is not hashable, and a check is rolled every round
def _opposed_text(actor: str, opponent: str) -> dice.Expression:
    parsed = dice.parse(opponent)
    flipped = "".join(("+" if term.negative else "-") + _term_text(term) for term in parsed.terms)
    return dice.parse(actor + flipped)


def _term_text(term: dice.Dice | dice.Constant) -> str:
    return str(term.value) if isinstance(term, dice.Constant) else term.text


@lru_cache(maxsize=1024)  # by text: a check's values are asked for every roll and every gm check
def _spans(notation: str, hit: int | None) -> tuple[tuple[int, int], ...]:
    return dice.spans(notation, hit)


def band_for(check: Check, value: int) -> Band | None:
    """The first band holding `value`, or None when it falls in a gap."""
    for band in check.bands:
        if band.holds(value):
            return band
    return None


def resolve(check: Check, total: int, target: int | None = None, modifier: int = 0) -> Band:
    """The band a rolled `total` (or count of successes) falls in, or `BandGapError` naming check and value."""
    value = read_value(check, total, target, modifier)
    band = band_for(check, value)
    if band is None:
        raise BandGapError(check.key, value)
    return band


def ladder(check: Check) -> tuple[int, ...]:
    """The indexes of the bands a roll can end in, from the lowest values to the highest: the order
    naturals step along. A band wholly covered by earlier bands is not on it; ties keep list order."""
    reachable = [
        index
        for index, band in enumerate(check.bands)
        if not (band.min is not None and band.max is not None and band.min > band.max)
        and not covered(band.min, band.max, check.bands[:index])
    ]
    return tuple(
        sorted(
            reachable,
            key=lambda index: (-(10**12) if check.bands[index].min is None else check.bands[index].min, index),
        )
    )


def covered(low: int | None, high: int | None, bands: Iterable[Band]) -> bool:
    """Whether every value from `low` to `high` (None: unbounded) is held by one of `bands`."""
    return not any(True for _ in gaps(tuple(bands), low, high))


def gaps(bands: tuple[Band, ...], low: int | None, high: int | None) -> Iterable[tuple[int | None, int | None]]:
    """Stretches from `low` to `high` (None: unbounded) that no band holds, lowest first."""
    spans = sorted(
        ((band.min, band.max) for band in bands if band.min is None or band.max is None or band.min <= band.max),
        key=lambda span: -(10**12) if span[0] is None else span[0],
    )
    cursor = low  # the lowest value not yet known to be held; None is minus infinity
    for start, end in spans:
        if high is not None and cursor is not None and cursor > high:
            return
        if start is not None and (cursor is None or start > cursor):
            gap_end = start - 1 if high is None else min(start - 1, high)
            if cursor is None or gap_end >= cursor:
                yield cursor, gap_end
        if end is None:
            return
        if cursor is None or end + 1 > cursor:
            cursor = end + 1
    if high is None or cursor is None or cursor <= high:
        yield cursor, high
