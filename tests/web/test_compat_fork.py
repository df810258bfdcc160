"""A forked chat (Open WebUI's "Fork chat": the history so far under a new chat id) becomes a story of its own:
it shares its parent's rounds and rolls up to the fork, its dice record goes on from the parent's hash chain
(so `gm audit` checks one unbroken chain and says where it forked), and the two chats go on apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from gm.engine.transcript import transcript
from gm.errors import Conflict
from gm.integrity.audit import audit
from gm.store import FORKED_FROM, Store
from gm.testing import reply
from gm.web.compat.messages import EDITED_FIRST
from tests.support.compat import cards, chat, gm_server, marker_of, retell
from tests.support.rounds import narrate_roll, roll_mara


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def gm(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def chat_id(name: str) -> dict[str, Any]:
    return {"extra_headers": {"X-OpenWebUI-Chat-Id": name, "X-OpenWebUI-User-Id": "u1"}}


def rolled(narration: str) -> list[Any]:
    return [roll_mara(), narrate_roll(narration)]


@pytest.mark.slow
def test_a_forked_chat_is_a_story_sharing_its_parents_rounds_and_chain(store: Store, worlds: Path) -> None:
    script = [*rolled("One."), *rolled("Two."), *rolled("Fork three."), retell("Fork three, again.")]
    script += [*rolled("Parent three."), *rolled("Fork four.")]
    with gm_server(store, worlds, script, faces=[11, 5, 15, 3, 17]) as served:
        one = chat(served, [user("a")], **chat_id("parent"))
        two = chat(served, [user("a"), gm(one), user("b")], **chat_id("parent"))
        parent = marker_of(two)[0]
        shared = [user("a"), gm(one), user("b"), gm(two)]
        forked = chat(served, [*shared, user("c, in the fork")], **chat_id("fork"))
        fork = marker_of(forked)[0]
        assert fork != parent and forked.startswith("Fork three.") and marker_of(forked)[2] == 3
        again = chat(served, [*shared, user("c, in the fork")], **chat_id("fork"))  # its Try Again
        assert again.startswith("Fork three, again.") and marker_of(again)[0] == fork
        assert cards(again) == cards(forked)  # the same dice
        parents = chat(served, [*shared, user("c, at home")], **chat_id("parent"))
        assert marker_of(parents)[:1] == (parent,) and marker_of(parents)[2] == 3
        four = chat(served, [*shared, user("c, in the fork"), gm(again), user("d")], **chat_id("fork"))
        assert marker_of(four)[0] == fork and marker_of(four)[2] == 4
        texts = {story: [r.player_text for r in store.rounds(story)] for story in (parent, fork)}
        assert texts[parent] == ["a", "b", "c, at home"]
        assert texts[fork] == ["a", "b", "c, in the fork", "d"]
        assert store.story(fork).settings[FORKED_FROM]["story"] == parent
        assert len(store.stories()) == 2

        # One chain from the parent's genesis: the parent's first two rolls, then the fork's own two.
        shown = transcript(store, fork)
        assert shown.integrity is not None and [roll.seq for roll in shown.integrity.rolls] == [1, 2, 3, 4]
        inherited = [roll.id for roll in shown.integrity.rolls[:2]]
        assert inherited == [roll.id for roll in store.story_rolls(parent)[:2]]
        report = audit(shown)
        assert report.ok, report.mismatches
        assert f"forked from story {parent} at round 2 (its first 2 rolls)" in report.verdict()
        assert audit(transcript(store, parent)).ok
        # Changing an inherited roll in the parent breaks the fork's audit too: it is the same chain.
        tampered = shown.model_copy(deep=True)
        assert tampered.integrity is not None
        tampered.integrity.rolls[0] = tampered.integrity.rolls[0].model_copy(update={"faces": [[20]]})
        assert not audit(tampered).ok

        with pytest.raises(Conflict, match=f"story {fork} was forked from this one"):
            store.delete_story(parent)
        store.delete_story(fork)
        store.delete_story(parent)  # once its fork is gone
        assert store.stories() == []


def test_the_chat_id_is_a_hint_never_a_key(store: Store, worlds: Path) -> None:
    """A request claiming another chat's id opens nothing without that chat's marker; with a marker, a different
    chat id makes a fork of its own rather than a turn in the other chat's story."""
    with gm_server(store, worlds, [reply("Hello."), reply("Mine.")]) as served:
        first = chat(served, [user("a")], **chat_id("theirs"))
        story = marker_of(first)[0]
        with pytest.raises(openai.BadRequestError) as refused:  # their id, no marker, other words: nothing opens
            chat(served, [user("something else")], **chat_id("theirs"))
        assert refused.value.body["message"] == EDITED_FIRST  # type: ignore[index]
        copied = chat(served, [user("a"), gm(first), user("b")], **chat_id("mine"))  # their marker, my chat id
        assert copied.startswith("Mine.") and marker_of(copied)[0] != story  # a fork of my own
        assert [r.player_text for r in store.rounds(story)] == ["a"] and len(store.stories()) == 2
