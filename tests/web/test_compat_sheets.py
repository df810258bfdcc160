"""The characters' sheets in the OpenAI-compatible answers, through the real openai client over HTTP: a round that
changed a sheet carries a collapsed sheet card after the dice cards (its changes on the summary, the sheets now
inside, escaped), a round that changed nothing carries none, and `/sheet` answers with the sheets now."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import call, reply
from tests.support.compat import cards, chat, gm_server, marker_of, streamed
from tests.support.paths import SAMPLE_WORLDS

HURT = {
    "changes": [
        {"character": "Odile", "variable": "grit", "action": "adjust", "amount": -1, "reason": "slipped <b>hard</b>"},
        {"character": "Odile", "variable": "carrying", "action": "remove", "item": "wax", "reason": "lost in the mud"},
    ]
}
NARRATION = "Odile slips on the weed at the gate, and the wax is lost in the mud."


@pytest.fixture
def heist(tmp_path: Path) -> Path:
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(SAMPLE_WORLDS / "harbour-heist", folder / "harbour-heist")
    return folder


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def gm(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_a_round_that_changes_a_sheet_carries_a_sheet_card(store: Store, heist: Path) -> None:
    script = [call("change_sheet", HURT), reply(NARRATION), reply("The clerk turns a page.")]
    with gm_server(store, heist, script, faces=[]) as served:
        first = chat(served, [user("I wade to the water gate.")], model="gm/harbour-heist")
        assert first.startswith(NARRATION)
        [card] = cards(first)
        summary, *inside = card.splitlines()[1:-1]
        assert summary == (
            "<summary>Sheet: Odile's grit 3 -&gt; 2 (-1) - slipped &lt;b&gt;hard&lt;/b&gt;;"
            " Odile's carrying: -1 wax (now 0) - lost in the mud</summary>"
        )
        assert card.startswith("<details>\n")  # closed, as the dice cards are
        assert inside[0] == (
            "Odile: grit 2 (0 to 3); coin 12 (0 or more); carrying blank manifest x3, shuttered lantern, roll of picks;"
            " state none (of soaked, spotted, sealed the manifests)"
        )
        assert first.index("</details>") < first.index("[gm-story]")  # the marker stays last
        history = [user("I wade to the water gate."), gm(first), user("I listen at the door.")]
        second = streamed(served, history, model="gm/harbour-heist")
        assert cards(second) == []  # nothing changed, no card
        shown = chat(served, [*history, gm(second), user("/sheet")], model="gm/harbour-heist")
        assert shown.startswith("<details open>\n<summary>Sheets now</summary>\nOdile: grit 2 (0 to 3);")
        opened = shown[: shown.index("</details>")]
        assert "Quell: grit 3 (0 to 3); coin 40 (0 or more); carrying Sorrel Line manifest x4" in opened
        assert marker_of(shown)[2] == 2  # a command plays no round
    story = marker_of(first)[0]
    sheet = store.story(story).sheet
    assert sheet is not None and sheet["Odile"]["grit"]["value"] == 2


def test_sheet_in_a_world_without_sheets_says_so(store: Store, worlds: Path) -> None:
    with gm_server(store, worlds, [reply("A gull screams.")]) as served:
        first = chat(served, [user("I look around.")])
        answer = chat(served, [user("I look around."), gm(first), user("/sheet")])
        assert answer.startswith("This story's characters have no sheet that changes.") and cards(answer) == []
