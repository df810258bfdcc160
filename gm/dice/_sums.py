"""Exact counts of sums of independent dice, without adding one die at a time.

The sum of `n` dice each with distribution P is the polynomial Q = P ** n. Its coefficients follow
from the differential equation P Q' = n P' Q (J. C. P. Miller's recurrence): each coefficient is a
short sum over the nonzero terms of P and P', divided exactly by its index. A die whose ways are
equal over runs of values (a plain die, a rerolled one, an exploding one) is written as A / B with
B = (1 - x) ** r and A sparse (a plain d1000 is (x - x**1001) / (1 - x)), so one coefficient of 100d1000
costs a handful of multiplications instead of a pass over a thousand faces. Several kinds of dice
are one product: L Q' = R Q with L the product of every A and B, R from the logarithmic derivative.

The same recurrence serves every group of dice; `power_cost` says what it will cost, so that the
caller can choose between it and a plain convolution. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import add, mul

Sparse = dict[int, int]  # exponent -> coefficient
Group = tuple[list[int], int]  # (ways of each value of one die from its lowest, number of such dice)


def sparse_form(counts: list[int]) -> tuple[Sparse, int]:
    """A sparse A with counts = A / (1 - x) ** r, for the r in 0..2 that makes A sparsest; returns (A, r)."""
    best: tuple[Sparse, int] | None = None
    current = list(counts)
    for power in range(3):
        terms = {index: value for index, value in enumerate(current) if value}
        if best is None or len(terms) < len(best[0]):
            best = (terms, power)
        current = [a - b for a, b in zip([*current, 0], [0, *current])]  # times (1 - x)
    assert best is not None
    return best


def _times(first: Sparse, second: Sparse) -> Sparse:
    result: Sparse = {}
    for i, a in first.items():
        for j, b in second.items():
            result[i + j] = result.get(i + j, 0) + a * b
    return {key: value for key, value in result.items() if value}


def _plus(first: Sparse, second: Sparse) -> Sparse:
    result = dict(first)
    for key, value in second.items():
        result[key] = result.get(key, 0) + value
    return {key: value for key, value in result.items() if value}


def _derivative(poly: Sparse) -> Sparse:
    return {key - 1: key * value for key, value in poly.items() if key}


def _one_minus_x(power: int) -> Sparse:
    result: Sparse = {0: 1}
    for _ in range(power):
        result = _times(result, {0: 1, 1: -1})
    return result


def _equation(groups: Sequence[Group]) -> tuple[Sparse, Sparse, int, int]:
    """L and R of L Q' = R Q for the product of the groups, the constant term Q(0), and the width of Q."""
    forms = []
    for counts, dice in groups:
        numerator, power = sparse_form(counts)
        forms.append((numerator, _one_minus_x(power), dice))
    factors = [_times(numerator, denominator) for numerator, denominator, _ in forms]
    whole: Sparse = {0: 1}
    for factor in factors:
        whole = _times(whole, factor)
    right: Sparse = {}
    for index, (numerator, denominator, dice) in enumerate(forms):
        log_part = _plus(
            _times(_derivative(numerator), denominator),
            {key: -value for key, value in _times(numerator, _derivative(denominator)).items()},
        )
        others: Sparse = {0: dice}
        for other, factor in enumerate(factors):
            if other != index:
                others = _times(others, factor)
        right = _plus(right, _times(log_part, others))
    start = 1
    for (counts, dice), _form in zip(groups, forms):
        start *= counts[0] ** dice
    width = sum(dice * (len(counts) - 1) for counts, dice in groups) + 1
    return whole, right, start, width


def power_cost(groups: Sequence[Group]) -> int:
    """About how many multiplications `power` takes for these groups (each term of L and R, each coefficient)."""
    groups = [(counts, dice) for counts, dice in groups if dice]
    if len(groups) == 1 and groups[0][1] == 1:
        return len(groups[0][0])
    whole, right, _, width = _equation(groups)
    return width * (len(whole) + len(right))


def power(groups: Sequence[Group]) -> list[int]:
    """The ways of each total of every die of every group rolled together, from the lowest total up.

    Each group is (the ways of each value of one die, from its lowest value, with no zero at either end;
    how many such dice). When every die is symmetric, only the lower half is worked out."""
    groups = [(counts, dice) for counts, dice in groups if dice]
    if not groups:
        return [1]
    if len(groups) == 1 and groups[0][1] == 1:
        return list(groups[0][0])
    whole, right, start, width = _equation(groups)
    lead = whole[0]
    symmetric = all(counts == counts[::-1] for counts, _ in groups)
    needed = (width + 1) // 2 if symmetric else width
    left_terms = sorted((key, value) for key, value in whole.items() if key)
    right_terms = sorted(right.items())
    q = [start]
    for m in range(needed - 1):
        total = 0
        for key, value in right_terms:
            if key > m:
                break
            total += value * q[m - key]
        step = m + 1
        for key, value in left_terms:
            if key > step:
                break
            total -= value * (step - key) * q[step - key]
        q.append(total // (lead * step))
    if symmetric:
        q += q[: width - needed][::-1]
    return q


def convolve(first: list[int], second: list[int]) -> list[int]:
    """The ways of each sum of two independent values, both listed from their lowest value."""
    if len(first) > len(second):
        first, second = second, first
    result = [0] * (len(first) + len(second) - 1)
    size = len(second)
    for offset, weight in enumerate(first):
        if weight:
            window = result[offset : offset + size]
            result[offset : offset + size] = map(add, window, map(mul, second, [weight] * size))
    return result
