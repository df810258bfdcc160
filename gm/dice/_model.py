"""One die of a dice term as a distribution: what it can add (or count) and how many ways each.

Counts are integers over the die's own denominator: `sides` for a plain die, `sides - rerolled` for a
die rerolled until a spared face shows (every spared face is equally likely), `sides ** 2` for a die
rerolled once, and the roll's denominator to the power `cap + 1` for an exploding die, whose chain is
padded to `cap + 1` rolls. An exploding die's chain is built by Horner's rule from the stopping and the
exploding faces; a run of exploding faces of equal weight is added as one window (prefix sums), so
`d1000!>=500` costs a pass per explosion rather than one per face. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from operator import add, mul, sub

from gm.dice.tree import Dice

Span = tuple[int, list[int]]  # (lowest value, ways for each value from there)


@dataclass(frozen=True, slots=True)
class DieOdds:
    """One die: `counts[i]` of `denominator` ways give `lowest + i`."""

    lowest: int
    counts: list[int]
    denominator: int

    @property
    def width(self) -> int:
        return len(self.counts)

    @property
    def uniform(self) -> bool:
        """Every value from lowest to highest equally likely (a plain die, a Fudge die, `r1`)."""
        return all(count == self.counts[0] for count in self.counts)


def roll_weights(term: Dice) -> tuple[dict[int, int], int]:
    """The faces one roll can stand on, with their ways, and the roll's denominator (rerolls applied)."""
    sides = term.sides
    reroll = term.reroll
    if reroll is None:
        return dict.fromkeys(range(1, sides + 1), 1), sides
    rerolled = reroll.faces.size  # the parser keeps a reroll's faces within the die's
    if not reroll.once:
        return {face: 1 for face in range(1, sides + 1) if face not in reroll.faces}, sides - rerolled
    # Once: a spared face first (sides ways of the second roll pad it), or a rerolled one then any face.
    return {
        face: (rerolled if face in reroll.faces else sides + rerolled) for face in range(1, sides + 1)
    }, sides * sides


def die_odds(term: Dice, worth: Callable[[int], int] | None = None) -> DieOdds:
    """One die's distribution of the sum of `worth` over its counted rolls (by default each face's value).

    Each roll of an exploding die counts, so `worth` is summed along the chain; a caller that counts a
    compounded die's sum maps this distribution itself."""
    if worth is None and term.plain:
        return DieOdds(1, [1] * term.sides, term.sides)
    value = term.face_value if worth is None else worth
    weights, denominator = roll_weights(term)
    whole = _span(weights, value)
    explode = term.explode
    if explode is None:
        return DieOdds(whole[0], whole[1], denominator)
    stopping = {face: ways for face, ways in weights.items() if face not in explode.faces}
    going = {face: ways for face, ways in weights.items() if face in explode.faces}
    stop_span = _span(stopping, value)
    runs = _runs(going, value)
    chain = whole  # at the cap any face stands
    scale = 1
    for _ in range(explode.cap):
        scale *= denominator
        grown = _shift_runs(chain, runs)
        chain = _merge(grown, (stop_span[0], [ways * scale for ways in stop_span[1]]))
    return DieOdds(chain[0], chain[1], denominator ** (explode.cap + 1))


def _span(weights: dict[int, int], value: Callable[[int], int]) -> Span:
    """Ways for each value of one roll, as a dense span."""
    if not weights:
        return 0, []
    values = {value(face) for face in weights}
    low, high = min(values), max(values)
    counts = [0] * (high - low + 1)
    for face, ways in weights.items():
        counts[value(face) - low] += ways
    return low, counts


def _runs(going: dict[int, int], value: Callable[[int], int]) -> list[tuple[int, int, int]]:
    """The exploding faces as runs (first value, last value, ways each) of neighbouring values with equal ways."""
    by_value: dict[int, int] = {}
    for face, ways in going.items():
        by_value[value(face)] = by_value.get(value(face), 0) + ways
    runs: list[tuple[int, int, int]] = []
    for worth in sorted(by_value):
        ways = by_value[worth]
        if runs and runs[-1][1] == worth - 1 and runs[-1][2] == ways:
            runs[-1] = (runs[-1][0], worth, ways)
        else:
            runs.append((worth, worth, ways))
    return runs


def _shift_runs(chain: Span, runs: list[tuple[int, int, int]]) -> Span:
    """`chain` convolved with the exploding roll: each run is a window of equal ways, added by prefix sums."""
    result: Span = (0, [])
    low, counts = chain
    for first, last, ways in runs:
        length = last - first + 1
        if length == 1:
            windowed = counts
        else:
            prefix = list(accumulate(counts, initial=0))
            padded = [0] * (length - 1) + prefix + [prefix[-1]] * (length - 1)
            size = len(counts) + length - 1
            windowed = list(map(sub, padded[length : length + size], padded[:size]))
        if ways != 1:
            windowed = [count * ways for count in windowed]
        result = _merge(result, (low + first, windowed))
    return result


def _merge(first: Span, second: Span) -> Span:
    """The sum of two spans of ways, value by value."""
    if not first[1]:
        return second
    if not second[1]:
        return first
    low = min(first[0], second[0])
    high = max(first[0] + len(first[1]), second[0] + len(second[1]))
    merged = [0] * (high - low)
    for start, counts in (first, second):
        offset = start - low
        merged[offset : offset + len(counts)] = map(add, merged[offset : offset + len(counts)], counts)
    return low, merged


def scaled(counts: list[int], factor: int) -> list[int]:
    return counts if factor == 1 else list(map(mul, counts, [factor] * len(counts)))
