"""The referee: which endings it refuses, and that it accepts honest ones."""

from __future__ import annotations

from gm.engine.referee import Outcome, Refusal, RoundRoll, referee

MARA_PICKS = RoundRoll(1, "check", "Mara", "lockpicking", "Partial success", "partial")
JON_CLIMBS = RoundRoll(2, "check", "Jon", "climb", "Failure", "failed")
DAMAGE = RoundRoll(3, "dice")
VOID = RoundRoll(4, "check", "Jon", "sneak", None, None, void=True)
CRITICAL = RoundRoll(5, "check", "Mara", "climb", "Critical success", "succeeded")
PLAYERS = RoundRoll(6, "player", "Mara")  # a /roll: told to the game master as a fact, settling nothing
CAST = ["Mara", "Jon", "The Warden"]
TEXT = "The lock gives, slowly, and the corridor beyond is dark."


def reasons(rolls: list[RoundRoll], outcomes: list[Outcome], narration: str = TEXT) -> list[str]:
    return [refusal.reason for refusal in referee(rolls, outcomes, narration, CAST)]


def refused(rolls: list[RoundRoll], outcomes: list[Outcome], narration: str = TEXT) -> list[Refusal]:
    return referee(rolls, outcomes, narration, CAST)


def test_an_honest_ending_stands() -> None:
    outcomes = [Outcome("Mara", "partial", 1), Outcome("Jon", "failed", 2), Outcome("The Warden", "succeeded")]
    assert reasons([MARA_PICKS, JON_CLIMBS, DAMAGE], outcomes) == []


def test_a_round_without_rolls_may_have_any_outcomes() -> None:
    assert reasons([], [Outcome("Mara", "succeeded")]) == []
    assert reasons([], []) == []


def test_the_opposite_result_is_refused_naming_roll_and_character() -> None:
    assert refused([MARA_PICKS], [Outcome("Mara", "succeeded", 1)]) == [
        Refusal(
            "roll 1 for Mara came out 'partial' (Partial success), but the outcome says 'succeeded'; the dice decide",
            1,
            "Mara",
        )
    ]


def test_critical_does_not_change_the_result() -> None:
    assert reasons([CRITICAL], [Outcome("Mara", "succeeded", 5)]) == []
    assert reasons([CRITICAL], [Outcome("Mara", "partial", 5)]) == [
        "roll 5 for Mara came out 'succeeded' (Critical success), but the outcome says 'partial'; the dice decide"
    ]


def test_one_roll_named_twice() -> None:
    assert refused([MARA_PICKS], [Outcome("Mara", "partial", 1), Outcome("Mara", "partial", 1)]) == [
        Refusal("roll 1 is named by outcomes 1 and 2; each roll settles one outcome", 1, "Mara")
    ]


def test_a_rolled_for_character_whose_outcome_ignores_the_roll() -> None:
    assert refused([MARA_PICKS], [Outcome("Mara", "succeeded")]) == [
        Refusal(
            "Mara was rolled for, but Mara's outcome does not name roll 1 (lockpicking for Mara: 'partial')", 1, "Mara"
        )
    ]


def test_a_roll_that_serves_no_outcome() -> None:
    assert refused([MARA_PICKS, JON_CLIMBS], [Outcome("Mara", "partial", 1)]) == [
        Refusal(
            "roll 2 (climb for Jon: 'failed') serves no outcome; add an outcome for Jon that names roll 2", 2, "Jon"
        )
    ]


def test_an_unknown_roll_id() -> None:
    assert refused([MARA_PICKS], [Outcome("Mara", "partial", 1), Outcome("Jon", "failed", 99)]) == [
        Refusal(
            "outcome 2 names roll 99, which was not rolled this round; name a roll that roll_check returned", 99, "Jon"
        )
    ]


def test_a_roll_named_for_the_wrong_character() -> None:
    # both rolls are named, so neither also "serves no outcome"
    assert refused([MARA_PICKS, JON_CLIMBS], [Outcome("Jon", "partial", 1), Outcome("Mara", "failed", 2)]) == [
        Refusal("roll 1 was rolled for Mara, not Jon; name it in Mara's outcome", 1, "Jon"),
        Refusal("roll 2 was rolled for Jon, not Mara; name it in Jon's outcome", 2, "Mara"),
    ]


def test_an_unknown_character() -> None:
    assert refused([], [Outcome("Gandalf", "succeeded")]) == [
        Refusal(
            "outcome 1 names 'Gandalf', who is not in this story; the characters are Jon, Mara, The Warden",
            None,
            "Gandalf",
        )
    ]


def test_plain_dice_and_void_rolls_settle_nothing() -> None:
    assert refused([DAMAGE], [Outcome("Mara", "succeeded", 3)]) == [
        Refusal(
            "roll 3 is plain dice, not a check, so it cannot settle an outcome; leave 'roll' out of Mara's outcome",
            3,
            "Mara",
        )
    ]
    assert refused([VOID], [Outcome("Jon", "failed", 4)]) == [
        Refusal("roll 4 for Jon was void (no band holds its value), so it settles nothing; leave 'roll' out", 4, "Jon")
    ]
    # neither needs an outcome of its own
    assert reasons([DAMAGE, VOID], [Outcome("Jon", "failed")]) == []


def test_a_players_roll_settles_no_outcome_and_needs_none() -> None:
    assert refused([PLAYERS], [Outcome("Mara", "succeeded", 6)]) == [
        Refusal(
            "roll 6 is a player's roll, not a check, so it cannot settle an outcome; "
            "leave 'roll' out of Mara's outcome",
            6,
            "Mara",
        )
    ]
    assert refused([PLAYERS], [Outcome("Mara", "succeeded")]) == []
    assert refused([PLAYERS], []) == []


def test_character_names_match_ignoring_case() -> None:
    assert reasons([MARA_PICKS], [Outcome("mara", "partial", 1)]) == []


def test_narration_showing_a_roll_id_or_tool_json_is_refused() -> None:
    outcomes = [Outcome("Mara", "partial", 1)]
    shows_id = Refusal("the narration shows the player roll id 1; ids are for outcomes, not for the story", 1, "Mara")
    shows_json = Refusal("the narration shows raw tool data; tell the story in prose and leave the JSON out")
    assert refused([MARA_PICKS], outcomes, "As roll 1 showed, the lock gives.") == [shows_id]
    assert refused([MARA_PICKS], outcomes, "The lock gives (roll #1).") == [shows_id]
    json_text = 'The lock gives. {"roll": 1, "band": "Partial success"}'
    assert refused([MARA_PICKS], outcomes, json_text) == [shows_json]
    assert refused([MARA_PICKS], outcomes, "Then roll_check(lockpicking) again.") == [shows_json]


def test_ordinary_prose_about_rolling_is_fine() -> None:
    text = "The barrel starts to roll down the hill; in 1 breath it is gone, and the 2 guards laugh."
    assert reasons([MARA_PICKS], [Outcome("Mara", "partial", 1)], text) == []


def test_an_outcome_naming_a_roll_whose_band_was_not_yet_read_is_refused_even_if_it_matches() -> None:
    unread = RoundRoll(1, "check", "Mara", "lockpicking", "Partial success", "partial", seen=False)
    assert refused([unread], [Outcome("Mara", "partial", 1)]) == [
        Refusal("you narrated before seeing roll 1's band; read it, then narrate", 1, "Mara")
    ]
    assert reasons([unread, JON_CLIMBS], [Outcome("Mara", "failed", 1), Outcome("Jon", "failed", 2)]) == [
        "you narrated before seeing roll 1's band; read it, then narrate"
    ]


def test_a_tool_call_left_as_text_is_raw_tool_data() -> None:
    raw_data = "the narration shows raw tool data; tell the story in prose and leave the JSON out"
    for text in [
        '{"name": "cast_spell", "arguments": {"spell": "fireball"}}',
        '<tool_call>{"name": "cast_spell"}</tool_call>',
        "<|python_tag|>brave_search.call(query='locks')",
        '```json\n{"parameters": {}}\n```',
    ]:
        assert reasons([], [], text) == [raw_data], text
    assert reasons([], [], "Mara names the ship: the Narration.") == []
