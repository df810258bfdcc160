"""Exact odds of dice notation: every reachable value with its probability as a fraction.

Distributions are kept as integer counts of equally likely outcomes over one common denominator (the
product of every die's own denominator, `gm.dice._model`), so the arithmetic is exact and fractions are
only made when asked for. Each dice term is worked out on its own terms:

- dice added up or counted, without keep or drop: one die's distribution (`gm.dice._model`), then all
  such dice of every term together by Miller's recurrence (`gm.dice._sums`);
- keep and drop: the threshold method for uniform dice, ranked faces for the rest (`gm.dice._keep`);

and the parts are then convolved. Before any work the cost is estimated; where exact odds would take
more than about two seconds, a seeded Monte Carlo estimate is returned instead, marked `exact=False`
with its sample count and `error`, a bound that holds for the chance of every stretch of values at once
(the Dvoretzky-Kiefer-Wolfowitz inequality, with confidence 1 - 10**-6).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gm.dice._keep import ranked as _keep_ranked
from gm.dice._keep import ranked_cost, uniform_cost
from gm.dice._keep import uniform as _keep_uniform
from gm.dice._model import DieOdds, die_odds
from gm.dice._sums import convolve, power, power_cost, sparse_form
from gm.dice.parser import parse
from gm.dice.roller import check_successes, random_source, roll
from gm.dice.tree import Constant, Dice, Expression

# Elementary operations on big integers allowed for exact odds: about two seconds on a slow shared core.
EXACT_BUDGET = 20_000_000
ESTIMATE_SAMPLES = 100_000
ESTIMATE_CONFIDENCE = 1e-6  # the chance that an estimate's error passes its stated bound


@dataclass(frozen=True, slots=True)
class Odds:
    """A distribution: `counts[i]` of `denominator` equally likely outcomes give the value `lowest + i`.

    `exact` is False for a Monte Carlo estimate, whose `samples` says how many rolls it counted and
    `error` how far the chance of any stretch of values (a band) may be from the truth.
    With `hit`, the values are numbers of successes rather than totals.
    """

    lowest: int
    counts: tuple[int, ...]
    denominator: int
    exact: bool = True
    samples: int | None = None
    hit: int | None = None

    @property
    def error(self) -> float:
        """0 for exact odds; for an estimate, a bound on the error of the chance of any stretch of values,
        which holds for all of them at once with confidence 1 - 10**-6 (DKW, twice the bound on the CDF)."""
        if self.exact or not self.samples:
            return 0.0
        return error_bound(self.samples)

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
            data["error"] = decimal(self.error)
        if self.hit is not None:
            data["hit"] = self.hit
        return data


DECIMAL_DIGITS = 6  # significant digits of a probability printed as a decimal
LEAST_SHOWN = 1e-9  # values less likely than one in a billion are left out of decimal odds (and counted)


def decimal(number: float) -> float:
    """`number` to `DECIMAL_DIGITS` significant digits, as JSON prints it."""
    return float(f"{number:.{DECIMAL_DIGITS}g}")


def error_bound(samples: int) -> float:
    """The bound on an estimate's error for any stretch of values, from `samples` rolls (see `Odds.error`)."""
    return 2 * math.sqrt(math.log(2 / ESTIMATE_CONFIDENCE) / (2 * samples))


Counts = tuple[int, list[int]]  # (lowest value, ways per value from there)


def odds(
    notation: str | Expression,
    hit: int | None = None,
    *,
    budget: int = EXACT_BUDGET,
    samples: int | None = None,
) -> Odds:
    """The distribution of a notation's total, or of its successes when `hit` is given.

    Exact whenever `estimate_cost` is within `budget`; otherwise a Monte Carlo estimate of `samples`
    seeded rolls (by default `estimate_samples`), marked as such, with its error bound.
    """
    expression = parse(notation) if isinstance(notation, str) else notation
    if hit is not None:
        check_successes(expression, hit)
    plan = _Plan(expression, hit)
    if plan.cost > budget:
        return _estimate(expression, hit, estimate_samples(expression) if samples is None else samples)
    lowest, counts = plan.run()
    start = next(index for index, count in enumerate(counts) if count)
    end = max(index for index, count in enumerate(counts) if count) + 1
    return Odds(lowest + start, tuple(counts[start:end]), plan.denominator, hit=hit)


def estimate_samples(expression: Expression) -> int:
    """How many rolls an estimate counts: `ESTIMATE_SAMPLES`, fewer for many dice, so that an estimate also
    takes about a second (a bound of 0.017 on each band's chance at 100,000 rolls, 0.038 at 20,000)."""
    rolled = sum(term.count for term in expression.dice)
    return max(20_000, min(ESTIMATE_SAMPLES, 2_000_000 // max(1, rolled)))


def estimate_cost(expression: Expression, hit: int | None = None) -> int:
    """About how many operations on big integers exact odds take; compared against the budget first."""
    return _Plan(expression, hit).cost


GROUPED_TERMS = 256  # the most terms L and R of Miller's recurrence may have before groups are worked out apart


class _Plan:
    """How one notation's exact odds are worked out, and what that costs, before any of it is done."""

    def __init__(self, expression: Expression, hit: int | None) -> None:
        self.expression = expression
        self.hit = hit
        self.denominator = 1
        self.cost = 0
        self.groups: list[tuple[list[int], int]] = []  # dice added up (or counted) without keep: Miller
        self.group_lowest = expression.constant
        self.parts: list[Counts] = []  # keep/drop terms, already worked out when planned cheaply
        self.kept: list[tuple[Dice, DieOdds | None]] = []
        for term in expression.dice:
            self.cost += _model_cost(term)
            if self.cost > EXACT_BUDGET * 4:
                return  # far past any budget: the model itself is not worth building
            die = _die(term, hit)
            self.denominator *= die.denominator**term.count
            if term.keep is None or term.kept == term.count:
                counts = die.counts[::-1] if term.negative else die.counts
                lowest = -(die.lowest + die.width - 1) if term.negative else die.lowest
                self.groups.append((counts, term.count))
                self.group_lowest += lowest * term.count
            else:
                self.kept.append((term, die))
                self.cost += _keep_cost(term, die, hit)
        self.cost += self._groups_cost()
        widths = [self._group_width()] + [_kept_width(term, die) for term, die in self.kept]
        running = widths[0]
        for width in sorted(widths[1:]):
            self.cost += running * width
            running += width - 1

    def _group_width(self) -> int:
        return sum(count * (len(counts) - 1) for counts, count in self.groups) + 1

    def _split(self) -> list[list[tuple[list[int], int]]]:
        """The groups in batches Miller's recurrence takes together (few kinds of dice), the rest alone."""
        batch: list[tuple[list[int], int]] = []
        alone: list[list[tuple[list[int], int]]] = []
        size = 1
        for group in self.groups:
            terms = len(sparse_form(group[0])[0]) * 3
            if size * terms <= GROUPED_TERMS:
                batch.append(group)
                size *= terms
            else:
                alone.append([group])
        return ([batch] if batch else []) + alone

    def _groups_cost(self) -> int:
        batches = self._split()
        cost = sum(_batch_cost(batch)[0] for batch in batches)
        widths = sorted(sum(count * (len(counts) - 1) for counts, count in batch) + 1 for batch in batches)
        running = widths[0] if widths else 1
        for width in widths[1:]:
            cost += running * width
            running += width - 1
        return cost

    def run(self) -> Counts:
        pieces = [_batch(batch) for batch in self._split()]
        total = pieces[0] if pieces else [1]
        for piece in pieces[1:]:
            total = convolve(total, piece)
        result: Counts = (self.group_lowest, total)
        for term, die in self.kept:
            assert die is not None
            result = _sum_of(result, _kept_counts(term, die, self.hit))
        return result


ODE_WEIGHT = 3  # a step of Miller's recurrence is interpreted Python; a convolution's is a C loop over a list


def _batch_cost(batch: list[tuple[list[int], int]]) -> tuple[int, bool]:
    """What working out one batch of groups costs, and whether die-by-die convolution is the cheaper way."""
    running, convolving = 1, 0
    for counts, count in batch:
        for _ in range(count):
            convolving += running * len(counts)
            running += len(counts) - 1
    if convolving <= 4096:
        return convolving, True  # too small for the recurrence's set-up to pay
    recurrence = power_cost(batch) * ODE_WEIGHT
    return min(convolving, recurrence), convolving <= recurrence


def _batch(batch: list[tuple[list[int], int]]) -> list[int]:
    if not _batch_cost(batch)[1]:
        return power(batch)
    total = [1]
    for counts, count in batch:
        for _ in range(count):
            total = convolve(total, counts)
    return total


def _sum_of(first: Counts, second: Counts) -> Counts:
    return first[0] + second[0], convolve(first[1], second[1])


def _counting(term: Dice, hit: int | None) -> bool:
    return term.successes is not None or hit is not None


def _die(term: Dice, hit: int | None) -> DieOdds:
    """One die of `term` as the total reads it: its value, or its count (its own successes, or `hit`)."""
    counting = term.successes
    if counting is None and hit is None:
        return die_odds(term)
    worth = counting.value if counting is not None else (lambda face: int(face >= (hit or 0)))
    if term.counts_each_roll:
        return die_odds(term, worth)
    return _mapped(die_odds(term), worth)


def _mapped(die: DieOdds, worth: Callable[[int], int]) -> DieOdds:
    """A die's distribution read through `worth` (a compounded die's sum counted as a success or not)."""
    tally: dict[int, int] = {}
    for index, count in enumerate(die.counts):
        if count:
            value = worth(die.lowest + index)
            tally[value] = tally.get(value, 0) + count
    low, high = min(tally), max(tally)
    return DieOdds(low, [tally.get(value, 0) for value in range(low, high + 1)], die.denominator)


def _ranked_items(term: Dice, hit: int | None) -> list[tuple[int, int]]:
    """What one die can show, lowest total first, as (ways, contribution); neighbours that contribute
    alike are one item (which of two tied dice is kept changes no sum)."""
    die = die_odds(term)
    counting = term.successes
    items: list[tuple[int, int]] = []
    for index, count in enumerate(die.counts):
        if not count:
            continue
        total = die.lowest + index
        if counting is not None:
            contribution = counting.value(total)
        elif hit is not None:
            contribution = int(total >= hit)
        else:
            contribution = total
        if items and items[-1][1] == contribution and contribution != total:
            items[-1] = (items[-1][0] + count, contribution)
        else:
            items.append((count, contribution))
    return items if term.keep is None or term.keep.highest else items[::-1]


def _kept_counts(term: Dice, die: DieOdds, hit: int | None) -> Counts:
    """The counts of one keep/drop term's value, its sign applied."""
    keep = term.keep
    assert keep is not None
    if die.uniform and not _counting(term, hit):
        sums = _keep_uniform(term.count, die.width, term.kept)
        if die.counts[0] != 1:  # equal ways other than one each (a die padded to its cap): every die's share
            sums = [ways * die.counts[0] ** term.count for ways in sums]
        if not keep.highest:
            sums = sums[::-1]  # the lowest of u are the highest of (width - 1 - u), mirrored back
        result: Counts = (term.kept * die.lowest, sums)
    else:
        result = _keep_ranked(_ranked_items(term, hit), term.count, term.kept)
    return _negate(result) if term.negative else result


def _kept_width(term: Dice, die: DieOdds | None) -> int:
    assert die is not None
    return term.kept * (die.width - 1) + 1


def _keep_cost(term: Dice, die: DieOdds, hit: int | None) -> int:
    if die.uniform and not _counting(term, hit):
        return uniform_cost(term.count, die.width, term.kept)
    items = sum(1 for count in die.counts if count)
    spread = die.width if not _counting(term, hit) else 3
    return ranked_cost(items, spread, term.kept)


def _model_cost(term: Dice) -> int:
    """About what building one die's distribution costs: a pass over the chain for each explosion."""
    if term.explode is None:
        return term.sides
    return term.explode.cap * term.explode.cap * term.sides // 2 + term.sides


def _negate(counts: Counts) -> Counts:
    lowest, values = counts
    return -(lowest + len(values) - 1), values[::-1]


def _estimate(expression: Expression, hit: int | None, samples: int) -> Odds:
    """A Monte Carlo estimate from `samples` rolls with a fixed seed, so the same question gets the same answer."""
    rng = random.Random(0)
    tally: dict[int, int] = {}
    if expression.plain:
        for _ in range(samples):
            value = _sample(expression, hit, rng)
            tally[value] = tally.get(value, 0) + 1
    else:
        source = random_source(rng)
        for _ in range(samples):
            rolled = roll(expression, source, hit=hit)
            value = rolled.total if hit is None else (rolled.successes or 0)
            tally[value] = tally.get(value, 0) + 1
    lowest, highest = min(tally), max(tally)
    counts = tuple(tally.get(value, 0) for value in range(lowest, highest + 1))
    return Odds(lowest, counts, samples, exact=False, samples=samples, hit=hit)


def _sample(expression: Expression, hit: int | None, rng: random.Random) -> int:
    """One total (or count of successes) of plain dice; faster than `roll` because nothing is itemised."""
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
