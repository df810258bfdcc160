"""Certain outcomes (gm.rules.chances.certain): a roll whose every value gives one result is found without
odds, and agrees with the exact odds of every band; `gm odds` shows it to a world's author."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gm import dice
from gm.cli import main
from gm.errors import CheckRollError
from gm.rules.chances import (
    can_go_either_way,
    certain,
    check_odds,
    nearest_uncertain_target,
    refusal,
    uncertain_targets,
)
from gm.rules.checks import Band, Check
from gm.rules.validation import parse_rules
from tests.support.strategies import notations
from tests.support.worlds import write_world

SMALL = {"max_terms": 2, "max_dice": 4, "max_sides": 8, "max_constant": 10, "max_outcomes": 4096}
RESULTS = ("succeeded", "partial", "failed")

BARGAIN: dict[str, Any] = {
    "key": "bargain",
    "name": "Strike a bargain",
    "use": "Haggling.",
    "dice": "5d10",
    "reading": "successes",
    "hit": 7,
    "compare": "over",
    "bands": [
        {"label": "Critical failure", "max": -3, "result": "failed", "critical": True},
        {"label": "Failure", "min": -2, "max": 0, "result": "failed"},
        {"label": "Partial success", "min": 1, "max": 1, "result": "partial"},
        {"label": "Success", "min": 2, "max": 3, "result": "succeeded"},
        {"label": "Critical success", "min": 4, "result": "succeeded", "critical": True},
    ],
}

OVER_BANDS: list[dict[str, Any]] = [
    {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
    {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
    {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
    {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
    {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
]


def check_of(**fields: Any) -> Check:
    base = {"key": "c", "name": "C", "use": "x", "bands": OVER_BANDS}
    return parse_rules({"checks": [{**base, **fields}]})["c"]


def outcomes(check: Check, target: int | None, modifier: int, distribution: dice.Odds | None = None) -> set[str | None]:
    """The oracle: every outcome with a chance above zero in the exact odds (None for a void roll)."""
    found = check_odds(check, target, modifier, distribution)
    seen: set[str | None] = {chance.band.result for chance in found.bands if chance.probability > 0}
    return seen | {None} if found.void > 0 else seen


# The issue's examples


def test_a_target_no_roll_can_meet_is_certain_failure_in_the_issues_words() -> None:
    bargain = parse_rules({"checks": [BARGAIN]})["bargain"]
    settled = certain(bargain, target=12)
    assert settled is not None and settled.result == "failed"
    assert refusal(settled, "Tam") == (
        "at target 12, every roll of Strike a bargain for Tam fails (5d10 successes read 0 to 5); the outcome is"
        " certain, so narrate it without a roll, or give a target the dice can reach (from -1 to 4 for Tam)"
    )


def test_a_target_every_roll_meets_is_certain_success() -> None:
    bargain = parse_rules({"checks": [BARGAIN]})["bargain"]
    settled = certain(bargain, target=-4)  # values 4 to 9: all "Critical success"
    assert settled is not None and settled.result == "succeeded"
    assert certain(bargain, target=-3) is not None  # values 3 to 8: "Success" and "Critical success", one result
    assert certain(bargain, target=-1) is None  # values 1 to 6: partial or succeeded


def test_bands_with_one_result_count_as_one_whatever_their_labels_or_criticality() -> None:
    d20 = check_of(dice="1d20", compare="over")
    # target 25: values -24 to -5, "Critical failure" or "Failure": both failed
    assert (settled := certain(d20, target=25)) is not None and settled.result == "failed"
    # target -4: values 5 to 24, "Success" or "Critical success"
    assert (settled := certain(d20, target=-4)) is not None and settled.result == "succeeded"
    assert certain(d20, target=-3) is None  # value 4 is a partial success


def test_an_absolute_check_is_certain_through_a_modifier() -> None:
    labour = check_of(
        dice="5d10",
        reading="successes",
        hit=7,
        modifier="brawn",
        bands=[
            {"label": "Swept back", "max": 0, "result": "failed"},
            {"label": "Holding, barely", "min": 1, "max": 1, "result": "partial"},
            {"label": "Holding", "min": 2, "max": 3, "result": "succeeded"},
            {"label": "Stronger than the sea", "min": 4, "result": "succeeded", "critical": True},
        ],
    )
    assert certain(labour, modifier=0) is None and certain(labour, modifier=-4) is None
    strong = certain(labour, modifier=2)  # 2 to 7 successes: always holding
    assert strong is not None and strong.result == "succeeded"
    assert refusal(strong, "Margit") == (
        "every roll of C for Margit succeeds (5d10 successes read 0 to 5, 2 to 7 with brawn +2);"
        " the outcome is certain, so narrate it without a roll"
    )
    weak = certain(labour, modifier=-5)  # -5 to 0: always swept back
    assert weak is not None and weak.result == "failed"
    assert not can_go_either_way(labour, 2) and can_go_either_way(labour, 1)


def test_a_check_whose_dice_always_read_the_same_is_certain() -> None:
    sure = check_of(
        dice="3d6", reading="successes", hit=1, bands=[{"label": "All", "min": 0, "result": "succeeded"}]
    )  # every die is a success: three, always
    assert (settled := certain(sure)) is not None and settled.rolled == (3, 3)
    assert "3d6 successes read only 3" in refusal(settled, "Tam")


def test_a_roll_that_may_be_void_can_go_either_way_but_one_always_void_cannot() -> None:
    gappy = check_of(
        dice="1d20",
        compare="over",
        bands=[
            {"label": "Failure", "max": -1, "result": "failed"},
            {"label": "Success", "min": 3, "result": "succeeded"},
        ],
    )
    assert certain(gappy, target=21) is not None  # values -20 to -1: always failed
    assert certain(gappy, target=20) is None  # -19 to 0: failed, or void on a 20
    narrow = check_of(dice="1d4", compare="over", bands=[{"label": "Hit", "min": 0, "max": 0, "result": "succeeded"}])
    void = certain(narrow, target=10)  # values -9 to -6: never in a band
    assert void is not None and void.result is None
    sentence = refusal(void, "Tam")
    assert "falls in no band, so it would be void" in sentence and "no roll can settle it" in sentence


def test_a_check_certain_at_every_target_says_so() -> None:
    one_way = check_of(
        dice="1d20",
        compare="over",
        bands=[{"label": "Low", "max": 0, "result": "failed"}, {"label": "High", "min": 1, "result": "failed"}],
    )
    assert uncertain_targets(one_way) == () and not can_go_either_way(one_way)
    settled = certain(one_way, target=5)
    assert settled is not None
    assert refusal(settled, "Tam").endswith(
        "the outcome is certain at any target for Tam, so narrate it without a roll"
    )
    assert nearest_uncertain_target(one_way, 0, 5) is None


def test_a_missing_or_unwanted_target_is_refused_as_the_roll_would_be() -> None:
    with pytest.raises(CheckRollError, match="needs a target"):
        certain(check_of(dice="1d20", compare="over"))
    with pytest.raises(CheckRollError, match="takes no target"):
        certain(check_of(dice="1d20", bands=[{"label": "Any", "result": "failed"}]), target=3)


def test_an_under_check_turns_the_other_way() -> None:
    skill = check_of(
        dice="d%",
        compare="under",
        bands=[
            {"label": "Success", "min": 0, "result": "succeeded"},
            {"label": "Failure", "max": -1, "result": "failed"},
        ],
    )
    # target - face: certain success from 100 up (values 0 to 99), certain failure at 0 and below
    assert uncertain_targets(skill) == ((1, 99),)
    assert (certain(skill, target=100) or pytest.fail()).result == "succeeded"
    assert (certain(skill, target=0) or pytest.fail()).result == "failed"
    assert certain(skill, target=1) is None and certain(skill, target=99) is None
    assert uncertain_targets(skill, modifier=5) == ((6, 104),)
    assert nearest_uncertain_target(skill, 0, 150) == 99 and nearest_uncertain_target(skill, 0, -3) == 1
    assert nearest_uncertain_target(skill, 0, 50) == 50


def test_it_takes_no_odds_so_huge_dice_cost_nothing() -> None:
    huge = check_of(dice="100d1000", compare="over")
    assert (certain(huge, target=200_000) or pytest.fail()).result == "failed"
    assert certain(huge, target=50_000) is None
    assert uncertain_targets(huge) == ((96, 100_000),)  # 96: values 4 (partial) to 99,904


# Properties: agreement with the exact odds of every band


@st.composite
def checks(draw: st.DrawFn) -> tuple[Check, int]:
    """A small check with random bands (gaps, overlaps and open ends allowed), and a modifier."""
    reading = draw(st.sampled_from(["total", "successes"]))
    if reading == "successes":
        text, _ = draw(notations(**SMALL, constants=False, negatives=False))
        expression = dice.parse(text)
        hit: int | None = draw(st.integers(1, max(term.sides for term in expression.dice)))
    else:
        text, _ = draw(notations(**SMALL))
        expression, hit = dice.parse(text), None
    bands = []
    for number in range(draw(st.integers(1, 5))):
        low = draw(st.none() | st.integers(-30, 30))
        high = draw(st.none() | st.integers(-30, 30))
        if low is not None and high is not None and low > high:
            low, high = high, low
        bands.append(Band(f"b{number}", draw(st.sampled_from(RESULTS)), draw(st.booleans()), low, high))
    compare = draw(st.sampled_from(["absolute", "over", "under"]))
    check = Check("c", "C", "x", expression, tuple(bands), reading, hit, compare, "m")  # type: ignore[arg-type]
    return check, draw(st.integers(-6, 6))


@settings(max_examples=300, deadline=None)
@given(checks(), st.integers(-40, 40))
@pytest.mark.slow
def test_certain_exactly_when_the_odds_give_one_outcome(drawn: tuple[Check, int], target: int) -> None:
    check, modifier = drawn
    given_target = target if check.needs_target else None
    seen = outcomes(check, given_target, modifier)
    settled = certain(check, given_target, modifier)
    if len(seen) == 1:
        assert settled is not None and settled.result == next(iter(seen))
    else:
        assert settled is None, seen


@settings(max_examples=150, deadline=None)
@given(checks())
@pytest.mark.slow
def test_uncertain_targets_are_exactly_the_targets_whose_odds_give_two_outcomes(drawn: tuple[Check, int]) -> None:
    check, modifier = drawn
    if not check.needs_target:
        assert uncertain_targets(check, modifier) == ()
        assert can_go_either_way(check, modifier) == (len(outcomes(check, None, modifier)) > 1)
        return
    distribution = dice.odds(check.dice, hit=check.hit if check.reading == "successes" else None)
    # Band edges lie within -30..30, dice within -30..30 and the modifier within -6..6: far beyond is certain.
    either_way = {t for t in range(-120, 121) if len(outcomes(check, t, modifier, distribution)) > 1}
    listed = {t for first, last in uncertain_targets(check, modifier) for t in range(first, last + 1)}
    assert listed == either_way
    assert can_go_either_way(check, modifier) == bool(either_way)


# gm odds


def test_gm_odds_says_when_a_target_makes_a_check_certain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    world = write_world(
        tmp_path / "market",
        {"title": "Market", "premise": "A market.", "characters": [{"name": "Tam", "role": "player"}]},
        {"checks": [BARGAIN]},
    )
    assert main(["odds", str(world), "bargain", "--target", "12", "--character", "Tam"]) == 0
    shown = capsys.readouterr().out
    assert (
        "  certain: every roll fails (5d10 successes read 0 to 5); the game master cannot roll it"
        " (targets from -1 to 4 can go either way)"
    ) in shown
    assert main(["odds", str(world), "bargain", "--target", "2"]) == 0
    assert "certain" not in capsys.readouterr().out
    assert main(["odds", str(world), "bargain", "--target", "-4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["certain"] == {"result": "succeeded", "min": 0, "max": 5}
    assert main(["odds", str(world), "bargain", "--target", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["certain"] is None
