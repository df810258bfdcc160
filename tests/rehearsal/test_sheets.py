"""The rehearsal stand-in keeps harbour-heist's sheets by its documented rules (gm.rehearsal._sheets), through
change_sheet, tells every change, and passes the sheet judge with its own narrations."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from gm import dice
from gm.engine.game import Game
from gm.engine.transcript import transcript
from gm.integrity.audit import audit
from gm.rehearsal.model import RehearsalModel
from gm.store import Store
from gm.transcript.sheets import ChangePublic
from gm.world.loading import load_world
from gm.world.sheet import Change
from tests.support.paths import SAMPLE_WORLDS

HEIST = SAMPLE_WORLDS / "harbour-heist"


def text_of(change: ChangePublic) -> str:
    return Change.from_json(change.model_dump()).text()


def test_rehearsal_changes_sheets_by_its_rules(store: Store, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(HEIST, tmp_path / "harbour-heist"))
    texts = [
        "I creep along the quay, trying not to be spotted.",  # attempt: 5 + 2 - 11 = -4, Failure
        "I pick the strongroom lock and take the brass seal from its box.",  # lockwork: 15 + 4 - 11 = 8, Success
        "I press the wax onto the manifests and pay 5 coin to Dace.",  # lockwork again: 15, Success
    ]

    async def play() -> tuple[str, list[str]]:
        game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces([5, 15, 15]))
        story = game.start_story(folder)
        told = [(await game.play(story, text)).narration for text in texts]
        await game.settle()
        return story, told

    story, told = asyncio.run(play())
    whole = transcript(store, story)
    assert [[text_of(change) for change in round_.changes] for round_ in whole.rounds] == [
        ["Odile's grit 3 -> 2 (-1)", "Odile's state: spotted on"],
        ["Odile's carrying: +1 brass seal (now 1)"],
        ["Odile's coin 12 -> 7 (-5)", "Odile's carrying: -1 wax (now 0)"],
    ]
    assert "(rehearsal) Sheet: Odile's grit 3 -> 2 (-1)." in told[0].splitlines()
    assert "(rehearsal) Sheet: Odile's coin 12 -> 7 (-5)." in told[2].splitlines()
    sheet = store.story(story).sheet
    assert sheet is not None
    odile = sheet["Odile"]
    assert odile["grit"]["value"] == 2 and odile["coin"]["value"] == 7
    assert [item["name"] for item in odile["carrying"]["items"]] == [
        "blank manifest",
        "shuttered lantern",
        "roll of picks",
        "brass seal",
    ]
    assert odile["state"]["conditions"] == {"soaked": False, "spotted": True, "sealed the manifests": False}
    assert audit(whole).ok


def test_a_band_effect_spares_the_wound_rule_and_a_success_clears_a_condition(store: Store, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(HEIST, tmp_path / "harbour-heist"))
    texts = [
        "I climb the wet wall, trying not to be spotted.",  # attempt: 1 steps Failure down to Critical failure
        "I slip back into the dark so I am no longer spotted.",  # attempt: 20, Critical success
    ]

    async def play() -> str:
        game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces([1, 2, 20]))
        story = game.start_story(folder)
        for text in texts:
            await game.play(story, text)
        await game.settle()
        return story

    whole = transcript(store, asyncio.run(play()))
    assert [[text_of(change) for change in round_.changes] for round_ in whole.rounds] == [
        ["Odile's grit 3 -> 1 (-2, effect)", "Odile's state: spotted on"],  # no second loss of grit
        ["Odile's state: spotted off"],
    ]


def test_a_round_told_again_makes_the_same_changes(store: Store, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(HEIST, tmp_path / "harbour-heist"))

    async def play() -> tuple[str, str]:
        game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces([5]))
        story = game.start_story(folder)
        await game.play(story, "I creep along the quay, trying not to be spotted.")
        again = await game.regenerate(story)
        await game.settle()
        return story, again.narration

    story, narration = asyncio.run(play())
    whole = transcript(store, story)
    assert [[text_of(change) for change in round_.changes] for round_ in whole.rounds] == [
        ["Odile's grit 3 -> 2 (-1)", "Odile's state: spotted on"]
    ]
    assert "(rehearsal) Sheet: Odile's grit 3 -> 2 (-1)." in narration.splitlines()
    assert audit(whole).ok


def test_a_round_told_again_tells_its_band_effects_again(store: Store, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(HEIST, tmp_path / "harbour-heist"))

    async def play() -> str:
        game = Game(RehearsalModel(load_world(folder)), store, source=dice.GivenFaces([1, 2, 2]))
        story = game.start_story(folder)
        await game.play(story, "I climb the wet wall.")  # a natural 1: Critical failure, -1d2 grit
        again = await game.regenerate(story)
        await game.settle()
        return again.narration

    # The facts of a retelling do not say what the effects changed: the rehearsal says which effect was made again.
    lines = asyncio.run(play()).splitlines()
    assert "(rehearsal) Sheet: Critical failure makes its effects again (-1d2 grit of self)." in lines
