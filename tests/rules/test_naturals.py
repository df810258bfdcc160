"""Natural results (tier stepping), advantage and opposed checks: exact odds against counting every face."""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Any

import pytest

from gm import dice
from gm.rules.chances import certain, check_odds, uncertain_targets
from gm.rules.naturals import read_roll
from gm.rules.validation import parse_rules, validate

# Listed from the lowest values to the highest, so a step up is the next band in this list.
FIVE_BANDS: list[dict[str, Any]] = [
    {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
    {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
    {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
    {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
    {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
]
STEPS = [{"face": 20, "step": 1}, {"face": 1, "step": -1}]


def check_with(**fields: Any) -> Any:
    base = {"key": "c", "name": "C", "use": "x", "bands": FIVE_BANDS}
    return parse_rules({"checks": [{**base, **fields}]})["c"]


def by_hand(value: int, kept: list[int], steps: dict[int, int], goto: dict[int, str] | None = None) -> str:
    """The band by the rules in words: first band holding the value, then a named band or steps, clamped."""
    place = next(i for i, band in enumerate(FIVE_BANDS) if band.get("min", -999) <= value <= band.get("max", 999))
    for face, label in (goto or {}).items():
        if face in kept:
            return label
    moved = place + sum(step for face, step in steps.items() if face in kept)
    return str(FIVE_BANDS[min(max(moved, 0), len(FIVE_BANDS) - 1)]["label"])


def kept_faces(notation: str, faces: tuple[int, ...]) -> list[int]:
    rolled = dice.roll(notation, dice.GivenFaces(faces))
    return [
        face
        for part in rolled.parts
        if isinstance(part, dice.DiceRoll)
        for face, keep in zip(part.faces, part.kept)
        if keep
    ]


@pytest.mark.parametrize(
    ("notation", "edge", "sides"),
    [("1d20", None, [20]), ("2d20kh1", "advantage", [20, 20]), ("2d20kl1", "disadvantage", [20, 20])],
)
@pytest.mark.parametrize("target", [3, 11, 19, 28])
def test_d20_steps_match_every_face_counted(notation: str, edge: str | None, sides: list[int], target: int) -> None:
    check = check_with(dice="1d20", advantage="2d20kh1", disadvantage="2d20kl1", compare="over", naturals=STEPS)
    counts: dict[str, int] = {}
    for faces in product(*(range(1, s + 1) for s in sides)):
        kept = kept_faces(notation, faces)
        label = by_hand(sum(kept) + 2 - target, kept, {20: 1, 1: -1})
        counts[label] = counts.get(label, 0) + 1
        _, settled = read_roll(check, dice.roll(notation, dice.GivenFaces(faces)), edge, target, 2)  # type: ignore[arg-type]
        assert settled.band is not None and settled.band.label == label
    total = 20 ** len(sides)
    odds = check_odds(check, target, 2, edge=edge)  # type: ignore[arg-type]
    assert odds.dice.exact
    assert {chance.band.label: chance.probability for chance in odds.bands} == {
        band["label"]: Fraction(counts.get(band["label"], 0), total) for band in FIVE_BANDS
    }


def test_steps_change_the_odds_of_a_d20_check() -> None:
    stepped = check_with(dice="1d20", compare="over", naturals=STEPS)
    plain = check_with(dice="1d20", compare="over")
    with_steps = {c.band.label: c.probability for c in check_odds(stepped, 10).bands}
    without = {c.band.label: c.probability for c in check_odds(plain, 10).bands}
    # Face 20 reads 10 (Critical success already); face 1 reads -9 (Failure) and steps down.
    assert without["Critical failure"] == 0 and with_steps["Critical failure"] == Fraction(1, 20)
    assert with_steps["Failure"] == without["Failure"] - Fraction(1, 20)


def test_a_natural_sends_the_roll_to_a_named_band_and_wins_over_steps() -> None:
    naturals = [{"face": 6, "step": 1}, {"face": 1, "band": "Critical failure"}]
    check = check_with(dice="4d6kh3", compare="over", naturals=naturals)
    counts: dict[str, int] = {}
    for faces in product(range(1, 7), repeat=4):
        kept = kept_faces("4d6kh3", faces)
        label = by_hand(sum(kept) - 10, kept, {6: 1}, {1: "Critical failure"})
        counts[label] = counts.get(label, 0) + 1
    odds = check_odds(check, 10)
    assert {c.band.label: c.probability for c in odds.bands} == {
        band["label"]: Fraction(counts.get(band["label"], 0), 6**4) for band in FIVE_BANDS
    }


def test_a_natural_can_name_its_die_among_several() -> None:
    check = check_with(dice="1d20+1d4", compare="over", naturals=[{"face": 4, "sides": 4, "step": 1}])
    counts: dict[str, int] = {}
    for a, b in product(range(1, 21), range(1, 5)):
        label = by_hand(a + b - 12, [b], {4: 1})  # only the d4's face counts: a d20 showing 4 does not
        counts[label] = counts.get(label, 0) + 1
    odds = check_odds(check, 12)
    assert {c.band.label: c.probability for c in odds.bands} == {
        band["label"]: Fraction(counts.get(band["label"], 0), 80) for band in FIVE_BANDS
    }


def test_opposed_check_reads_the_difference_and_watches_only_the_actor() -> None:
    check = check_with(dice="1d20", compare="opposed", naturals=[{"face": 20, "step": 1}])
    counts: dict[str, int] = {}
    for mine, theirs in product(range(1, 21), repeat=2):
        label = by_hand((mine + 3) - (theirs + 1), [mine], {20: 1})
        counts[label] = counts.get(label, 0) + 1
        _, settled = read_roll(check, dice.roll("1d20-1d20", dice.GivenFaces([mine, theirs])), None, None, 3 - 1)
        assert settled.band is not None and settled.band.label == label
    odds = check_odds(check, None, 3 - 1)
    assert odds.check.rolled().text == "1d20-1d20"
    assert {c.band.label: c.probability for c in odds.bands} == {
        band["label"]: Fraction(counts.get(band["label"], 0), 400) for band in FIVE_BANDS
    }


def test_successes_with_a_natural_match_counting() -> None:
    bands = [
        {"label": "None", "max": 0, "result": "failed"},
        {"label": "One", "min": 1, "max": 1, "result": "partial"},
        {"label": "More", "min": 2, "result": "succeeded"},
    ]
    check = parse_rules(
        {
            "checks": [
                {
                    "key": "c",
                    "name": "C",
                    "use": "x",
                    "dice": "3d10",
                    "reading": "successes",
                    "hit": 8,
                    "naturals": [{"face": 10, "step": 1}],
                    "bands": bands,
                }
            ]
        }
    )["c"]
    counts = [0, 0, 0]
    for faces in product(range(1, 11), repeat=3):
        place = min(sum(face >= 8 for face in faces), 2)
        counts[min(place + (10 in faces), 2)] += 1
    assert [c.probability for c in check_odds(check).bands] == [Fraction(n, 1000) for n in counts]


def test_a_natural_makes_a_hopeless_target_a_real_roll() -> None:
    check = check_with(dice="1d20", compare="over", naturals=[{"face": 20, "band": "Success"}])
    plain = check_with(dice="1d20", compare="over")
    assert certain(plain, 40) is not None
    assert certain(check, 40) is None  # only a natural 20 succeeds, but it can
    assert uncertain_targets(check)[-1][1] >= 10**9
    assert certain(check, -20) is not None  # every roll succeeds, and a natural 20 keeps it so


def test_gm_check_warns_of_a_natural_naming_a_missing_band_and_refuses_an_impossible_face() -> None:
    base = {"key": "c", "name": "C", "use": "x", "dice": "1d20", "compare": "over", "bands": FIVE_BANDS}
    problems = validate({"checks": [{**base, "naturals": [{"face": 20, "band": "Triumph"}, {"face": 21, "step": 1}]}]})
    by_path = {problem.path: problem for problem in problems}
    assert by_path["$.checks[0].naturals[0].band"].severity == "warning"
    assert "no band 'Triumph'" in by_path["$.checks[0].naturals[0].band"].message
    assert by_path["$.checks[0].naturals[1].face"].severity == "error"


@pytest.mark.parametrize(
    ("fields", "path", "words"),
    [
        ({"naturals": [{"face": 20, "step": 1, "band": "Success"}]}, "$.checks[0].naturals[0]", "not both"),
        ({"naturals": [{"face": 20, "step": 0}]}, "$.checks[0].naturals[0].step", "moves nothing"),
        ({"advantage": "2d20kq1"}, "$.checks[0].advantage", "column"),
        ({"compare": "opposed", "reading": "successes", "hit": 5}, "$.checks[0].compare", "reads the total"),
    ],
)
def test_table_rules_errors_name_their_field(fields: dict[str, Any], path: str, words: str) -> None:
    base = {"key": "c", "name": "C", "use": "x", "dice": "1d20", "compare": "over", "bands": FIVE_BANDS}
    problems = [p for p in validate({"checks": [{**base, **fields}]}) if p.severity == "error"]
    assert any(p.path == path and words in p.message for p in problems), problems


def test_a_band_only_a_natural_reaches_is_not_called_unreachable() -> None:
    bands = [
        {"label": "Low", "max": 10, "result": "failed"},
        {"label": "High", "min": 11, "max": 20, "result": "succeeded"},
        {"label": "Legend", "min": 21, "result": "succeeded", "critical": True},
    ]
    base = {"key": "c", "name": "C", "use": "x", "dice": "1d20", "bands": bands}
    plain = validate({"checks": [base]})
    stepped = validate({"checks": [{**base, "naturals": [{"face": 20, "step": 1}]}]})
    assert any("Legend" in p.message for p in plain)
    assert not any("Legend" in p.message for p in stepped)
