"""The values a notation can read, without working out any odds: its lowest and highest, and every
stretch of values between that some roll reaches.

Plain dice reach every value between their lowest and highest: each term's kept dice can show any sum
from their lowest to their highest one step at a time (or any count of successes, one die at a time),
and sums of intervals are intervals. Rerolled and exploding dice may skip values (`1d6!` never reads 6,
which always explodes; `1d6r3` never shows 3), so `spans` works the reachable values out as intervals:
a die's chain by Horner's rule over sets of intervals, a term as the sum of its kept dice's sets, the
notation as the sum of its terms'. Intervals merge as they meet, so this takes microseconds even for
100d1000, where exact odds take a tenth of a second.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from gm.dice.parser import parse
from gm.dice.roller import check_successes
from gm.dice.tree import Dice, Expression, FaceSet, die_range

Spans = tuple[tuple[int, int], ...]  # disjoint, lowest first


def bounds(notation: str | Expression, hit: int | None = None) -> tuple[int, int]:
    """The lowest and highest total of `notation`, or, with `hit`, its fewest and most successes.

    A die counts as a success when it is kept and shows `hit` or more (each roll of an exploding die
    counts on its own, a compounded die by its sum); so with `hit` 1 every kept die is a success, and
    a die with fewer sides than `hit` never is.
    """
    expression = parse(notation) if isinstance(notation, str) else notation
    if not expression.plain:
        # A term's own limits can be out of reach (`1d2!!=2` counts a compounded d2, which is odd or over 2
        # and so never 2): the reachable stretches say exactly.
        reach = spans(expression, hit)
        return reach[0][0], reach[-1][1]
    if hit is None:
        return expression.minimum, expression.maximum
    check_successes(expression, hit)
    fewest = sum(term.kept * die_range(term, hit)[0] for term in expression.dice)
    most = sum(term.kept * die_range(term, hit)[1] for term in expression.dice)
    return fewest, most


def spans(notation: str | Expression, hit: int | None = None) -> Spans:
    """Every value `notation` can read (its total, or with `hit` its successes), as disjoint stretches."""
    expression = parse(notation) if isinstance(notation, str) else notation
    if hit is not None:
        check_successes(expression, hit)
    if expression.plain:
        return (bounds(expression, hit),)
    total: Spans = ((expression.constant, expression.constant),)
    for term in expression.dice:
        one = _die_spans(term, hit)
        part = one
        for _ in range(term.kept - 1):
            part = _plus(part, one)
        if term.negative:
            part = tuple((-high, -low) for low, high in reversed(part))
        total = _plus(total, part)
    return total


def _die_spans(term: Dice, hit: int | None) -> Spans:
    """What one die can add (or count)."""
    settled = term.settled_faces()
    counting = term.successes
    worth: Callable[[int], int]
    if counting is not None:
        worth = counting.value
    elif hit is not None:
        worth = lambda face: int(face >= hit)  # noqa: E731  # one line reads better than a def here
    else:
        worth = term.face_value
    explode = term.explode
    if explode is None:
        return _merged((worth(face), worth(face)) for face in settled)
    if term.counts_each_roll or (counting is None and hit is None):
        return _chain(settled, explode.faces, explode.cap, worth)
    sums = _chain(settled, explode.faces, explode.cap, term.face_value)
    return _merged((worth(total), worth(total)) for low, high in sums for total in range(low, high + 1))


def _chain(settled: list[int], exploding: FaceSet, cap: int, worth: Callable[[int], int]) -> Spans:
    going = [face for face in settled if face in exploding]
    stopping = _merged((worth(face), worth(face)) for face in settled if face not in going)
    steps = _merged((worth(face), worth(face)) for face in going)
    chain = _merged((worth(face), worth(face)) for face in settled)
    for _ in range(cap):
        chain = _merged([*stopping, *_plus(steps, chain)])
    return chain


def _plus(first: Spans, second: Spans) -> Spans:
    """Every sum of a value of `first` and one of `second`."""
    return _merged((a + c, b + d) for a, b in first for c, d in second)


def _merged(stretches: Iterable[tuple[int, int]]) -> Spans:
    merged: list[tuple[int, int]] = []
    for low, high in sorted(stretches):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return tuple(merged)
