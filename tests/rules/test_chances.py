"""The chance of each band (gm.rules.chances), checked against counting faces by hand."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import product
from pathlib import Path
from typing import Any

import pytest

from gm.errors import CheckRollError
from gm.rules.chances import check_odds
from gm.rules.validation import parse_rules
from gm.transcript.shapes import RollPublic
from gm.world.loading import load_world
from tests.support.worlds import HARBOR_DICE, write_world

FIVE_BANDS: list[dict[str, Any]] = [
    {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
    {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
    {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
    {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
    {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
]


def rules_with(**check: Any) -> Any:
    base = {"key": "c", "name": "C", "use": "x", "bands": FIVE_BANDS}
    return parse_rules({"checks": [{**base, **check}]})["c"]


def test_d20_over_target_with_modifier_counts_faces() -> None:
    check = rules_with(dice="1d20", compare="over")
    result = check_odds(check, target=15, modifier=2)
    # value = face + 2 - 15 = face - 13; count faces 1..20 per band by hand:
    expected = {
        "Critical failure": Fraction(3, 20),  # faces 1-3 give -12..-10
        "Failure": Fraction(9, 20),  # faces 4-12
        "Partial success": Fraction(5, 20),  # faces 13-17
        "Success": Fraction(3, 20),  # faces 18-20 give 5..7
        "Critical success": Fraction(0),
    }
    assert {chance.band.label: chance.probability for chance in result.bands} == expected
    assert result.void == 0


def test_band_chances_agree_with_enumerating_every_face() -> None:
    check = rules_with(dice="2d6kh1+1d4", compare="under")
    target = 6
    counts: dict[str, int] = {}
    for a, b, c in product(range(1, 7), range(1, 7), range(1, 5)):
        value = target - (max(a, b) + c)
        label = next(band["label"] for band in FIVE_BANDS if band.get("min", -99) <= value <= band.get("max", 99))
        counts[label] = counts.get(label, 0) + 1
    result = check_odds(check, target=target)
    for chance in result.bands:
        assert chance.probability == Fraction(counts.get(chance.band.label, 0), 6 * 6 * 4)


def test_successes_check_band_chances() -> None:
    bands = [
        {"label": "None", "max": 0, "result": "failed"},
        {"label": "One", "min": 1, "max": 1, "result": "partial"},
        {"label": "More", "min": 2, "result": "succeeded"},
    ]
    check = rules_with(dice="3d6", reading="successes", hit=5, bands=bands)
    result = check_odds(check, modifier=0)
    # each die succeeds with 2/6 = 1/3: P(0) = (2/3)^3, P(1) = 3 * 1/3 * (2/3)^2
    none, one = Fraction(8, 27), Fraction(12, 27)
    assert [chance.probability for chance in result.bands] == [none, one, 1 - none - one]


def test_void_chance_for_gaps() -> None:
    bands = [
        {"label": "Failure", "max": -1, "result": "failed"},
        {"label": "Success", "min": 2, "result": "succeeded"},
    ]
    result = check_odds(rules_with(dice="1d20", compare="over", bands=bands), target=10)
    # value = face - 10: faces 10 and 11 give 0 and 1, in no band
    assert result.void == Fraction(2, 20)
    assert sum(chance.probability for chance in result.bands) + result.void == 1


def test_target_rules_apply() -> None:
    with pytest.raises(CheckRollError):
        check_odds(rules_with(dice="1d20", compare="over"))
    with pytest.raises(CheckRollError):
        check_odds(rules_with(dice="1d20", bands=[{"label": "All", "result": "partial"}]), target=3)


def test_json_form() -> None:
    chances = check_odds(rules_with(dice="1d20", compare="over"), target=15, modifier=2)
    data = chances.to_json(exact=True)
    assert data["check"] == "c" and data["target"] == 15 and data["modifier"] == 2
    assert data["bands"][0] == {
        "label": "Critical failure",
        "result": "failed",
        "critical": True,
        "probability": "3/20",
    }
    assert data["distribution"]["1"] == "1/20" and data["void"] == "0"
    decimals = chances.to_json()  # by default: decimals
    assert decimals["bands"][0]["probability"] == 0.15 and decimals["void"] == 0.0
    assert decimals["distribution"]["1"] == 0.05 and decimals["mean"] == 10.5


def _card(world: Any, target: int, modifier: int) -> Any:
    """The chances a stored `attempt` roll's card shows in `world`."""
    stored = {"id": 1, "kind": "check", "check_key": "attempt", "notation": "1d20", "faces": [[9]], "total": 9}
    return RollPublic.from_stored({**stored, "target": target, "modifier": modifier}, world).chances


def test_a_cards_chances_are_its_own_checks_odds_whichever_world_object_holds_it(tmp_path: Path) -> None:
    """The card's odds are cached by the check's text: equal checks share them, different ones never do."""
    harsher = json.loads(json.dumps(HARBOR_DICE))
    harsher["checks"][0]["bands"][2]["max"] = 6  # Partial success now 0..6, Success 7..9
    harsher["checks"][0]["bands"][3]["min"] = 7
    first, again = load_world(write_world(tmp_path / "a")), load_world(write_world(tmp_path / "b"))
    harsh = load_world(write_world(tmp_path / "c", dice=harsher))
    for world in (first, again, harsh, first, harsh):  # each asked twice, so the second answer is the cached one
        expected = check_odds(world.rules["attempt"], target=12, modifier=3)
        chances = _card(world, 12, 3)
        assert [(chance.label, chance.probability) for chance in chances] == [
            (odds.band.label, str(odds.probability)) for odds in expected.bands
        ]
    assert _card(first, 12, 3) == _card(again, 12, 3) != _card(harsh, 12, 3)
    assert _card(first, 12, 3) != _card(first, 12, 4)
    assert _card(first, 12, 3)[2].probability == "1/4"  # Partial success: a d20 of 9 to 13 (+3 against 12)
