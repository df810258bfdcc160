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
    # down to Critical failure. Then Odile 20 + 2 against Quell 15 + 3 reads 4, Ahead, and the natural 20
    # sends it to Outclassed them.
    faces = [1, 9, 20, 15]

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
    assert [roll.notation for roll in whole.integrity.rolls] == ["2d20kh1", "1d20-1d20"]  # type: ignore[union-attr]
    report = audit(whole)
    assert report.ok and report.derived == 2, report.mismatches
