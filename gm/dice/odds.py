"""Exact odds of dice notation: every reachable value with its probability as a fraction.

Distributions are kept as integer counts of equally likely outcomes over one common denominator
(the product of sides ** count of every dice term), so the arithmetic is exact and fractions are
only made when asked for. Sums use a sliding window over prefix sums (one pass per die); keep and
drop use an iterative dynamic programme over face values; successes use binomial counts.

Before any work the cost is estimated; where exact odds would take more than a few seconds, a
seeded Monte Carlo estimate is returned instead, marked `exact=False` with its sample count.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate, repeat
from math import comb
from operator import add, mul, sub
from typing import Any

from gm.dice.parser import parse
from gm.dice.roller import check_successes
from gm.dice.tree import Constant, Dice, Expression

# Elementary list operations allowed for exact odds: about two seconds on a slow shared core.
EXACT_BUDGET = 40_000_000
ESTIMATE_SAMPLES = 100_000


@dataclass(frozen=True, slots=True)
class Odds:
    """A distribution: `counts[i]` of `denominator` equally likely outcomes give the value `lowest + i`.

    `exact` is False for a Monte Carlo estimate, whose `samples` says how many rolls it counted.
    With `hit`, the values are numbers of successes rather than totals.
    """

    lowest: int
    counts: tuple[int, ...]
    denominator: int
    exact: bool = True
    samples: int | None = None
    hit: int | None = None

    @property
    def highest(self) -> int:
        return self.lowest + len(self.counts) - 1

    def probability(self, value: int) -> Fraction:
        """The chance of exactly `value`."""
        index = value - self.lowest
        if 0 <= index < len(self.counts):
            return Fraction(self.counts[index], self.denominator)
        return Fraction(0)

    def chance(self, low: int | None = None, high: int | None = None) -> Fraction:
        """The chance of a value from `low` to `high` inclusive; None leaves that end open."""
        start = 0 if low is None else max(0, low - self.lowest)
        stop = len(self.counts) if high is None else max(0, min(len(self.counts), high - self.lowest + 1))
        return Fraction(sum(self.counts[start:stop]), self.denominator) if start < stop else Fraction(0)

    def items(self) -> Iterator[tuple[int, Fraction]]:
        """Each value that can occur, lowest first, with its probability."""
        for index, count in enumerate(self.counts):
            if count:
                yield self.lowest + index, Fraction(count, self.denominator)

    @property
    def mean(self) -> Fraction:
        weighted = sum(count * index for index, count in enumerate(self.counts))
        return self.lowest + Fraction(weighted, self.denominator)

    def shifted(self, offset: int) -> Odds:
        """The same distribution with every value moved by `offset` (a modifier)."""
        return Odds(self.lowest + offset, self.counts, self.denominator, self.exact, self.samples, self.hit)

    def to_json(self, exact: bool = False) -> dict[str, Any]:
        """`min`, `max`, `mean` and `distribution`; estimates say so (`exact: false`, `samples`).

        By default probabilities are decimals to `DECIMAL_DIGITS` significant digits, and values less
        likely than `LEAST_SHOWN` are left out (`omitted` counts them and their total chance), so a wide
        distribution such as 100d1000's stays small. With `exact`, every value is listed with its
        probability as an exact fraction in a string, and the mean too.
        """
        data: dict[str, Any] = {"min": self.lowest, "max": self.highest}
        if exact:
            data["mean"] = str(self.mean)
            data["exact"] = self.exact
            data["distribution"] = {str(value): str(chance) for value, chance in self.items()}
        else:
            weighted = sum(count * index for index, count in enumerate(self.counts))
            data["mean"] = decimal(self.lowest + weighted / self.denominator)
            data["exact"] = self.exact
            shown: dict[str, float] = {}
            left_out, left_out_ways = 0, 0
            for index, count in enumerate(self.counts):
                if not count:
                    continue
                chance = count / self.denominator  # true division of ints: correctly rounded, no Fraction
                if chance >= LEAST_SHOWN:
                    shown[str(self.lowest + index)] = decimal(chance)
                else:
                    left_out, left_out_ways = left_out + 1, left_out_ways + count
            data["distribution"] = shown
            if left_out:
                data["omitted"] = {"values": left_out, "probability": decimal(left_out_ways / self.denominator)}
        if not self.exact:
            data["samples"] = self.samples
        if self.hit is not None:
            data["hit"] = self.hit
        return data


DECIMAL_DIGITS = 6  # significant digits of a probability printed as a decimal
LEAST_SHOWN = 1e-9  # values less likely than one in a billion are left out of decimal odds (and counted)


def decimal(number: float) -> float:
    """`number` to `DECIMAL_DIGITS` significant digits, as JSON prints it."""
    return float(f"{number:.{DECIMAL_DIGITS}g}")


Counts = tuple[int, list[int]]  # (lowest value, ways per value from there)


def odds(
    notation: str | Expression,
    hit: int | None = None,
    *,
    budget: int = EXACT_BUDGET,
    samples: int = ESTIMATE_SAMPLES,
) -> Odds:
    """The distribution of a notation's total, or of its successes when `hit` is given.

    Exact whenever `estimate_cost` is within `budget`; otherwise a Monte Carlo estimate of
    `samples` seeded rolls, marked as such.
    """
    expression = parse(notation) if isinstance(notation, str) else notation
    if hit is not None:
        check_successes(expression, hit)
    if estimate_cost(expression, hit) > budget:
        return _estimate(expression, hit, samples)
    denominator = 1
    for dice in expression.dice:
        denominator *= dice.sides**dice.count
    lowest, counts = _successes(expression, hit) if hit is not None else _totals(expression)
    start = next(index for index, count in enumerate(counts) if count)
    end = max(index for index, count in enumerate(counts) if count) + 1
    return Odds(lowest + start, tuple(counts[start:end]), denominator, hit=hit)


def estimate_cost(expression: Expression, hit: int | None = None) -> int:
    """About how many list operations exact odds take; compared against the budget before starting."""
    if hit is not None:
        return sum(dice.count * dice.count for dice in expression.dice)
    cost, width = 0, 1
    for dice in expression.dice:
        if dice.keep and dice.kept < dice.count:
            k, m = dice.kept, dice.sides
            cost += m * m * sum(j * (k - j + 1) for j in range(1, k)) // 2 + m * k
            term_width = k * (m - 1) + 1
            cost += width * term_width
            width += term_width - 1
    for dice in expression.dice:
        if not (dice.keep and dice.kept < dice.count):
            for _ in range(dice.count):
                cost += width + dice.sides
                width += dice.sides - 1
    return cost


def _totals(expression: Expression) -> Counts:
    """Exact counts of the total: keep/drop terms first, then plain dice slid over the result."""
    lowest, counts = 0, [1]
    for term in expression.terms:
        if isinstance(term, Constant):
            lowest += term.signed
        elif term.keep and term.kept < term.count:
            kept = _keep_counts(term.count, term.sides, term.kept, term.keep.highest)
            lowest, counts = _convolve((lowest, counts), _negate(kept) if term.negative else kept)
    for term in expression.dice:
        if not (term.keep and term.kept < term.count):
            for _ in range(term.count):
                counts = _add_uniform(counts, term.sides)
                # Adding dM moves the lowest value up by 1; subtracting it moves it down by M.
                lowest += -term.sides if term.negative else 1
    return lowest, counts


def _add_uniform(counts: list[int], sides: int) -> list[int]:
    """Counts after adding one die: each new count is a window sum of `sides` old ones (prefix sums)."""
    prefix = list(accumulate(counts, initial=0))
    padded = [0] * (sides - 1) + prefix + [prefix[-1]] * (sides - 1)
    width = len(counts) + sides - 1
    return list(map(sub, padded[sides : sides + width], padded[:width]))


def _convolve(first: Counts, second: Counts) -> Counts:
    """The counts of the sum of two independent values."""
    (low_a, a), (low_b, b) = first, second
    if len(a) > len(b):
        a, b = b, a
    result = [0] * (len(a) + len(b) - 1)
    for offset, weight in enumerate(a):
        if weight:
            window = result[offset : offset + len(b)]
            result[offset : offset + len(b)] = map(add, window, map(mul, b, repeat(weight)))
    return low_a + low_b, result


def _negate(counts: Counts) -> Counts:
    lowest, values = counts
    return -(lowest + len(values) - 1), values[::-1]


def _keep_counts(dice: int, sides: int, kept: int, highest: bool) -> Counts:
    """Counts of the sum of the `kept` highest (or lowest) of `dice` dice with `sides` sides.

    Faces are visited from the top down. A state is how many dice (`assigned`, fewer than `kept`)
    already show a higher face, holding for each kept sum the number of ways, multinomial factor
    included. At face v, c more dice show v; once `kept` dice are placed, the rest must show less
    than v, which closes the state. The lowest dice are the highest of the mirrored faces.
    """
    finished = [0] * (kept * sides + 1)
    states: list[tuple[int, list[int]] | None] = [(0, [1])] + [None] * (kept - 1)
    for face in range(sides, 0, -1):
        following: list[tuple[int, list[int]] | None] = [None] * kept
        for assigned, state in enumerate(states):
            if state is None:
                continue
            low, ways = state
            rest = dice - assigned
            for showing in range(kept - assigned):
                following[assigned + showing] = _add_scaled(
                    following[assigned + showing], low + showing * face, ways, comb(rest, showing)
                )
            needed = kept - assigned
            closing = face**rest - sum(comb(rest, c) * (face - 1) ** (rest - c) for c in range(needed))
            if closing:
                start = low + needed * face
                window = finished[start : start + len(ways)]
                finished[start : start + len(ways)] = map(add, window, map(mul, ways, repeat(closing)))
        states = following
    if highest:
        return 0, finished
    # Lowest dice of faces v are highest dice of faces sides + 1 - v: mirror the sums.
    return 0, _mirror(finished, kept * (sides + 1))


def _mirror(counts: list[int], total: int) -> list[int]:
    """Counts indexed by value s, re-indexed by `total - s` (values start at 0 in both)."""
    mirrored = [0] * len(counts)
    for value, ways in enumerate(counts):
        if ways:
            mirrored[total - value] = ways
    return mirrored


def _add_scaled(target: tuple[int, list[int]] | None, low: int, ways: list[int], weight: int) -> tuple[int, list[int]]:
    """`target + weight * ways` where `ways` starts at value `low`; spans grow as needed."""
    scaled = list(map(mul, ways, repeat(weight)))
    if target is None:
        return low, scaled
    target_low, values = target
    new_low = min(low, target_low)
    new_high = max(low + len(ways), target_low + len(values))
    merged = [0] * (new_high - new_low)
    merged[target_low - new_low : target_low - new_low + len(values)] = values
    start = low - new_low
    merged[start : start + len(scaled)] = map(add, merged[start : start + len(scaled)], scaled)
    return new_low, merged


def _successes(expression: Expression, hit: int) -> Counts:
    """Exact counts of kept dice showing `hit` or more, term by term."""
    result: Counts = (0, [1])
    for dice in expression.dice:
        hitting = max(0, dice.sides - hit + 1)
        missing = dice.sides - hitting
        counts = [0] * (dice.kept + 1)
        for hits in range(dice.count + 1):
            ways = comb(dice.count, hits) * hitting**hits * missing ** (dice.count - hits)
            # The highest kept dice hold every hit up to `kept`; the lowest hold those beyond the dropped.
            if dice.keep is None or dice.keep.highest:
                counted = min(hits, dice.kept)
            else:
                counted = max(0, hits - (dice.count - dice.kept))
            counts[counted] += ways
        result = _convolve(result, (0, counts))
    return result


def _estimate(expression: Expression, hit: int | None, samples: int) -> Odds:
    """A Monte Carlo estimate from `samples` rolls with a fixed seed, so the same question gets the same answer."""
    rng = random.Random(0)
    tally: dict[int, int] = {}
    for _ in range(samples):
        value = _sample(expression, hit, rng)
        tally[value] = tally.get(value, 0) + 1
    lowest, highest = min(tally), max(tally)
    counts = tuple(tally.get(value, 0) for value in range(lowest, highest + 1))
    return Odds(lowest, counts, samples, exact=False, samples=samples, hit=hit)


def _sample(expression: Expression, hit: int | None, rng: random.Random) -> int:
    """One total (or count of successes); faster than `roll` because nothing is itemised."""
    value = 0
    for term in expression.terms:
        if isinstance(term, Constant):
            value += term.signed
            continue
        faces = sorted(rng.choices(range(1, term.sides + 1), k=term.count))
        kept = _kept_faces(term, faces)
        part = sum(kept) if hit is None else sum(1 for face in kept if face >= hit)
        value += -part if term.negative else part
    return value


def _kept_faces(term: Dice, ascending: list[int]) -> list[int]:
    if term.keep is None:
        return ascending
    return ascending[-term.kept :] if term.keep.highest else ascending[: term.kept]
