"""Exact counts of the sum of the highest `kept` of `dice` independent dice.

Uniform dice (every value from 0 to `values - 1` equally likely: plain dice, Fudge dice, `r1`) use the
threshold method. Condition on t, the lowest kept value: `above` dice (fewer than `kept`) show more
than t, at least `kept - above` show t, the rest less. The kept sum is kept * t plus the excess of the
dice above t, each uniform from 1 to L = values - 1 - t, so its generating function is

    sum over t and above of  w(t, above) * x ** (kept * t + above) * (1 - x ** L) ** above / (1 - x) ** above

with w the ways to place the other dice. Grouping the terms by `above` gives sparse polynomials S_a
(built with strided slices, one per t-independent coefficient), and Horner's rule in 1 / (1 - x)
turns the sum into `kept - 1` prefix sums (`itertools.accumulate`), so 100d1000kh50 costs a few
million additions of big integers rather than billions. The weights w(t, above) for every t come
from one recurrence in `above`.

Other dice (exploding, rerolled once, counted) use `ranked`: faces visited from the highest rank
down, each state holding how many dice already rank higher, as in a sorted multiset of faces with
its multinomial weight. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, repeat
from math import comb
from operator import add, mul, sub

Span = tuple[int, list[int]]


def uniform(dice: int, values: int, kept: int) -> list[int]:
    """Ways of each sum of the `kept` highest of `dice` dice uniform on 0..values-1, from the sum 0 up."""
    width = kept * (values - 1) + 1
    size = width + kept
    ts = range(values)
    # w(t, a) / C(dice, a) = P_a(t) = sum over b >= kept - a of C(dice - a, b) * t ** (dice - a - b):
    # P_(kept-1)(t) = (t + 1) ** N - t ** N with N = dice - kept + 1, and
    # P_a = (1 + t) * P_(a+1) - C(dice - a - 1, kept - a - 1) * t ** (dice - kept + 1).
    top = dice - kept + 1
    powers = [t**top for t in ts]
    column = [(t + 1) ** top - power for t, power in zip(ts, powers)]
    # Horner's rule: total = S_(kept-1); then total = prefix sums of total, plus S_a, for a from kept-2 to 0.
    # S_a is added straight into the running total, slice by slice, rather than built apart.
    total = [0] * size
    for above in range(kept - 1, -1, -1):
        if above < kept - 1:
            factor = comb(dice - above - 1, kept - above - 1)
            column = list(map(sub, map(mul, column, range(1, values + 1)), map(mul, powers, repeat(factor))))
            total = list(accumulate(total))
        weights = list(map(mul, column, repeat(comb(dice, above))))
        for i in range(above + 1):
            coefficient = comb(above, i) * (-1 if i & 1 else 1)
            start = above + i * (values - 1)
            step = kept - i
            stop = start + step * values
            part = weights if coefficient == 1 else list(map(mul, weights, repeat(coefficient)))
            total[start:stop:step] = map(add, total[start:stop:step], part)
    return total[:width]


def uniform_cost(dice: int, values: int, kept: int) -> int:
    """About how many additions `uniform` takes."""
    return kept * kept * values + kept * kept * values // 2


def ranked(items: Sequence[tuple[int, int]], dice: int, kept: int) -> Span:
    """The ways of each sum of the contributions of the `kept` highest-ranked of `dice` dice.

    `items` are what one die can show, lowest rank first, as (ways, contribution); equal ranks are one
    item. Returns (lowest sum, ways of each sum from there)."""
    contributions = [contribution for _, contribution in items]
    low, high = min(contributions), max(contributions)
    span_width = kept * (high - low) + 1
    finished = [0] * span_width
    # states[j]: ways of each sum (offset by j * low) with j dice placed above, fewer than kept
    states: list[list[int] | None] = [[1]] + [None] * (kept - 1)
    below = sum(ways for ways, _ in items)
    for ways, contribution in reversed(items):
        below -= ways
        shift = contribution - low
        following: list[list[int] | None] = [None] * kept
        for placed, state in enumerate(states):
            if state is None:
                continue
            rest = dice - placed
            for showing in range(kept - placed):
                weight = comb(rest, showing) * ways**showing
                if not weight:
                    continue
                target = following[placed + showing]
                _add_at(following, placed + showing, target, state, showing * shift, weight)
            needed = kept - placed
            closing = (ways + below) ** rest - sum(comb(rest, c) * ways**c * below ** (rest - c) for c in range(needed))
            if closing:
                start = needed * shift
                window = finished[start : start + len(state)]
                finished[start : start + len(state)] = map(add, window, map(mul, state, repeat(closing)))
        states = following
    return kept * low, finished


def _add_at(
    states: list[list[int] | None], index: int, target: list[int] | None, ways: list[int], offset: int, weight: int
) -> None:
    """states[index] += weight * ways shifted by offset, growing the list as needed."""
    size = offset + len(ways)
    merged = [0] * max(size, len(target) if target is not None else 0) if target is None else target
    if len(merged) < size:
        merged = merged + [0] * (size - len(merged))
    merged[offset:size] = map(add, merged[offset:size], map(mul, ways, repeat(weight)))
    states[index] = merged


def ranked_cost(items: int, spread: int, kept: int) -> int:
    """About how many additions `ranked` takes for `items` faces whose contributions span `spread`."""
    return items * kept * kept * (kept * spread + 1) // 2 + items * kept * kept
