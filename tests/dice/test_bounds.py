"""`gm.dice.bounds`: the lowest and highest value a notation can read, checked against brute force."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gm import dice
from gm.rules.validation import parse_rules
from tests.support.strategies import DiceSpec, Spec, brute_force, notations

SMALL = {"max_terms": 3, "max_dice": 5, "max_sides": 8, "max_constant": 20, "max_outcomes": 4096}


@settings(max_examples=200, deadline=None)
@given(notations(**SMALL))
@pytest.mark.slow
def test_total_bounds_are_the_lowest_and_highest_total_that_can_occur(drawn: tuple[str, list[Spec]]) -> None:
    text, specs = drawn
    values = brute_force(specs)
    assert dice.bounds(text) == (min(values), max(values))


@settings(max_examples=200, deadline=None)
@given(notations(**SMALL, constants=False, negatives=False), st.data())
@pytest.mark.slow
def test_success_bounds_are_the_fewest_and_most_successes_that_can_occur(
    drawn: tuple[str, list[Spec]], data: st.DataObject
) -> None:
    text, specs = drawn
    hit = data.draw(st.integers(1, max(spec.sides for spec in specs if isinstance(spec, DiceSpec))))
    values = brute_force(specs, hit)
    low, high = dice.bounds(text, hit)
    assert (low, high) == (min(values), max(values))
    assert set(values) == set(range(low, high + 1)), "a value between the bounds cannot occur"


@pytest.mark.parametrize(
    ("notation", "hit", "expected"),
    [
        ("5d10", 7, (0, 5)),
        ("5d10", 1, (5, 5)),  # every die shows 1 or more: always five successes
        ("2d6+2d10", 8, (0, 2)),  # a d6 never shows 8
        ("6d10kh4", 1, (4, 4)),  # only kept dice count
        ("100d1000", None, (100, 100_000)),
        ("1d20-1d4+3", None, (0, 22)),
    ],
)
def test_bounds_of_known_notations(notation: str, hit: int | None, expected: tuple[int, int]) -> None:
    assert dice.bounds(notation, hit) == expected


def test_bounds_refuse_what_cannot_be_read_as_successes() -> None:
    with pytest.raises(dice.DiceError, match="constant"):
        dice.bounds("2d6+1", 4)


def test_a_check_reaches_only_the_successes_its_dice_can_give() -> None:
    # With hit 1 every kept die is a success: the check can only read 3, so bands for 0 to 2 are not needed.
    rules = parse_rules(
        {
            "checks": [
                {
                    "key": "sure",
                    "name": "Sure",
                    "use": "x",
                    "dice": "3d6",
                    "reading": "successes",
                    "hit": 1,
                    "bands": [{"label": "All", "min": 3, "max": 3, "result": "succeeded"}],
                }
            ]
        }
    )
    assert rules["sure"].reachable == (3, 3)
