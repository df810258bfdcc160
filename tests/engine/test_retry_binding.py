"""A failed attempt's check rolls bind the next attempt at the round (issue 40, hole 7): a retry cannot get fresh
dice by asking for another check. The roll is in play from the start, given as a fact with its band; the new
attempt must tell it, whichever check it rolls; and the audit flags a round that leaves one untold."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from gm.engine.round import RoundResult
from gm.engine.transcript import transcript
from gm.errors import RoundFailed
from gm.integrity.audit import audit
from gm.store import Store
from gm.testing import Step, call
from tests.support.rounds import narrate_roll, roll_mara, table, tool_results

FACT = re.compile(r"this round was already rolled: roll (\d+), [^(]+\((succeeded|partial|failed)")
# The judge reads one outcome per character; this round tells two of Mara's, so it is not judged here.
UNJUDGED = {"judge": "off"}
NOTICE = call("roll_check", {"check": "notice", "character": "Mara", "reason": "watch the clerk"})
LIE = narrate_roll("Mara sees everything at once.", "succeeded")  # notice reads 7 (3 + 4), a partial: refused


def narrate_all(request: dict[str, Any]) -> Step:
    """Narrate every check roll this attempt has seen, each with its own result: those it rolled, and those it
    was given as facts (a failed attempt's)."""
    rolled = [(r["roll"], r["result"]) for r in tool_results(request) if "band" in r]
    text = " ".join(str(message.get("content") or "") for message in request["messages"])
    rolled += [(int(roll), result) for roll, result in FACT.findall(text)]
    outcomes = [{"character": "Mara", "result": result, "roll": roll} for roll, result in dict(rolled).items()]
    return call(
        "narrate", {"narration": "Mara half-sees the clerk's trick, and the lock half-gives.", "outcomes": outcomes}
    )


def test_a_retry_that_rolls_another_check_must_tell_the_failed_attempts_roll(store: Store, harbor: Path) -> None:
    script = [NOTICE, LIE, LIE, LIE, LIE, roll_mara(), narrate_roll("The lock gives."), narrate_all]
    requests: list[dict[str, Any]] = []

    async def play() -> tuple[str, RoundResult]:
        async with table(store, script, faces=[3, 4, 11]) as t:
            story = t.game.start_story(harbor, settings=UNJUDGED)
            with pytest.raises(RoundFailed):
                await t.game.play(story, "I watch the clerk.")
            result = await t.game.play(story, "I try the lock instead.")
            requests.extend(t.master.requests)  # type: ignore[attr-defined]
            assert isinstance(result, RoundResult)
            return story, result

    story, result = asyncio.run(play())
    rolls = store.story_rolls(story)
    assert [roll.check_key for roll in rolls] == ["notice", "attempt"]
    first_of_retry = str(requests[5]["messages"])
    assert "Notice" in first_of_retry and "earlier attempt" in first_of_retry  # told from the start, with its band
    assert "notice" in " ".join(result.refusals)  # narrating only the new roll was refused: the old one is untold
    assert sorted(roll.check for roll in result.rolls) == ["attempt", "notice"]
    assert len(result.outcomes) == 2
    assert audit(transcript(store, story)).ok


def test_the_audit_flags_a_round_that_leaves_a_failed_attempts_roll_untold(store: Store, harbor: Path) -> None:
    script = [NOTICE, LIE, LIE, LIE, LIE, roll_mara(), narrate_roll("The lock gives."), narrate_all]

    async def play() -> str:
        async with table(store, script, faces=[3, 4, 11]) as t:
            story = t.game.start_story(harbor, settings=UNJUDGED)
            with pytest.raises(RoundFailed):
                await t.game.play(story, "I watch the clerk.")
            await t.game.play(story, "I try the lock instead.")
            return story

    story = asyncio.run(play())
    shown = transcript(store, story)
    # As the round was accepted before the fix: the retry's own roll told, the failed attempt's left out.
    [round_] = shown.rounds
    notice = next(roll.id for roll in round_.rolls if roll.check == "notice")
    round_.rolls = [roll for roll in round_.rolls if roll.id != notice]
    round_.outcomes = [outcome for outcome in round_.outcomes if outcome.roll != notice]
    report = audit(shown)
    assert not report.ok
    assert any("was rolled for this round but the round leaves it untold" in str(m) for m in report.mismatches)
