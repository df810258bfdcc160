"""A secret roll stays sealed under /v1 as everywhere (issue 40, hole 2): a chat's `/open` shows no faces or band
of a secret roll until the game master reveals it or the story ends, as the API's transcript and the terminal's
`/open` keep it sealed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gm.store import Store
from gm.testing import call
from tests.support.compat import cards, chat, gm_server
from tests.support.rounds import narrate_roll
from tests.support.worlds import NOTICE, secret_world


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def gm(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def test_open_in_a_chat_keeps_a_secret_roll_sealed(store: Store, tmp_path: Path) -> None:
    worlds = tmp_path / "worlds"
    secret_world(worlds / "harbour")
    script = [call("roll_check", NOTICE), narrate_roll("Something about the clerk nags at Mara.")]
    with gm_server(store, worlds, script, faces=[3, 4]) as served:
        history = [user("I watch the clerk.")]
        first = chat(served, history)
        assert cards(first) == []  # the round's answer shows no card of it
        opened = chat(served, [*history, gm(first), user("/open")])
        assert cards(opened) == [] and "Glimpse" not in opened and "3 + 4" not in opened and "(3, 4)" not in opened
        assert opened.startswith("The last round's dice are secret until they are revealed, or the story ends.")
