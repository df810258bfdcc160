"""The rehearsal stand-in exercises issue 16's table rules in the harbour-heist sample: an edge the
player's words ask for, a natural that steps the band, and an opposed check against a named opponent."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from gm import dice
from gm.engine.game import Game
from gm.engine.transcript import transcript
from gm.integrity.audit import audit
from gm.integrity.seeds import reveal
from gm.rehearsal.model import RehearsalModel
from gm.store import Store
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS

HEIST = SAMPLE_WORLDS / "harbour-heist"


def test_rehearsal_rolls_an_edge_a_natural_and_an_opposed_check(store: Store, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(HEIST, tmp_path / "harbour-heist"))
    texts = [
        "With disadvantage, a risky attempt: I climb the wet wall in the dark.",
        "I outwit Quell and palm the key from his desk.",
    ]
    # 2d20kl1 keeps 1: 1 + 2 (nerve) - 11 (the target, 1d20's mean) = -8, Failure; the natural 1 steps it
    # down to Critical failure, whose effect rolls 1d2 (a 2) off Odile's grit. Then Odile 20 + 2 against
    # Quell 15 + 3 reads 4, Ahead, and the natural 20 sends it to Outclassed them, which rolls 1d2 (a 1) off
    # Quell's grit.
    faces = [1, 9, 2, 20, 15, 1]

    async def play() -> tuple[str, list[str]]:
        game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces(faces))
        story = game.start_story(folder)
        told = [(await game.play(story, text)).narration for text in texts]
        await game.settle()
        return story, told

    story, told = asyncio.run(play())
    whole = transcript(store, story)
    first, second = (round_.rolls[0] for round_ in whole.rounds)
    assert (first.check, first.edge, first.notation, first.value) == ("attempt", "disadvantage", "2d20kl1", -8)
    assert (first.band, first.stepped_from, first.natural) == (
        "Critical failure",
        "Failure",
        "natural 1: stepped down from Failure",
    )
    assert (second.check, second.opponent, second.notation, second.value) == ("outwit", "Quell", "1d20-1d20", 4)
    assert (second.band, second.natural) == ("Outclassed them", "natural 20: sent to Outclassed them from Ahead")
    assert "with disadvantage" in told[0] and "Natural 1: stepped down from Failure" in told[0]
    assert "against Quell" in told[1]
    assert [outcome.character for outcome in whole.rounds[1].outcomes] == ["Odile"]
    assert [(change.character, change.variable, change.before, change.after) for change in whole.rounds[0].changes] == [
        ("Odile", "grit", 3, 1)
    ]
    assert [(change.character, change.after, change.source) for change in whole.rounds[1].changes] == [
        ("Quell", 2, "effect")
    ]
    assert audit(whole).ok


def test_a_fair_story_derives_edge_and_opposed_faces_again_from_its_seed(store: Store, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(HEIST, tmp_path / "harbour-heist"))
    texts = ["With advantage, a risky attempt: I climb the wet wall.", "I outwit Quell and palm the key."]

    async def play() -> str:
        game = Game(RehearsalModel(load_world(folder)), store)
        story = game.start_story(folder, fair=True)
        for text in texts:
            await game.play(story, text)
        await game.settle()
        return story

    story = asyncio.run(play())
    reveal(store, story)
    whole = transcript(store, story)
    notations = [roll.notation for roll in whole.integrity.rolls]  # type: ignore[union-attr]
    # A critical band's effect rolls its amount (1d2 of grit) after the check, from the same seed.
    assert [notation for notation in notations if notation != "1d2"] == ["2d20kh1", "1d20-1d20"]
    report = audit(whole)
    assert report.ok and report.derived == len(notations), report.mismatches
