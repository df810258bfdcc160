"""Secret rolls (issue 16, item 4): a `secret` check's card is sealed for the player until the game master
reveals it (reveal_roll) or the story ends; the operator sees everything; the audit follows the sealed chain.

On SQLite and PostgreSQL. The harbour world's `notice` (2d6, absolute) is made secret here; faces 3 and 4
read 7, "Glimpse" (partial).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.engine.round import RoundResult
from gm.engine.tools.offered import tool_schemas
from gm.engine.transcript import transcript
from gm.errors import Conflict
from gm.integrity.audit import audit, since
from gm.store import Store
from gm.testing import call
from gm.transcript.shapes import TranscriptPublic
from gm.world.loading import load_world
from tests.support.paths import SAMPLE_WORLDS
from tests.support.rounds import narrate_roll, table
from tests.support.web import keeper_too, served_app
from tests.support.worlds import NOTICE, secret_world

STORY_ENDED = "this story has ended; its secret rolls are shown, and it plays no more rounds"


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_reveal_roll_is_offered_only_where_a_check_is_secret(tmp_path: Path, harbor: Path) -> None:
    def names(world: Path) -> list[str]:
        return [tool["function"]["name"] for tool in tool_schemas(load_world(world))]

    assert "reveal_roll" in names(secret_world(tmp_path / "secret"))
    assert "reveal_roll" not in names(harbor)


def test_a_secret_roll_is_sealed_until_revealed(store: Store, tmp_path: Path) -> None:
    world = secret_world(tmp_path / "harbour")
    revealed: dict[str, int] = {}
    script = [
        call("roll_check", NOTICE),
        narrate_roll("Something about the clerk nags at Mara."),
        lambda request: call("reveal_roll", {"roll": revealed["id"], "reason": "the clerk's lie comes out"}),
        call("narrate", {"narration": "Mara saw it after all: the clerk lied.", "outcomes": []}),
    ]
    events: list[str] = []

    async def play() -> tuple[str, RoundResult, TranscriptPublic, RoundResult]:
        async with table(store, script, faces=[3, 4]) as t:
            story = t.game.start_story(world)
            first = await t.game.play(story, "I watch the clerk.", events=lambda kind, data: events.append(kind))
            sealed = transcript(store, story, player=True)
            revealed["id"] = transcript(store, story).rounds[0].rolls[0].id
            second = await t.game.play(story, "I think back on what I saw.")
            return story, first, sealed, second

    story, first, sealed, second = run(play())
    assert isinstance(first, RoundResult) and first.rolls == []  # no card in the round's answer (chat, /open)
    assert "roll" not in events and "narration" in events  # nor in the stream
    assert first.outcomes[0].result == "partial"  # the outcome is told, as any outcome is: the dice stay secret
    # The player's transcript: no card, and a stub in the chain with the roll's hash but not its dice.
    assert sealed.rounds[0].rolls == []
    assert sealed.integrity is not None
    [stub] = sealed.integrity.rolls
    assert stub.sealed and stub.faces == [] and stub.band is None and stub.result is None and stub.hash
    report = audit(sealed)
    assert report.ok and report.sealed == 1, report.mismatches
    assert "1 secret roll sealed until revealed" in report.verdict()
    told = json.dumps([sealed.rounds[0].model_dump(mode="json"), stub.model_dump(mode="json")])
    assert "Glimpse" not in told and "[3, 4]" not in told and stub.salt is None
    # The operator sees everything, before and after.
    operator = transcript(store, story)
    assert operator.rounds[0].rolls[0].band == "Glimpse" and operator.rounds[0].rolls[0].faces == [[3, 4]]
    # Revealed in round 2: now the player's transcript shows the card, and it hashes to the stub's hash.
    assert isinstance(second, RoundResult)
    now = transcript(store, story, player=True)
    [card] = now.rounds[0].rolls
    assert (card.band, card.faces, card.sealed) == ("Glimpse", [[3, 4]], False)
    assert card.salt is not None and len(card.salt) == 32  # the salt the sealed hash was taken with
    later = audit(now)
    assert later.ok and later.sealed == 0
    assert since(sealed, now) == []


def test_a_forged_stub_breaks_the_chain(store: Store, tmp_path: Path) -> None:
    world = secret_world(tmp_path / "harbour")
    script = [call("roll_check", NOTICE), narrate_roll(), call("roll_check", NOTICE), narrate_roll()]

    async def play() -> str:
        async with table(store, script, faces=[3, 4, 6, 6]) as t:
            story = t.game.start_story(world)
            await t.game.play(story, "I watch the clerk.")
            await t.game.play(story, "I watch the clerk again.")
            return story

    shown = transcript(store, run(play()), player=True).model_dump(mode="json")
    assert audit(TranscriptPublic.model_validate(shown)).ok
    shown["integrity"]["rolls"][0]["hash"] = "0" * 64
    forged = audit(TranscriptPublic.model_validate(shown))
    assert not forged.ok and "prev_hash is not the hash of the roll before it" in str(forged.mismatches[0])


def test_the_end_of_the_story_reveals_its_secret_rolls(store: Store, tmp_path: Path) -> None:
    world = secret_world(tmp_path / "harbour")

    async def play() -> str:
        async with table(store, [call("roll_check", NOTICE), narrate_roll()], faces=[3, 4]) as t:
            story = t.game.start_story(world)
            await t.game.play(story, "I watch the clerk.")
            assert transcript(store, story, player=True).rounds[0].rolls == []
            await t.game.end(story)
            await t.game.end(story)  # ending twice is harmless
            with pytest.raises(Conflict, match=STORY_ENDED):
                await t.game.play(story, "One more thing.")
            return story

    story = run(play())
    ended = transcript(store, story, player=True)
    assert ended.story.ended and ended.rounds[0].rolls[0].band == "Glimpse"
    assert audit(ended).ok


def test_the_api_hides_a_secret_card_until_the_story_ends(store: Store, tmp_path: Path) -> None:
    worlds = tmp_path / "worlds"
    secret_world(worlds / "harbour")
    with served_app(store, worlds, keeper_too([call("roll_check", NOTICE), narrate_roll()]), faces=[3, 4]) as (
        client,
        _,
    ):
        started = client.post("/api/stories", json={"world": "harbour"}).json()
        story, auth = started["story"]["id"], {"Authorization": f"Bearer {started['token']}"}
        streamed = client.post(f"/api/stories/{story}/messages/stream", json={"text": "I watch."}, headers=auth)
        assert "event: roll" not in streamed.text and "Glimpse" not in streamed.text and "event: done" in streamed.text
        shown = client.get(f"/api/stories/{story}", headers=auth).json()
        assert shown["rounds"][0]["rolls"] == [] and shown["integrity"]["rolls"][0]["sealed"] is True
        assert "Glimpse" not in json.dumps([shown["rounds"], shown["integrity"]["rolls"]])
        audited = client.get(f"/api/stories/{story}/audit", headers=auth).json()
        assert audited["ok"] is True and audited["sealed"] == 1 and "Glimpse" not in json.dumps(audited)
        ended = client.post(f"/api/stories/{story}/end", headers=auth)
        assert ended.status_code == 200 and ended.json()["ended"] is True
        after = client.get(f"/api/stories/{story}", headers=auth).json()
        assert after["rounds"][0]["rolls"][0]["band"] == "Glimpse"
        refused = client.post(f"/api/stories/{story}/messages", json={"text": "Again."}, headers=auth)
        assert refused.status_code == 409 and refused.json() == {"error": STORY_ENDED}
        streamed = client.post(f"/api/stories/{story}/messages/stream", json={"text": "Again."}, headers=auth)
        assert streamed.status_code == 409 and streamed.json() == {"error": STORY_ENDED}  # before any stream
    shutil.rmtree(worlds)


def test_the_editor_marks_a_check_secret(tmp_path: Path) -> None:
    """The Dice form's Secret box: read from dice.json, saved back in the reference's order, and cleared."""
    from fastapi.testclient import TestClient

    from gm.editor.app import create_app
    from tests.support.editor_forms import BASE, SAMPLES, form_of, submit

    worlds = tmp_path / "worlds"
    shutil.copytree(SAMPLES, worlds)
    path = worlds / "storm-wall" / "dice.json"
    with TestClient(create_app(worlds), base_url=BASE) as client:
        fields = form_of(client.get("/worlds/storm-wall/dice").text)
        secret = [name for name in fields if name.endswith("-secret")]
        assert secret == ["checks-2-secret"]  # read_water, the sample's secret check
        saved = submit(client, "/worlds/storm-wall/dice", "save", {"checks-0-secret": "true"})
        assert saved.status_code == 303, saved.text
        checks = json.loads(path.read_text())["checks"]
        assert [check.get("secret", False) for check in checks] == [True, False, True]
        assert list(checks[0])[-2:] == ["secret", "bands"]
        fields = form_of(client.get("/worlds/storm-wall/dice").text)
        del fields["checks-0-secret"], fields["checks-2-secret"]
        saved = client.post("/worlds/storm-wall/dice", data={**fields, "action": "save"}, follow_redirects=False)
        assert saved.status_code == 303
        assert [check.get("secret", False) for check in json.loads(path.read_text())["checks"]] == [False] * 3


@pytest.mark.slow
@pytest.mark.subprocess
def test_a_rehearsal_rolls_a_secret_check_and_the_end_shows_it(tmp_path: Path, database_url: str) -> None:
    """`gm play worlds/storm-wall --model rehearsal`: Read the water is secret, so its card waits for /end."""
    import os
    import subprocess
    import sys

    samples = SAMPLE_WORLDS
    lines = "I read the water along the wall to judge where the seep will break through.\n/open\n/end\nMore.\n"
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gm"), "play", str(samples / "storm-wall"), "--model", "rehearsal"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GM_DATABASE_URL": database_url},
    )
    before, _, after = done.stdout.partition("The story has ended")
    assert "Read the water" in before, done.stdout + done.stderr  # the rehearsal rolled it, and narrates the outcome
    assert "[dice]" not in before and "No dice were rolled in the last round." in before  # no card, not in /open
    assert "[secret, round 1] Read the water" in after
    assert STORY_ENDED in done.stderr  # no round after the end


def test_a_secret_check_is_rolled_by_the_engine_even_at_the_table(store: Store, tmp_path: Path) -> None:
    world = secret_world(tmp_path / "harbour")

    async def play() -> Any:
        async with table(store, [call("roll_check", NOTICE), narrate_roll()], faces=[3, 4]) as t:
            story = t.game.start_story(world, settings={"dice_from": "player"})
            return story, await t.game.play(story, "I watch the clerk.")

    story, result = run(play())
    assert isinstance(result, RoundResult) and result.outcomes[0].result == "partial"  # no pause, no question
    [roll] = transcript(store, story).integrity.rolls  # type: ignore[union-attr]
    assert (roll.faces, roll.typed) == ([[3, 4]], False)
