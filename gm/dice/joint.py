"""Exact odds of a notation's value together with which natural faces its kept dice showed.

A world's check may act on natural faces ("a kept d20 showing 20"). Its odds then need, for every
value, the chance of each combination of such faces having been shown: a `Joint` distribution whose
counts are kept per *mask*, bit i set when face watch i showed on some kept die. Watches look only
at the first `watched_terms` dice terms (an opposed check watches the actor's dice, not the
opponent's).

Per dice term: a term no watch can see is counted with `gm.dice.odds` as usual; a term without
keep/drop is built one die at a time over (value, mask) states; a keep/drop term is enumerated as
sorted multisets of faces with their multinomial weights. Terms are then combined by convolution,
masks joined with `|`. Past the budget a seeded Monte Carlo estimate is returned, marked as such.
Pure: no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import combinations_with_replacement
from math import factorial, prod

from gm.dice._chains import kept_dice
from gm.dice._model import DieOdds, die_odds, roll_weights
from gm.dice.odds import EXACT_BUDGET, estimate_samples, odds
from gm.dice.result import chains_of, kept_flags
from gm.dice.roller import random_source, roll
from gm.dice.tree import Dice, Expression

Watch = tuple[int, int | None]  # (face, sides or None for any die that can show the face)
Span = tuple[int, list[int]]  # (lowest value, ways per value from there)


@dataclass(frozen=True, slots=True)
class Joint:
    """`counts[mask][i]` of `denominator` equally likely outcomes give value `lowest + i` with exactly
    the watches in `mask` shown. Every mask's list has the same length. `exact` is False for an estimate."""

    lowest: int
    counts: dict[int, tuple[int, ...]]
    denominator: int
    exact: bool = True
    samples: int | None = None

    def value_counts(self) -> tuple[int, ...]:
        """The counts of each value whatever the faces: the plain distribution."""
        columns = list(self.counts.values())
        return tuple(sum(column[i] for column in columns) for i in range(len(columns[0]))) if columns else ()


def shown(term: Dice, watch: Watch) -> bool:
    """Whether `watch` can look at this term's dice at all. A natural reads a die's first roll as it
    stands (after rerolls, before explosions add to it); Fudge dice have no numbered faces to watch."""
    face, sides = watch
    if term.fudge or (sides is not None and sides != term.sides):
        return False
    return face <= term.sides if term.plain else face in term.settled_faces()


def mask_of(
    expression: Expression, faces: Sequence[Sequence[int]], watches: Sequence[Watch], watched_terms: int
) -> int:
    """The mask of watches one roll's faces show on kept dice (the same rule the odds count by)."""
    mask = 0
    for index, (term, rolled) in enumerate(zip(expression.dice, faces)):
        if index >= watched_terms:
            break
        if term.plain:
            kept = [face for face, keep in zip(rolled, kept_flags(term, tuple(rolled))) if keep]
        else:
            chains = chains_of(term, tuple(rolled))
            kept = [chain[0][-1] for chain, keep in zip(chains, kept_dice(term, chains)) if keep]
        for bit, watch in enumerate(watches):
            if shown(term, watch) and watch[0] in kept:
                mask |= 1 << bit
    return mask


def joint(
    expression: Expression,
    watches: Sequence[Watch],
    hit: int | None = None,
    watched_terms: int | None = None,
    *,
    budget: int = EXACT_BUDGET,
    samples: int | None = None,
) -> Joint:
    """The joint distribution of the value (total, or successes with `hit`) and the watches shown."""
    limit = len(expression.dice) if watched_terms is None else watched_terms
    samples = estimate_samples(expression) if samples is None else samples
    spent = 0
    result: dict[int, Span] = {0: (expression.constant, [1])}
    for index, term in enumerate(expression.dice):
        seen = [watch for watch in watches if index < limit and shown(term, watch)]
        cost = _cost(term, bool(seen), len(watches))
        spent += cost
        if spent > budget:
            return _estimate(expression, watches, hit, limit, samples)
        if seen and not term.plain and term.keep is not None and term.kept < term.count:
            return _estimate(expression, watches, hit, limit, samples)  # ranked chains with watches: sampled
        if not seen:
            alone = odds(term.text, hit, budget=budget)
            if not alone.exact:
                return _estimate(expression, watches, hit, limit, samples)
            part: dict[int, Span] = {0: _signed(term, (alone.lowest, list(alone.counts)))}
        elif term.plain:
            part = _term_joint(term, watches, hit)
        else:
            part = _chained_joint(term, watches, hit)
        result = _combine(result, part)
    low = min(span[0] for span in result.values())
    high = max(span[0] + len(span[1]) - 1 for span in result.values())
    counts = {mask: tuple(_aligned(span, low, high)) for mask, span in sorted(result.items())}
    return Joint(low, counts, prod(die_odds(term).denominator ** term.count for term in expression.dice))


def _cost(term: Dice, watched: bool, watches: int) -> int:
    if not watched:
        return term.count * term.sides
    if not term.plain:
        width = term.count * (term.die_high - term.die_low + 1)
        return term.count * width * (term.die_high - term.die_low + 1) * (1 << watches)
    width = term.count * term.sides
    if term.keep is None or term.kept == term.count:
        return term.count * term.sides * width * (1 << watches)
    multisets = factorial(term.count + term.sides - 1) // (factorial(term.count) * factorial(term.sides - 1))
    return multisets * (term.count + 1)


def _value(face: int, hit: int | None) -> int:
    return face if hit is None else int(face >= hit)


def _bits(term: Dice, watches: Sequence[Watch], face: int) -> int:
    return sum(1 << bit for bit, watch in enumerate(watches) if watch[0] == face and shown(term, watch))


def _term_joint(term: Dice, watches: Sequence[Watch], hit: int | None) -> dict[int, Span]:
    """One watched term's (value, mask) counts, positive; the sign is applied at the end."""
    table: dict[tuple[int, int], int] = {}
    if term.keep is None or term.kept == term.count:
        states: dict[tuple[int, int], int] = {(0, 0): 1}
        for _ in range(term.count):
            following: dict[tuple[int, int], int] = {}
            for (value, mask), ways in states.items():
                for face in range(1, term.sides + 1):
                    key = (value + _value(face, hit), mask | _bits(term, watches, face))
                    following[key] = following.get(key, 0) + ways
            states = following
        table = states
    else:
        whole = factorial(term.count)
        for ascending in combinations_with_replacement(range(1, term.sides + 1), term.count):
            ways = whole // prod(factorial(ascending.count(face)) for face in set(ascending))
            kept = ascending[term.kept_slice]
            mask = 0
            for face in set(kept):
                mask |= _bits(term, watches, face)
            key = (sum(_value(face, hit) for face in kept), mask)
            table[key] = table.get(key, 0) + ways
    spans: dict[int, Span] = {}
    for mask in {mask for _, mask in table}:
        values = [value for value, m in table if m == mask]
        low, high = min(values), max(values)
        spans[mask] = _signed(term, (low, [table.get((value, mask), 0) for value in range(low, high + 1)]))
    return spans


def _chained_joint(term: Dice, watches: Sequence[Watch], hit: int | None) -> dict[int, Span]:
    """A rerolled, exploding or counted term without keep: each die's (value, mask) from its first roll's
    standing face and the rest of its chain, then every die together."""
    weights, denominator = roll_weights(term)
    explode = term.explode
    rest: DieOdds | None = None
    if explode is not None and explode.cap:
        shorter = replace(term, explode=replace(explode, cap=explode.cap - 1))
        rest = die_odds(shorter, _per_roll(term, hit))
    padding = denominator**explode.cap if explode is not None else 1
    die: dict[tuple[int, int], int] = {}
    for face, ways in weights.items():
        bits = _bits(term, watches, face)
        per_roll = _per_roll(term, hit)
        first = per_roll(face) if per_roll is not None else term.face_value(face)
        if rest is not None and explode is not None and face in explode.faces:
            for index, count in enumerate(rest.counts):
                if count:
                    key = (first + rest.lowest + index, bits)
                    die[key] = die.get(key, 0) + ways * count
        else:
            die[(first, bits)] = die.get((first, bits), 0) + ways * padding
    counting: Callable[[int], int] | None = term.successes.value if term.successes is not None else None
    if hit is not None:
        counting = lambda total: int(total >= hit)  # noqa: E731
    if counting is not None and not term.counts_each_roll:
        mapped: dict[tuple[int, int], int] = {}
        for (total, bits), ways in die.items():
            key = (counting(total), bits)
            mapped[key] = mapped.get(key, 0) + ways
        die = mapped
    table: dict[tuple[int, int], int] = {(0, 0): 1}
    for _ in range(term.count):
        following: dict[tuple[int, int], int] = {}
        for (value, mask), ways in table.items():
            for (adds, bits), more in die.items():
                key = (value + adds, mask | bits)
                following[key] = following.get(key, 0) + ways * more
        table = following
    spans: dict[int, Span] = {}
    for mask in {mask for _, mask in table}:
        values = [value for value, m in table if m == mask]
        low, high = min(values), max(values)
        spans[mask] = _signed(term, (low, [table.get((value, mask), 0) for value in range(low, high + 1)]))
    return spans


def _per_roll(term: Dice, hit: int | None) -> Callable[[int], int] | None:
    """What each roll of an exploding term counts, when it counts roll by roll; None when it adds faces."""
    if not term.counts_each_roll:
        return None
    if term.successes is not None:
        return term.successes.value
    if hit is not None:
        return lambda face: int(face >= hit)
    return None


def _signed(term: Dice, span: Span) -> Span:
    if not term.negative:
        return span
    low, values = span
    return -(low + len(values) - 1), values[::-1]


def _combine(first: dict[int, Span], second: dict[int, Span]) -> dict[int, Span]:
    """The (value, mask) counts of the sum of two independent parts; masks join with `|`."""
    result: dict[int, dict[int, int]] = {}
    for mask_a, (low_a, a) in first.items():
        for mask_b, (low_b, b) in second.items():
            into = result.setdefault(mask_a | mask_b, {})
            for i, x in enumerate(a):
                if x:
                    for j, y in enumerate(b):
                        if y:
                            into[low_a + low_b + i + j] = into.get(low_a + low_b + i + j, 0) + x * y
    combined: dict[int, Span] = {}
    for mask, table in result.items():
        low, high = min(table), max(table)
        combined[mask] = (low, [table.get(value, 0) for value in range(low, high + 1)])
    return combined


def _aligned(span: Span, low: int, high: int) -> list[int]:
    start, values = span
    return [0] * (start - low) + values + [0] * (high - (start + len(values) - 1))


def _estimate(expression: Expression, watches: Sequence[Watch], hit: int | None, limit: int, samples: int) -> Joint:
    """A seeded Monte Carlo estimate, so the same question gets the same answer."""
    rng = random.Random(0)
    source = random_source(rng)
    tally: dict[tuple[int, int], int] = {}
    for _ in range(samples):
        rolled = roll(expression, source, hit=hit)
        value = rolled.total if hit is None else (rolled.successes or 0)
        key = (value, mask_of(expression, rolled.faces, watches, limit))
        tally[key] = tally.get(key, 0) + 1
    low = min(value for value, _ in tally)
    high = max(value for value, _ in tally)
    counts = {
        mask: tuple(tally.get((value, mask), 0) for value in range(low, high + 1))
        for mask in sorted({mask for _, mask in tally})
    }
    return Joint(low, counts, samples, exact=False, samples=samples)
