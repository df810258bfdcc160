"""The referee: which endings it refuses, and that it accepts honest ones."""

from __future__ import annotations

from gm.referee import Outcome, RoundRoll, referee

MARA_PICKS = RoundRoll(1, "check", "Mara", "lockpicking", "Partial success", "partial")
JON_CLIMBS = RoundRoll(2, "check", "Jon", "climb", "Failure", "failed")
DAMAGE = RoundRoll(3, "dice")
VOID = RoundRoll(4, "check", "Jon", "sneak", None, None, void=True)
CRITICAL = RoundRoll(5, "check", "Mara", "climb", "Critical success", "succeeded")
CAST = ["Mara", "Jon", "The Warden"]
TEXT = "The lock gives, slowly, and the corridor beyond is dark."


def reasons(rolls: list[RoundRoll], outcomes: list[Outcome], narration: str = TEXT) -> list[str]:
    return [refusal.reason for refusal in referee(rolls, outcomes, narration, CAST)]


def test_an_honest_ending_stands() -> None:
    outcomes = [Outcome("Mara", "partial", 1), Outcome("Jon", "failed", 2), Outcome("The Warden", "succeeded")]
    assert reasons([MARA_PICKS, JON_CLIMBS, DAMAGE], outcomes) == []


def test_a_round_without_rolls_may_have_any_outcomes() -> None:
    assert reasons([], [Outcome("Mara", "succeeded")]) == []
    assert reasons([], []) == []


def test_the_opposite_result_is_refused_naming_roll_and_character() -> None:
    [reason] = reasons([MARA_PICKS], [Outcome("Mara", "succeeded", 1)])
    assert "roll 1" in reason and "Mara" in reason and "'partial'" in reason and "'succeeded'" in reason


def test_critical_does_not_change_the_result() -> None:
    assert reasons([CRITICAL], [Outcome("Mara", "succeeded", 5)]) == []
    assert reasons([CRITICAL], [Outcome("Mara", "partial", 5)])


def test_one_roll_named_twice() -> None:
    refused = reasons([MARA_PICKS], [Outcome("Mara", "partial", 1), Outcome("Mara", "partial", 1)])
    assert any("named by outcomes 1 and 2" in reason for reason in refused)


def test_a_rolled_for_character_whose_outcome_ignores_the_roll() -> None:
    [reason] = reasons([MARA_PICKS], [Outcome("Mara", "succeeded")])
    assert "Mara was rolled for" in reason and "roll 1" in reason


def test_a_roll_that_serves_no_outcome() -> None:
    [reason] = reasons([MARA_PICKS, JON_CLIMBS], [Outcome("Mara", "partial", 1)])
    assert "roll 2" in reason and "serves no outcome" in reason and "Jon" in reason


def test_an_unknown_roll_id() -> None:
    refused = reasons([MARA_PICKS], [Outcome("Mara", "partial", 1), Outcome("Jon", "failed", 99)])
    assert any("roll 99" in reason and "not rolled this round" in reason for reason in refused)


def test_a_roll_named_for_the_wrong_character() -> None:
    refused = reasons([MARA_PICKS, JON_CLIMBS], [Outcome("Jon", "partial", 1), Outcome("Mara", "failed", 2)])
    assert any("roll 1 was rolled for Mara, not Jon" in reason for reason in refused)
    assert any("roll 2 was rolled for Jon, not Mara" in reason for reason in refused)


def test_an_unknown_character() -> None:
    [reason] = reasons([], [Outcome("Gandalf", "succeeded")])
    assert "'Gandalf'" in reason and "Mara" in reason


def test_plain_dice_and_void_rolls_settle_nothing() -> None:
    assert any("plain dice" in reason for reason in reasons([DAMAGE], [Outcome("Mara", "succeeded", 3)]))
    assert any("void" in reason for reason in reasons([VOID], [Outcome("Jon", "failed", 4)]))
    # neither needs an outcome of its own
    assert reasons([DAMAGE, VOID], [Outcome("Jon", "failed")]) == []


def test_character_names_match_ignoring_case() -> None:
    assert reasons([MARA_PICKS], [Outcome("mara", "partial", 1)]) == []


def test_narration_showing_a_roll_id_or_tool_json_is_refused() -> None:
    outcomes = [Outcome("Mara", "partial", 1)]
    assert any("roll id 1" in r for r in reasons([MARA_PICKS], outcomes, "As roll 1 showed, the lock gives."))
    assert any("roll id 1" in r for r in reasons([MARA_PICKS], outcomes, "The lock gives (roll #1)."))
    json_text = 'The lock gives. {"roll": 1, "band": "Partial success"}'
    assert any("raw tool data" in r for r in reasons([MARA_PICKS], outcomes, json_text))
    assert any("raw tool data" in r for r in reasons([MARA_PICKS], outcomes, "Then roll_check(lockpicking) again."))


def test_ordinary_prose_about_rolling_is_fine() -> None:
    text = "The barrel starts to roll down the hill; in 1 breath it is gone, and the 2 guards laugh."
    assert reasons([MARA_PICKS], [Outcome("Mara", "partial", 1)], text) == []
