"""What a roll of a check can give: each band's chance (the editor's preview, `gm odds WORLD CHECK`),
and whether it can go either way at all (`certain`, which `roll_check` and the rehearsal obey).

A check is certain for a target and modifier when every value it can read gives the same result:
the dice then decide nothing, so the game master is told to narrate without a roll. Only results
count: bands with other labels, or critical ones, giving the same result are one outcome. A value in
no band (a void roll) is an outcome of its own, so a roll that may be void or fail is not certain,
and one that is void whatever the dice show is (it could settle nothing). This needs only the
interval of values the dice can read (`gm.dice.bounds`) and the bands, never the odds, so it takes
microseconds even for 100d1000.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import accumulate, pairwise
from typing import Any

from gm import dice
from gm.dice.joint import Joint, joint
from gm.dice.odds import decimal
from gm.rules._targets import FAR, describe_targets
from gm.rules.checks import Band, Check, Edge, Result, band_for, read_value
from gm.rules.naturals import settle, watched_terms


@dataclass(frozen=True, slots=True)
class BandChance:
    """One band and the probability that a roll of its check lands in it."""

    band: Band
    probability: Fraction


@dataclass(frozen=True, slots=True)
class CheckOdds:
    """A check's odds for one target and modifier: the dice's own distribution, each band's chance, and
    the chance of a void roll (a value in no band). Exact unless `dice.exact` is False."""

    check: Check
    target: int | None
    modifier: int
    dice: dice.Odds
    bands: tuple[BandChance, ...]
    void: Fraction
    certain: Certain | None = None  # set when every roll gives one result
    edge: Edge | None = None

    def to_json(self, exact: bool = False) -> dict[str, Any]:
        """The dice's odds (`gm.dice.Odds.to_json`) and each band's chance: decimals, or with `exact` fractions."""
        data = self.dice.to_json(exact)

        def shown(chance: Fraction) -> str | float:
            return str(chance) if exact else decimal(chance.numerator / chance.denominator)

        data.update(
            {
                "check": self.check.key,
                "notation": self.check.rolled(self.edge).text,
                "edge": self.edge,
                "naturals": bool(self.check.naturals),
                "target": self.target,
                "modifier": self.modifier,
                "bands": [
                    {
                        "label": chance.band.label,
                        "result": chance.band.result,
                        "critical": chance.band.critical,
                        "probability": shown(chance.probability),
                    }
                    for chance in self.bands
                ],
                "void": shown(self.void),
                "certain": None if self.certain is None else self.certain.to_json(),
            }
        )
        return data


def check_odds(
    check: Check,
    target: int | None = None,
    modifier: int = 0,
    distribution: dice.Odds | None = None,
    edge: Edge | None = None,
) -> CheckOdds:
    """Each band's probability for `check` rolled with `edge` against `target` with `modifier` added
    (for an opposed check, the actor's modifier minus the opponent's), naturals applied.

    `distribution` is the odds of the rolled dice under the check's reading, if the caller already
    has them (the editor keeps them between previews, as exact odds of big dice can take a second);
    it is not used for a check with naturals, whose joint odds are cached here instead.
    Raises `gm.rules.checks.CheckRollError` when the check needs a target and has none, or the reverse,
    or when it declares no dice for `edge`.
    """
    expression = check.rolled(edge)
    if check.naturals:
        joined = joint_odds(check, edge)
        distribution = dice.Odds(
            joined.lowest, joined.value_counts(), joined.denominator, joined.exact, joined.samples, check.hit_read
        )
        columns = joined.counts
    else:
        if distribution is None:
            distribution = dice.odds(expression, hit=check.hit_read)
        columns = {0: distribution.counts}
    read_value(check, distribution.lowest, target, modifier)  # refuses a missing or unwanted target up front
    per_band = [0] * len(check.bands)
    void = 0
    if not check.naturals:  # no value moves between bands: sum each run of values that one band holds
        summed = cumulative(distribution)
        for start, stop, index in band_runs(check, distribution.lowest, len(distribution.counts), target, modifier):
            if index is None:
                void += summed[stop] - summed[start]
            else:
                per_band[index] += summed[stop] - summed[start]
        columns = {}
    for mask, counts in columns.items():
        for index, count in enumerate(counts):
            if not count:
                continue
            band = band_for(check, read_value(check, distribution.lowest + index, target, modifier))
            band = settle(check, band, mask).band
            if band is None:
                void += count
            else:
                per_band[check.bands.index(band)] += count
    denominator = distribution.denominator
    chances = tuple(
        BandChance(band, Fraction(count, denominator)) for band, count in zip(check.bands, per_band, strict=True)
    )
    settled = certain(check, target, modifier, edge)
    return CheckOdds(check, target, modifier, distribution, chances, Fraction(void, denominator), settled, edge)


_CUMULATIVE: dict[int, tuple[dice.Odds, tuple[int, ...]]] = {}  # by the odds' id, the odds kept so the id stays theirs
_CUMULATIVE_KEPT = 64


def cumulative(odds: dice.Odds) -> tuple[int, ...]:
    """The running sums of `odds.counts`, from 0 (`summed[stop] - summed[start]` counts a run of values), kept for
    the last odds asked about: the editor draws many checks of one notation, whose odds it keeps."""
    kept = _CUMULATIVE.get(id(odds))
    if kept is not None and kept[0] is odds:
        return kept[1]
    summed = tuple(accumulate(odds.counts, initial=0))
    if len(_CUMULATIVE) >= _CUMULATIVE_KEPT:
        _CUMULATIVE.pop(next(iter(_CUMULATIVE)), None)
    _CUMULATIVE[id(odds)] = (odds, summed)
    return summed


def band_runs(
    check: Check, lowest: int, length: int, target: int | None = None, modifier: int = 0
) -> list[tuple[int, int, int | None]]:
    """The runs `(start, stop, band)` of the indices `range(length)` of a distribution beginning at `lowest` whose
    values one band holds (its index in `check.bands`, None for a gap), in index order.

    The value a band reads moves by one for each step of the roll (down for `under`), so the band can change only
    where a band ends: the work is in the number of bands, not of values (100d1000kh50 has 49,951 values).
    """
    first = read_value(check, lowest, target, modifier)
    step = -1 if check.compare == "under" else 1
    cuts = {0, length}
    for band in check.bands:
        for end in (band.min, None if band.max is None else band.max + 1):
            if end is not None:
                at = (end - first) * step
                cuts.update(cut for cut in (at, at + 1) if 0 < cut < length)
    runs: list[tuple[int, int, int | None]] = []
    ordered = sorted(cuts)
    for start, stop in pairwise(ordered):
        found = band_for(check, first + step * start)
        index = None if found is None else check.bands.index(found)
        if runs and runs[-1][2] == index:
            runs[-1] = (runs[-1][0], stop, index)
        else:
            runs.append((start, stop, index))
    return runs


def joint_odds(check: Check, edge: Edge | None = None) -> Joint:
    """The joint odds of the value `check.rolled(edge)` reads and the naturals its actor dice show."""
    return _joint(
        check.rolled(edge).text,
        tuple(natural.watch for natural in check.naturals),
        check.hit_read,
        watched_terms(check, edge),
    )


@lru_cache(maxsize=256)  # by dice and watches only: a check is asked about every roll
def _joint(expression: str, watches: tuple[tuple[int, int | None], ...], hit: int | None, watched: int) -> Joint:
    return joint(dice.parse(expression), watches, hit, watched)


# Certain outcomes

_VERBS: dict[Result | None, str] = {
    "succeeded": "succeeds",
    "partial": "is a partial success",
    "failed": "fails",
    None: "falls in no band, so it would be void",
}


@dataclass(frozen=True, slots=True)
class Certain:
    """A roll of `check` that can end only one way at `target` with `modifier`: every value the dice can
    read (`rolled`, before the modifier) gives `result`, or no band at all when `result` is None."""

    check: Check
    target: int | None
    modifier: int
    rolled: tuple[int, int]
    result: Result | None
    edge: Edge | None = None

    def every_roll(self, character: str | None = None, *, named: bool = True) -> str:
        """Such as "every roll of Strike a bargain for Tam fails (5d10 successes read 0 to 5)"; `named`
        False leaves out the check's name, for where it is already shown."""
        check = self.check
        of = f" of {check.name}" if named else ""
        who = f" for {character}" if character else ""
        low, high = self.rolled
        text = check.rolled(self.edge).text
        reads = f"{text} successes read" if check.reading == "successes" else f"{text} reads"
        span = f"{reads} {low} to {high}" if low != high else f"{reads} only {low}"
        if self.modifier:
            added = f"{check.modifier} {self.modifier:+d}" if check.modifier else f"modifier {self.modifier:+d}"
            shifted = (low + self.modifier, high + self.modifier)
            span += f", {shifted[0]} to {shifted[1]} with {added}" if low != high else f", {shifted[0]} with {added}"
        if check.naturals:
            span += ", naturals included"
        return f"every roll{of}{who} {_VERBS[self.result]} ({span})"

    def to_json(self) -> dict[str, Any]:
        """`result` (None for a roll that would be void) and the dice's `min` and `max` before the modifier."""
        return {"result": self.result, "min": self.rolled[0], "max": self.rolled[1]}


def certain(check: Check, target: int | None = None, modifier: int = 0, edge: Edge | None = None) -> Certain | None:
    """How a roll of `check` with `edge` at `target` with `modifier` must end, or None when it can go
    either way. With naturals, a roll that only a natural can lift or sink can go either way.

    Raises `gm.rules.checks.CheckRollError` when the check needs a target and has none, or the reverse.
    """
    low, high = check.reachable_for(edge)
    outcomes = set()
    for start, end in check.spans_for(edge):  # values the dice skip (1d6! never reads 6) decide nothing
        ends = read_value(check, start, target, modifier), read_value(check, end, target, modifier)
        first, last = min(ends), max(ends)
        if any(first <= turn < last for turn in _turns(check)):
            return None
        outcomes.add(_outcome(check, first))
    if len(outcomes) > 1:
        return None
    (result,) = outcomes
    if check.naturals and _naturals_can_change(check, target, modifier, edge, result):
        return None
    return Certain(check, target, modifier, (low, high), result, edge)


def _naturals_can_change(
    check: Check, target: int | None, modifier: int, edge: Edge | None, result: Result | None
) -> bool:
    """Whether some roll's naturals give another result than `result` (exactly, where the joint odds
    are exact; otherwise whether any natural could move the band at all, erring toward a roll)."""
    joined = joint_odds(check, edge)
    if not joined.exact:
        return True
    for mask, counts in joined.counts.items():
        if not mask:
            continue
        for index, count in enumerate(counts):
            if count:
                band = band_for(check, read_value(check, joined.lowest + index, target, modifier))
                moved = settle(check, band, mask).band
                if (moved.result if moved is not None else None) != result:
                    return True
    return False


def uncertain_targets(check: Check, modifier: int = 0, edge: Edge | None = None) -> tuple[tuple[int, int], ...]:
    """The targets at which a roll of an over/under `check` with `modifier` can go either way, as
    inclusive stretches, lowest first; none for a check that takes no target."""
    if not check.needs_target:
        return ()
    if check.naturals:
        return _scanned_targets(check, modifier, edge)
    low, high = check.reachable_for(edge)
    stretches = []
    for turn in _turns(check):
        # The values read span [low + m - t, high + m - t] (over) or [t - high - m, t - low - m]
        # (under); the roll can go either way when that span holds both `turn` and `turn + 1`.
        if check.compare == "over":
            first, last = low + modifier - turn, high + modifier - turn - 1
        else:
            first, last = turn + low + modifier + 1, turn + high + modifier
        if first <= last:
            stretches.append((first, last))
    merged: list[tuple[int, int]] = []
    for first, last in sorted(stretches):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


_SCAN_LIMIT = 5000  # targets tried one by one for a check with naturals; beyond, the plain stretches stand


def _scanned_targets(check: Check, modifier: int, edge: Edge | None) -> tuple[tuple[int, int], ...]:
    """`uncertain_targets` for a check with naturals: each target tried, over the stretch where the
    values read can touch a band's edge (beyond it every roll reads the same bands)."""
    low, high = check.reachable_for(edge)
    edges = [end for band in check.bands for end in (band.min, band.max) if end is not None] or [0]
    if check.compare == "over":
        first, last = low + modifier - max(edges) - 1, high + modifier - min(edges) + 1
    else:
        first, last = min(edges) + low + modifier - 1, max(edges) + high + modifier + 1
    if last - first > _SCAN_LIMIT:
        plain = Check(
            check.key,
            check.name,
            check.use,
            check.dice_for(edge) or check.dice,
            check.bands,
            check.reading,
            check.hit,
            check.compare,
            check.modifier,
        )
        return uncertain_targets(plain, modifier)
    stretches: list[tuple[int, int]] = []
    # Beyond the stretch scanned every target reads the same bands, so its ends reach out for ever.
    for target in range(first, last + 1):
        if certain(check, target, modifier, edge) is None:
            if stretches and stretches[-1][1] == target - 1:
                stretches[-1] = (stretches[-1][0], target)
            else:
                stretches.append((target, target))
    if stretches and stretches[0][0] == first:
        stretches[0] = (-FAR, stretches[0][1])
    if stretches and stretches[-1][1] == last:
        stretches[-1] = (stretches[-1][0], FAR)
    return tuple(stretches)


def can_go_either_way(check: Check, modifier: int = 0) -> bool:
    """Whether some roll of `check` with `modifier` can go either way: at any target, for over/under."""
    if check.needs_target:
        return bool(uncertain_targets(check, modifier))
    return certain(check, None, modifier) is None


def nearest_uncertain_target(check: Check, modifier: int, wanted: int) -> int | None:
    """The target closest to `wanted` at which `check` can go either way (the lower on a tie), or
    None when none can (or the check takes no target)."""
    best: int | None = None
    for first, last in uncertain_targets(check, modifier):
        near = min(max(wanted, first), last)
        if best is None or abs(near - wanted) < abs(best - wanted):
            best = near
    return best


def refusal(certainty: Certain, character: str) -> str:
    """The sentence `roll_check` answers a certain roll with: what every roll gives, and what to do."""
    check = certainty.check
    said = certainty.every_roll(character)
    first = "the outcome is certain" if certainty.result is not None else "no roll can settle it"
    if not check.needs_target:
        return f"{said}; {first}, so narrate it without a roll"
    said = f"at target {certainty.target}, {said}"
    targets = uncertain_targets(check, certainty.modifier)
    if not targets:
        return f"{said}; {first} at any target for {character}, so narrate it without a roll"
    return (
        f"{said}; {first}, so narrate it without a roll, or give a target the dice can reach"
        f" ({describe_targets(targets)} for {character})"
    )


def _outcome(check: Check, value: int) -> Result | None:
    band = band_for(check, value)
    return band.result if band is not None else None


def _turns(check: Check) -> tuple[int, ...]:
    """The values v whose outcome differs from v + 1's, lowest first."""
    return _turns_of(check.bands)


@lru_cache(maxsize=1024)  # by bands, which is all they depend on: a check is asked about every round
def _turns_of(bands: tuple[Band, ...]) -> tuple[int, ...]:
    # Only where a band starts or ends can the first band holding a value change.
    def outcome(value: int) -> Result | None:
        band = next((band for band in bands if band.holds(value)), None)
        return band.result if band is not None else None

    edges = {band.min - 1 for band in bands if band.min is not None}
    edges |= {band.max for band in bands if band.max is not None}
    return tuple(sorted(value for value in edges if outcome(value) != outcome(value + 1)))
