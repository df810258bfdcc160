"""dice.json validation and band resolution (gm.rules.checks)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from gm.errors import BandGapError, CheckRollError, ProblemsError, UnknownCheck
from gm.problems import Problem
from gm.rules.checks import Rules, resolve
from gm.rules.validation import parse_rules, validate
from gm.world.loading import load_rules
from tests.support.paths import REPOSITORY

EXAMPLE = REPOSITORY / "examples" / "dice.json"


def five_band_check(**changes: Any) -> dict[str, Any]:
    check: dict[str, Any] = {
        "key": "attempt",
        "name": "Attempt",
        "use": "Anything risky.",
        "dice": "1d20",
        "compare": "over",
        "bands": [
            {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
            {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
            {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
            {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
            {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
        ],
    }
    check.update(changes)
    return check


def absolute_check(**changes: Any) -> dict[str, Any]:
    check: dict[str, Any] = {
        "key": "brawl",
        "name": "Brawl",
        "use": "Fist fights.",
        "dice": "2d6",
        "bands": [
            {"label": "Miss", "max": 6, "result": "failed"},
            {"label": "Graze", "min": 7, "max": 9, "result": "partial"},
            {"label": "Hit", "min": 10, "result": "succeeded"},
        ],
    }
    check.update(changes)
    return check


def errors_of(data: Any) -> list[Problem]:
    return [problem for problem in validate(data) if problem.severity == "error"]


def warnings_of(data: Any) -> list[Problem]:
    return [problem for problem in validate(data) if problem.severity == "warning"]


def test_the_shipped_example_is_valid_and_loads() -> None:
    assert validate(json.loads(EXAMPLE.read_text())) == []
    rules = load_rules(EXAMPLE)
    assert [check.key for check in rules.checks] == ["attempt", "struggle", "skill"]
    assert rules["struggle"].reading == "successes" and rules["struggle"].hit == 7


def test_defaults_are_total_and_absolute() -> None:
    check = parse_rules({"checks": [absolute_check()]})["brawl"]
    assert (check.reading, check.compare, check.hit, check.modifier) == ("total", "absolute", None, None)
    assert check.bands[0].critical is False


@pytest.mark.parametrize(
    ("total", "target", "modifier", "label"),
    [
        (1, 12, 0, "Critical failure"),  # 1 - 12 = -11
        (2, 12, 0, "Critical failure"),  # -10: the band's max is inclusive
        (3, 12, 0, "Failure"),  # -9
        (11, 12, 0, "Failure"),  # -1
        (12, 12, 0, "Partial success"),  # 0
        (14, 12, 3, "Success"),  # 14 + 3 - 12 = 5
        (19, 12, 3, "Critical success"),  # 10
    ],
)
def test_resolve_over_reads_total_plus_modifier_minus_target(
    total: int, target: int, modifier: int, label: str
) -> None:
    check = parse_rules({"checks": [five_band_check()]})["attempt"]
    assert resolve(check, total, target=target, modifier=modifier).label == label


def test_resolve_under_reads_target_minus_total() -> None:
    bands = [
        {"label": "Failure", "max": -1, "result": "failed"},
        {"label": "Success", "min": 0, "result": "succeeded"},
    ]
    check = parse_rules({"checks": [five_band_check(dice="d%", compare="under", bands=bands)]})["attempt"]
    assert resolve(check, 45, target=45).label == "Success"
    assert resolve(check, 46, target=45).label == "Failure"


def test_first_band_wins_when_bands_overlap() -> None:
    bands = [
        {"label": "Low", "max": 7, "result": "failed"},
        {"label": "Middle", "min": 5, "max": 9, "result": "partial"},
        {"label": "High", "min": 10, "result": "succeeded"},
    ]
    check = parse_rules({"checks": [absolute_check(bands=bands)]})["brawl"]
    assert resolve(check, 6).label == "Low"
    assert resolve(check, 8).label == "Middle"


def test_target_is_required_for_over_and_refused_for_absolute() -> None:
    rules = parse_rules({"checks": [five_band_check(), absolute_check()]})
    with pytest.raises(CheckRollError, match=r"'attempt'.*needs a target"):
        resolve(rules["attempt"], 10)
    with pytest.raises(CheckRollError, match=r"'brawl'.*takes no target"):
        resolve(rules["brawl"], 10, target=8)


def test_a_value_in_a_gap_names_the_check_and_the_value() -> None:
    bands = [
        {"label": "Failure", "max": -1, "result": "failed"},
        {"label": "Success", "min": 3, "result": "succeeded"},
    ]
    check = parse_rules({"checks": [five_band_check(bands=bands)]})["attempt"]
    with pytest.raises(BandGapError) as caught:
        resolve(check, 13, target=12)
    assert caught.value.value == 1 and caught.value.check_key == "attempt"
    assert "'attempt'" in str(caught.value) and "1" in str(caught.value)


def test_absolute_gap_is_an_error_naming_check_and_values() -> None:
    bands = [
        {"label": "Miss", "max": 6, "result": "failed"},
        {"label": "Hit", "min": 9, "result": "succeeded"},
    ]
    [problem] = errors_of({"checks": [absolute_check(bands=bands)]})
    assert problem.path == "$.checks[0].bands"
    assert "'brawl'" in problem.message and "7 to 8" in problem.message


def test_absolute_coverage_only_counts_reachable_values() -> None:
    # 2d6 cannot roll below 2 or above 12, so bands covering 2..12 exactly leave no gap.
    bands = [
        {"label": "Miss", "min": 2, "max": 6, "result": "failed"},
        {"label": "Hit", "min": 7, "max": 12, "result": "succeeded"},
    ]
    assert validate({"checks": [absolute_check(bands=bands)]}) == []
    short = copy.deepcopy(bands)
    short[1]["max"] = 11
    [problem] = errors_of({"checks": [absolute_check(bands=short)]})
    assert "the value 12" in problem.message


def test_successes_coverage_runs_from_zero_to_kept_dice() -> None:
    check = {
        "key": "pool",
        "name": "Pool",
        "use": "x",
        "dice": "6d10kh4",
        "reading": "successes",
        "hit": 8,
        "bands": [
            {"label": "None", "max": 0, "result": "failed"},
            {"label": "Some", "min": 1, "max": 3, "result": "partial"},
        ],
    }
    [problem] = errors_of({"checks": [check]})
    assert "the value 4" in problem.message  # 4 kept dice can all succeed


def test_gaps_in_over_checks_are_warnings_not_errors() -> None:
    bands = [
        {"label": "Failure", "max": -1, "result": "failed"},
        {"label": "Success", "min": 3, "result": "succeeded"},
    ]
    data = {"checks": [five_band_check(bands=bands)]}
    assert errors_of(data) == []
    [warning] = warnings_of(data)
    assert "0 to 2" in warning.message and "void" in warning.message
    parse_rules(data)  # warnings do not stop the rules from loading


def test_open_ended_gaps_in_over_checks_are_described() -> None:
    bands = [{"label": "Success", "min": 0, "max": 5, "result": "succeeded"}]
    messages = [warning.message for warning in warnings_of({"checks": [five_band_check(bands=bands)]})]
    assert any("-1 or less" in message for message in messages)
    assert any("6 or more" in message for message in messages)


def test_shadowed_and_unreachable_bands_are_warnings() -> None:
    bands = [
        {"label": "Miss", "max": 6, "result": "failed"},
        {"label": "Whiff", "min": 3, "max": 5, "result": "failed"},
        {"label": "Hit", "min": 7, "result": "succeeded"},
        {"label": "Never", "min": 20, "result": "succeeded", "critical": True},
    ]
    data = {"checks": [absolute_check(bands=bands)]}
    assert errors_of(data) == []
    paths = {warning.path: warning.message for warning in warnings_of(data)}
    assert "earlier bands" in paths["$.checks[0].bands[1]"]
    assert "earlier bands" in paths["$.checks[0].bands[3]"]  # "Hit" already holds 20 and up


def test_band_outside_reachable_values_is_a_warning() -> None:
    bands = [
        {"label": "Too low", "max": 1, "result": "failed"},
        {"label": "Miss", "max": 6, "result": "failed"},
        {"label": "Hit", "min": 7, "result": "succeeded"},
    ]
    [warning] = warnings_of({"checks": [absolute_check(bands=bands)]})
    assert warning.path == "$.checks[0].bands[0]" and "2 to 12" in warning.message


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"key": "Lock Picking"}, "$.checks[0].key", "not allowed"),
        ({"dice": "2d6+x"}, "$.checks[0].dice", "column 5"),
        ({"dice": "4d6kh5"}, "$.checks[0].dice", "keep 5 of 4"),
        ({"reading": "sucesses"}, "$.checks[0].reading", "'successes'"),
        ({"compare": "above"}, "$.checks[0].compare", "'over'"),
        ({"modifer": "skill"}, "$.checks[0]", "'modifer' is not known"),
        ({"bands": []}, "$.checks[0].bands", "at least 1"),
        ({"name": ""}, "$.checks[0].name", "empty"),
        ({"hit": 5}, "$.checks[0].hit", "successes check"),
    ],
)
def test_each_mistake_is_reported_at_its_path(change: dict[str, Any], path: str, words: str) -> None:
    problems = errors_of({"checks": [absolute_check(**change)]})
    assert any(problem.path == path and words in problem.message for problem in problems), problems


def test_missing_fields_and_bad_band_values() -> None:
    check = absolute_check()
    del check["use"]
    check["bands"][0]["result"] = "maybe"
    check["bands"][1]["min"] = "seven"
    problems = errors_of({"checks": [check]})
    assert any(p.path == "$.checks[0]" and "'use' is missing" in p.message for p in problems)
    assert any(p.path == "$.checks[0].bands[0].result" for p in problems)
    assert any(p.path == "$.checks[0].bands[1].min" and "whole number" in p.message for p in problems)


def test_min_above_max_and_repeated_labels() -> None:
    bands = [
        {"label": "Miss", "max": 6, "result": "failed"},
        {"label": "Odd", "min": 9, "max": 8, "result": "partial"},
        {"label": "miss ", "min": 7, "result": "succeeded"},
    ]
    problems = errors_of({"checks": [absolute_check(bands=bands)]})
    assert any(p.path == "$.checks[0].bands[1]" and "min 9 is above max 8" in p.message for p in problems)
    assert any(p.path == "$.checks[0].bands[2].label" and "bands[0]" in p.message for p in problems)


def test_successes_rules() -> None:
    base = {
        "key": "pool",
        "name": "Pool",
        "use": "x",
        "reading": "successes",
        "bands": [{"label": "Any", "result": "partial"}],
    }
    no_hit = errors_of({"checks": [{**base, "dice": "5d10"}]})
    assert any("needs 'hit'" in p.message for p in no_hit)
    constant = errors_of({"checks": [{**base, "dice": "5d10+1", "hit": 7}]})
    assert any(p.path == "$.checks[0].dice" and "constant" in p.message for p in constant)
    subtracted = errors_of({"checks": [{**base, "dice": "5d10-1d6", "hit": 7}]})
    assert any(p.path == "$.checks[0].dice" and "subtracted" in p.message for p in subtracted)
    unreachable = errors_of({"checks": [{**base, "dice": "5d10", "hit": 11}]})
    assert any(p.path == "$.checks[0].hit" and "11" in p.message for p in unreachable)


def test_duplicate_keys_limits_and_every_problem_at_once() -> None:
    assert any(
        "already used by checks[0]" in p.message for p in errors_of({"checks": [absolute_check(), absolute_check()]})
    )
    many = {"checks": [absolute_check(key=f"c{index}") for index in range(41)]}
    assert any(p.path == "$.checks" and "at most 40" in p.message for p in errors_of(many))
    bands = [{"label": f"b{index}", "result": "failed"} for index in range(21)]
    assert any("at most 20" in p.message for p in errors_of({"checks": [absolute_check(bands=bands)]}))
    several = {"checks": [absolute_check(dice="2d6+x"), absolute_check(key="other", compare="sideways"), {"key": 3}]}
    paths = {problem.path for problem in errors_of(several)}
    assert {"$.checks[0].dice", "$.checks[1].compare", "$.checks[2].key"} <= paths


def test_not_an_object_at_all() -> None:
    assert errors_of([]) and errors_of({"checks": {}}) and errors_of({})
    assert errors_of({"checks": [], "extra": 1})


def test_parse_rules_raises_with_every_error() -> None:
    with pytest.raises(ProblemsError) as caught:
        parse_rules({"checks": [absolute_check(dice="2d6+x"), absolute_check(key="b", name="")]}, "w/dice.json")
    assert len(caught.value.errors) == 2
    assert str(caught.value).startswith("w/dice.json: $.checks[0].dice")


def test_unknown_check_key_lists_the_known_ones() -> None:
    rules: Rules = parse_rules({"checks": [absolute_check()]})
    with pytest.raises(UnknownCheck, match="brawl"):
        rules["climb"]
    assert "brawl" in rules and "climb" not in rules
