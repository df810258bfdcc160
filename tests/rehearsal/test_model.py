"""The rehearsal model: rounds played offline through the real tools, referee, store and memory keeper.

The test world lists three checks, in this order:
- `swim` (Swimming), 2d6 read as it is: 6 or less "Sink", 7 to 9 "Struggle", 10 or more "Swim across".
- `lockpicking` (Lockpicking), 1d20 + skill over a target. The rehearsal's target for an over check is
  the dice's mean rounded half up: 1d20's mean is (1 + 20) / 2 = 10.5, so 11. Mara's skill is 3, so a
  face of 12 reads 12 + 3 - 11 = 4, "Partial success"; 20 reads 12, "Critical success".
- `medicine` (Medicine), d% under a target: the target minus the face. Mara's `medicine` is 45, so a
  face of 30 reads 45 - 30 = 15, "Success".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.engine.game import Game
from gm.engine.round import RoundResult
from gm.errors import RehearsalStuck, RoundFailed
from gm.rehearsal._checks import catch_all, choose_check, is_catch_all, ranked_checks, score, stem, words
from gm.rehearsal.model import RehearsalModel
from gm.rules.checks import Check
from gm.rules.validation import parse_rules
from gm.store import Store
from gm.transcript.shapes import OutcomePublic, RoundPublic
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS
from tests.support.worlds import HARBOR_WORLD, write_world

BANDS_OVER = [
    {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
    {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
    {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
    {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
    {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
]

WORLD: dict[str, Any] = {
    "title": "Rehearsal Bay",
    "premise": "A harbour town where a world's author tries out their checks.",
    "characters": [
        {
            "name": "Mara",
            "role": "player",
            "description": "A locksmith's daughter.",
            # strength comes first: the under check must take the variable that matches, not the first one
            "variables": {"strength": 60, "skill": 3, "medicine": 45, "mood": "wary"},
        },
        {"name": "Jon", "role": "npc", "variables": {"skill": -1}},
    ],
}

DICE: dict[str, Any] = {
    "checks": [
        {
            "key": "swim",
            "name": "Swimming",
            "use": "Swimming through rough water or diving for something underwater.",
            "dice": "2d6",
            "bands": [
                {"label": "Sink", "max": 6, "result": "failed"},
                {"label": "Struggle", "min": 7, "max": 9, "result": "partial"},
                {"label": "Swim across", "min": 10, "result": "succeeded"},
            ],
        },
        {
            "key": "lockpicking",
            "name": "Lockpicking",
            "use": "Picking a lock or opening a locked door, chest or safe.",
            "dice": "1d20",
            "compare": "over",
            "modifier": "skill",
            "bands": BANDS_OVER,
        },
        {
            "key": "medicine",
            "name": "Medicine",
            "use": "Treating wounds, tending the sick or identifying a poison.",
            "dice": "d%",
            "compare": "under",
            "bands": [
                {"label": "Failure", "max": -1, "result": "failed"},
                {"label": "Success", "min": 0, "max": 29, "result": "succeeded"},
                {"label": "Critical success", "min": 30, "result": "succeeded", "critical": True},
            ],
        },
    ]
}


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def play_rounds(
    store: Store, folder: Path, texts: list[str], faces: list[int], facts: tuple[str, ...] = ()
) -> tuple[Game, str, list[RoundResult]]:
    """Play `texts` as rounds of a new story on `folder` with the rehearsal model, then let memory settle."""
    game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces(faces))
    story = game.start_story(folder)
    results = [await game.play(story, text, facts=facts) for text in texts]
    await game.settle()
    return game, story, results


@pytest.fixture
def bay(tmp_path: Path) -> Path:
    return write_world(tmp_path / "bay", WORLD, DICE)


def test_words_are_lower_cased_stemmed_and_common_words_dropped() -> None:
    assert words("I'm Picking the LOCKS of the harbour_office, trying to spot them") == {
        "pick",
        "lock",
        "harbour",
        "offic",
        "spot",
    }
    assert [stem(word) for word in ["picked", "swimming", "spotted", "glass", "falling", "speed", "is"]] == [
        "pick",
        "swim",
        "spot",
        "glass",
        "fall",
        "speed",
        "is",
    ]
    # "hide" meets "hiding" (a final silent e goes), but "free" and a short "use" keep theirs
    assert [stem(word) for word in ["hide", "hides", "hiding", "hid", "free", "use", "closed", "close"]] == [
        "hid",
        "hid",
        "hid",
        "hid",
        "free",
        "use",
        "clos",
        "clos",
    ]


def test_a_lock_picking_text_rolls_lockpicking_through_the_tools_and_narrates_it(store: Store, bay: Path) -> None:
    _, story, [result] = run(play_rounds(store, bay, ["I pick the lock of the harbour office."], [12]))
    [roll] = result.rolls
    # lockpicking shares "pick" and "lock" with the text; swim and medicine share nothing
    assert roll.kind == "check" and roll.check == "lockpicking" and roll.character == "Mara"
    assert (roll.faces, roll.modifier, roll.target, roll.value) == ([[12]], 3, 11, 4)
    assert (roll.band, roll.result, roll.critical) == ("Partial success", "partial", False)
    assert roll.reason == "I pick the lock of the harbour office."
    assert result.narration.startswith("(rehearsal)")
    assert "Lockpicking: Partial success (partial)" in result.narration
    assert result.outcomes == [OutcomePublic(character="Mara", result="partial", roll=roll.id)]
    assert result.refusals == [] and result.model_calls == 3  # narrate accepted the first time, and judged once
    assert result.judge is not None and [(v.character, v.told_as) for v in result.judge.verdicts] == [
        ("Mara", "partial")
    ]  # the rehearsal's judge read its own narration
    [record] = store.rounds(story)
    assert RoundPublic.from_record(record, load_world(bay)).rolls == result.rolls and record.refusals == []


@pytest.mark.parametrize(
    ("text", "faces", "check", "band"),
    [
        ("I swim across to the moored boat.", [5, 6], "swim", "Swim across"),  # 5 + 6 = 11
        ("Mara dives for the key underwater.", [1, 2], "swim", "Sink"),  # shares "underwater"; 1 + 2 = 3
        ("I open the locked chest.", [1], "lockpicking", "Failure"),  # 1 + 3 - 11 = -7
    ],
)
def test_the_check_sharing_most_words_is_rolled(
    store: Store, bay: Path, text: str, faces: list[int], check: str, band: str
) -> None:
    _, _, [result] = run(play_rounds(store, bay, [text], faces))
    [roll] = result.rolls
    assert (roll.check, roll.band) == (check, band)
    assert result.refusals == []


def test_a_critical_band_gets_its_own_line(store: Store, bay: Path) -> None:
    _, _, [result] = run(play_rounds(store, bay, ["I pick the lock."], [20]))
    assert result.rolls[0].band == "Critical success"  # 20 + 3 - 11 = 12
    first, second = result.narration.split("\n")
    assert "Critical success (succeeded)" in first
    assert second.startswith("(rehearsal)") and "critical" in second
    assert result.outcomes[0].result == "succeeded" and result.refusals == []


def test_an_under_check_takes_the_characters_matching_variable_as_its_target(store: Store, bay: Path) -> None:
    _, _, [result] = run(play_rounds(store, bay, ["I tend the wounded sailor."], [30]))
    [roll] = result.rolls
    assert roll.check == "medicine"
    assert roll.target == 45  # Mara's medicine, not strength (60), skill (3) or d%'s middle (50)
    assert (roll.value, roll.band, roll.result) == (15, "Success", "succeeded")
    assert result.outcomes == [OutcomePublic(character="Mara", result="succeeded", roll=roll.id)]


def test_an_under_check_with_no_matching_variable_rolls_under_the_middle(store: Store, tmp_path: Path) -> None:
    plain = {**WORLD, "characters": [{"name": "Mara", "role": "player", "variables": {"luck": 9}}]}
    folder = write_world(tmp_path / "plain", plain, {"checks": [DICE["checks"][2]]})
    _, _, [result] = run(play_rounds(store, folder, ["I treat the poison."], [50]))
    [roll] = result.rolls
    assert roll.target == 50  # d%'s mean is 50.5, rounded half down
    assert (roll.value, roll.band) == (0, "Success")


def test_a_text_matching_no_check_ends_in_plain_text_without_rolls(store: Store, bay: Path) -> None:
    _, story, [result] = run(play_rounds(store, bay, ["I wait for the rain to stop."], []))
    assert result.rolls == [] and result.outcomes == [] and result.refusals == []
    assert result.model_calls == 1
    assert result.narration.startswith("(rehearsal)") and "Nothing here needed a roll" in result.narration
    assert store.story(story).rounds == 1


def test_a_diceless_world_is_rehearsed_in_plain_text(store: Store, tmp_path: Path) -> None:
    folder = write_world(tmp_path / "diceless", HARBOR_WORLD, None)
    _, _, [result] = run(play_rounds(store, folder, ["I pick the lock."], []))
    assert result.rolls == [] and result.model_calls == 1 and result.refusals == []
    assert "(rehearsal)" in result.narration and "no checks" in result.narration


def test_the_player_named_is_rolled_for_and_a_check_they_cannot_roll_is_passed_over(
    store: Store, tmp_path: Path
) -> None:
    two = {
        **WORLD,
        "characters": [*WORLD["characters"], {"name": "Ines", "role": "player", "variables": {"medicine": 20}}],
    }
    folder = write_world(tmp_path / "two", two, DICE)
    texts = [
        "Mara picks the lock while Ines keeps watch.",  # Mara is named first: lockpicking for her
        "Ines picks the lock and swims to the boat.",  # Ines has no skill: lockpicking passed over; swim 3 + 4 = 7
        "Ines picks the lock.",  # nothing else matches: no roll
    ]
    _, _, results = run(play_rounds(store, folder, texts, [12, 3, 4]))
    assert [(r.check, r.character, r.band) for r in results[0].rolls] == [("lockpicking", "Mara", "Partial success")]
    assert [(r.check, r.character, r.band) for r in results[1].rolls] == [("swim", "Ines", "Struggle")]
    assert results[1].outcomes[0].character == "Ines"
    assert results[2].rolls == [] and "cannot be rolled for Ines" in results[2].narration
    assert all(result.refusals == [] for result in results)


def test_facts_are_told_instead_of_rolling(store: Store, bay: Path) -> None:
    fact = "Mara rolled 2d6+1 for 'pick the lock': 9 = 4 + 4 + 1"
    _, _, [result] = run(play_rounds(store, bay, ["I pick the lock."], [], facts=(fact,)))
    assert result.rolls == [] and result.model_calls == 1 and result.refusals == []
    assert result.narration.startswith("(rehearsal)") and fact in result.narration


def test_a_void_roll_is_described_in_plain_text_without_its_id(store: Store, tmp_path: Path) -> None:
    gappy = {"checks": [{**DICE["checks"][1], "bands": [{"label": "Clean", "min": 0, "result": "succeeded"}]}]}
    folder = write_world(tmp_path / "gappy", WORLD, gappy)
    _, _, [result] = run(play_rounds(store, folder, ["I pick the lock."], [1]))
    [roll] = result.rolls
    assert roll.void is True and roll.value == -7  # 1 + 3 - 11
    assert result.narration.startswith("(rehearsal) I pick the lock. The roll landed in no band")
    assert f"roll {roll.id}" not in result.narration
    assert result.outcomes == [] and result.refusals == [] and result.model_calls == 2


def test_the_memory_keeper_writes_rehearsal_summaries(store: Store, bay: Path) -> None:
    _, story, _ = run(play_rounds(store, bay, ["I pick the lock of the harbour office. Then I run."], [12]))
    [memory] = store.memories(story)
    assert memory.summary == "(rehearsal) I pick the lock of the harbour office. Outcomes: Mara: partial."
    calls = store.model_calls(story)
    assert [call.purpose for call in calls] == ["game_master", "game_master", "judge", "memory"]
    assert all(call.estimated and call.http_attempts == 1 and call.prompt_tokens > 0 for call in calls)


def test_old_summaries_are_folded_into_a_short_rehearsal_summary(store: Store, tmp_path: Path) -> None:
    folder = write_world(tmp_path / "diceless", HARBOR_WORLD, None)
    texts = [f"I wait, hour {number}." for number in range(1, 10)]
    _, story, _ = run(play_rounds(store, folder, texts, []))
    # rounds 1-4 and 5-8 are remembered in two batches (the default batch, gm.engine.memory); eight summaries
    # that came four at a time exceed the five then allowed, so the oldest four are folded and four kept
    folded = store.story(story)
    assert folded.summary_through == 4
    expected = " ".join(f"Round {n}: I wait, hour {n}. Nothing was at stake." for n in range(1, 5))
    assert folded.summary == "(rehearsal) " + expected


def test_a_refused_ending_fails_the_round_instead_of_looping(store: Store, bay: Path) -> None:
    class Liar(RehearsalModel):
        def _narrate(self, player_text: str, rolled: list[dict[str, Any]]) -> dict[str, Any]:
            told = super()._narrate(player_text, rolled)
            return {**told, "outcomes": [{**outcome, "result": "succeeded"} for outcome in told["outcomes"]]}

    async def play() -> tuple[Liar, str]:
        model = Liar(load_world(bay))
        game = Game(model, store, source=dice.GivenFaces([12]))
        story = game.start_story(bay)
        with pytest.raises(RoundFailed, match="rehearsal model's narration was refused"):
            await game.play(story, "I pick the lock.")
        return model, story

    model, story = run(play())
    assert model.calls == 3  # roll, the lying narrate, then it gave up at once
    assert store.rounds(story) == []


def test_a_refused_plain_narration_is_not_said_again(bay: Path) -> None:
    messages = [
        {"role": "system", "content": "You are the game master."},
        {"role": "user", "content": "I wait."},
        {"role": "assistant", "content": "(rehearsal) I wait."},
        {"role": "user", "content": "[game engine] Your answer was empty; narrate what happens."},
    ]
    with pytest.raises(RehearsalStuck, match="empty") as raised:
        run(RehearsalModel(load_world(bay)).complete(messages, tools=[]))
    assert isinstance(raised.value, RoundFailed)


def test_a_completion_looks_like_a_real_models(bay: Path) -> None:
    model = RehearsalModel(load_world(bay))
    tools = [{"type": "function", "function": {"name": "roll_check", "parameters": {}}}]
    completion = run(model.complete([{"role": "user", "content": "I pick the lock."}], tools=tools))
    [call] = completion.tool_calls
    assert (call.id, call.name, completion.finish_reason, completion.attempts) == (
        "rehearsal_1",
        "roll_check",
        "tool_calls",
        1,
    )
    arguments = json.loads(str(call.arguments))
    assert arguments == {"check": "lockpicking", "character": "Mara", "reason": "I pick the lock.", "target": 11}
    assert completion.raw_message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "rehearsal_1", "type": "function", "function": {"name": "roll_check", "arguments": call.arguments}}
        ],
    }
    assert completion.usage.estimated

    # a memory keeper's request: 40 + 45 characters in, so 22 tokens; 41 characters out, so 11 tokens
    keeper = [
        {"role": "system", "content": "S" * 40},
        {"role": "user", "content": "Player: I wait.\n\nNarration: x\n\nOutcomes: none"},
    ]
    summary = run(model.complete(keeper))
    assert summary.content == "(rehearsal) I wait. Nothing was at stake."
    assert summary.tool_calls == [] and summary.finish_reason == "stop"
    assert summary.raw_message == {"role": "assistant", "content": "(rehearsal) I wait. Nothing was at stake."}
    assert (summary.usage.prompt_tokens, summary.usage.completion_tokens, summary.usage.estimated) == (22, 11, True)


@pytest.mark.parametrize("words_said", ["I sneak past the guard.", "I search the warehouse."])
def test_words_no_check_matches_roll_the_worlds_catch_all(words_said: str) -> None:
    world = load_world(SAMPLE_WORLDS / "harbour-heist")
    assert ranked_checks(world, words_said) == []  # no word in common with any check
    chosen = choose_check(world, words_said)
    assert chosen is not None and chosen[0].key == "attempt" and chosen[1].name == "Odile"


def test_only_a_use_that_covers_any_action_makes_a_catch_all() -> None:
    def check(use: str) -> Check:
        return parse_rules({"checks": [{**DICE["checks"][1], "use": use}]}, "test").checks[0]

    assert is_catch_all(check("Any risky action no other check covers."))
    assert is_catch_all(check("Use it for ANY bold or desperate actions."))
    assert not is_catch_all(check("Any trained skill when failure would cost something: persuading, acting."))
    assert not is_catch_all(check("A risky action of any sort."))
    # ward-nine's checks are all specific, so unmatched words there roll nothing
    ward = load_world(SAMPLE_WORLDS / "ward-nine")
    assert catch_all(ward) is None and choose_check(ward, "I sing a song.") is None


def test_hiding_matches_a_check_that_says_hide(tmp_path: Path) -> None:
    world = load_world(SAMPLE_WORLDS / "harbour-heist")
    rules = {"checks": [{**DICE["checks"][1], "key": "stealth", "name": "Stealth", "use": "To hide from a watcher."}]}
    folder = write_world(tmp_path / "hidden", WORLD, rules)
    chosen = choose_check(load_world(folder), "I keep hiding behind the crates.")
    assert chosen is not None and chosen[0].key == "stealth"
    assert world.rules is not None and score(world.rules["attempt"], "I keep hiding.") == 1
