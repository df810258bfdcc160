"""Rehearsal in a world with a calendar: it passes time when the player's words say so, and the terminal shows it.

The test world starts at "Threeday, 11 Bloom 311 AL, 19:30 (day)"; its parts of the day are dawn from
05:00, day from 08:00 and night from 20:00.
"""

from __future__ import annotations

import asyncio
import copy
import re
from pathlib import Path
from typing import Any

import pytest

from gm import dice
from gm.engine.game import Game
from gm.rehearsal._clock import Advance, time_wanted
from gm.rehearsal.model import RehearsalModel
from gm.store import Store
from gm.world.calendar import calendar_from_data
from gm.world.loading import load_world
from tests.support.command_line import gm
from tests.support.paths import SAMPLE_WORLDS
from tests.support.worlds import CALENDAR, HARBOR_DICE, HARBOR_WORLD, write_world

SAMPLE = SAMPLE_WORLDS / "harbour-heist"


@pytest.fixture
def bloom(tmp_path: Path) -> Path:
    return write_world(tmp_path / "bloom", {**copy.deepcopy(HARBOR_WORLD), "calendar": CALENDAR}, HARBOR_DICE)


@pytest.mark.parametrize(
    ("text", "clock", "wanted"),
    [
        ("I wait until nightfall.", 0, (30, "minutes")),  # nightfall is the calendar's "night", at 20:00
        ("I wait until dawn", 0, (570, "minutes")),  # 19:30 to 05:00 the next day
        ("We hide till the day comes", 0, (750, "minutes")),  # a part of the calendar by its own name: day, 08:00
        ("I wait until midnight.", 0, (270, "minutes")),  # no part is called midnight: 00:00
        ("I wait until noon.", 0, (990, "minutes")),  # nor noon: 12:00 tomorrow
        ("I wait until night.", 30, (1, "days")),  # it is night already: the next night
        ("I rest for two hours.", 0, (2, "hours")),
        ("Mara waits for 45 minutes, then knocks.", 0, (45, "minutes")),
        ("We sail for three days", 0, (3, "days")),
        ("I wait half an hour", 0, (30, "minutes")),
        ("I sleep.", 0, (570, "minutes")),  # until morning: no part is called so, but dawn is, at 05:00
        ("Tomorrow I go to the market.", 0, (570, "minutes")),
        ("I wait for 400 days", 0, (30, "days")),  # never more than one call may pass
    ],
)
def test_words_that_say_time_passes(text: str, clock: int, wanted: tuple[int, str]) -> None:
    found = time_wanted(text, calendar_from_data(CALENDAR), clock)
    assert found is not None and (found.amount, found.unit) == wanted


@pytest.mark.parametrize(
    "text",
    ["I pick the lock.", "The tower is a two-hour walk away.", "I wait.", "I wait until the guard looks away."],
)
def test_words_that_do_not(text: str) -> None:
    assert time_wanted(text, calendar_from_data(CALENDAR), 0) is None


def test_the_reason_is_the_players_sentence() -> None:
    found = time_wanted("I pick the lock. Then I wait until dawn!", calendar_from_data(CALENDAR), 0)
    assert found == Advance(570, "minutes", "Then I wait until dawn")


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_a_rehearsal_round_moves_the_clock_through_the_tool_then_rolls(store: Store, bloom: Path) -> None:
    async def play() -> Any:
        game = Game(RehearsalModel(load_world(bloom)), store, source=dice.GivenFaces([12]))
        story = game.start_story(bloom)
        waited = await game.play(story, "I wait until nightfall.")
        picked = await game.play(story, "I wait an hour, then attempt something risky.")
        await game.settle()
        return story, waited, picked

    story, waited, picked = run(play())
    assert waited.time == "Threeday, 11 Bloom 311 AL, 20:00 (night)"
    assert waited.narration.startswith(
        "(rehearsal) Time passes (30 minutes): it is now Threeday, 11 Bloom 311 AL, 20:00 (night).\n"
    )
    assert picked.clock == 90 and [roll.check for roll in picked.rolls] == ["attempt"]
    assert picked.judge is not None and picked.judge.verdicts[0].told_as == picked.outcomes[0].result
    assert store.story(story).clock == 90


def test_the_sample_calendar_world_plays_in_the_terminal_and_shows_the_time() -> None:
    moves = "I wait until midnight.\nI pick the lock of the water gate.\nI sleep.\n"
    played = gm("play", SAMPLE, "--model", "rehearsal", stdin=moves)
    assert played.returncode == 0 and played.stderr == ""
    lines = played.stdout.splitlines()
    assert "It is Lanternday, 28 Low Water 1187 AQ, 22:40 (night)." in lines
    times = [line for line in lines if line.startswith("[time] ")]
    assert times == [
        "[time] Moorday, 29 Low Water 1187 AQ, 00:00 (small hours)",
        "[time] Moorday, 29 Low Water 1187 AQ, 00:00 (small hours)",  # picking a lock takes no time to speak of
        "[time] Moorday, 29 Low Water 1187 AQ, 07:00 (morning)",
    ]
    assert any(line.startswith("[dice] Lockwork and fine hands - Odile: ") for line in lines)
    story = re.search(r"story ([0-9a-f]{32})", played.stdout)
    assert story is not None
    shown = gm("show", story.group(1)).stdout
    assert "Now: Moorday, 29 Low Water 1187 AQ, 07:00 (morning)" in shown
