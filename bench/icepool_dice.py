"""gm dice notation as icepool dice, written from the notation's meaning (docs/dice-notation.md), for the
benchmark and the tests to compare gm's exact odds against.

Only icepool's public API: `Die`, `Die.reroll`, `Die.explode`, `Die.map`, `Die.pool`, pool `highest`/`lowest`,
`expand` and `sum`. Each die is built anew (`icepool.Die(range(...))`), since `icepool.d(N)` is memoised.
"""

from __future__ import annotations

from collections.abc import Callable

import icepool

from gm.dice import Constant, Dice, Expression

# An exploding roll that is counted rather than added carries its count in the high digits of its
# outcome, so that icepool's explosion (which adds outcomes) adds the counts and the faces apart.
_PACK = 10**7


def die(term: Dice, hit: int | None = None, *, counted: bool = True) -> icepool.Die[int]:
    """One die of `term` as the total reads it: its value, or its count of successes (unless not `counted`:
    then its value, as keep and drop rank it)."""
    faces = [-1, 0, 1] if term.fudge else list(range(1, term.sides + 1))
    roll = icepool.Die(faces)
    if term.reroll is not None:
        rerolled = [face for face in faces if face in term.reroll.faces]
        roll = roll.reroll(rerolled, depth=1 if term.reroll.once else "inf")
    worth = _worth(term, hit) if counted else None
    explode = term.explode
    if explode is None:
        return roll if worth is None else roll.map(worth)
    going = [face for face in faces if face in explode.faces]
    if worth is not None and term.counts_each_roll:
        counted = worth
        packed = roll.map(lambda face: counted(face) * _PACK + face)
        chain = packed.explode(lambda outcome: outcome % _PACK in going, depth=explode.cap)
        return chain.map(lambda total: divmod(total, _PACK)[0])
    chain = roll.explode(going, depth=explode.cap)
    return chain if worth is None else chain.map(worth)


def _worth(term: Dice, hit: int | None) -> Callable[[int], int] | None:
    if term.successes is not None:
        return term.successes.value
    if hit is not None:
        return lambda value: int(value >= hit)
    return None


def term_die(term: Dice, hit: int | None = None) -> icepool.Die[int]:
    """A whole dice term: its dice added, or the kept ones (ranked by each die's value) counted or added."""
    if term.keep is None or term.kept == term.count:
        total = term.count @ die(term, hit)
    elif term.successes is None and hit is None:
        pool = die(term, counted=False).pool(term.count)
        total = (pool.highest(term.kept) if term.keep.highest else pool.lowest(term.kept)).sum()
    else:
        worth = _worth(term, hit)
        assert worth is not None
        pool = die(term, counted=False).pool(term.count)
        chosen = pool.highest(term.kept) if term.keep.highest else pool.lowest(term.kept)
        total = chosen.expand().map(lambda kept: sum(worth(value) for value in kept))
    return -total if term.negative else total


def expression_die(expression: Expression, hit: int | None = None) -> icepool.Die[int]:
    """The icepool equivalent of a whole notation, its full distribution computed."""
    total: icepool.Die[int] | None = None
    for term in expression.terms:
        part: icepool.Die[int] | int = term.signed if isinstance(term, Constant) else term_die(term, hit)
        total = icepool.Die([part]) if total is None else total + part
    assert total is not None  # the grammar requires a term
    return total
