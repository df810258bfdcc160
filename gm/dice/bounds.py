"""The lowest and highest values a notation can read, without working out any odds.

Every value between the two can occur: each term's kept dice can show any sum from their lowest to
their highest one step at a time (or any count of successes, one die at a time), and sums of
intervals are intervals. So the bounds are the whole set of reachable values, found in time
proportional to the number of terms: microseconds even for 100d1000, where exact odds take a second.
"""

from __future__ import annotations

from gm.dice.parser import parse
from gm.dice.roller import check_successes
from gm.dice.tree import Expression


def bounds(notation: str | Expression, hit: int | None = None) -> tuple[int, int]:
    """The lowest and highest total of `notation`, or, with `hit`, its fewest and most successes.

    A die counts as a success when it is kept and shows `hit` or more; so with `hit` 1 every kept
    die is a success, and a die with fewer sides than `hit` never is.
    """
    expression = parse(notation) if isinstance(notation, str) else notation
    if hit is None:
        return expression.minimum, expression.maximum
    check_successes(expression, hit)
    fewest = sum(term.kept for term in expression.dice if hit <= 1)
    most = sum(term.kept for term in expression.dice if term.sides >= hit)
    return fewest, most
