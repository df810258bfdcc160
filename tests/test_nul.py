"""NUL characters (and half surrogate pairs) from every side, on SQLite and PostgreSQL alike (issue 10, defect 1).

PostgreSQL's text cannot hold U+0000, so such text is refused where it comes in: a player's line is a
400 (one `error:` line in the chat), a model's text a tool error or refusal it can act on, a world
file a problem that `gm check` reports. SQLite behaves the same.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from gm.engine.commands import parse_command
from gm.errors import CommandError, RoundFailed, UnstorableText
from gm.store import Attempt, RollRecord, Store
from gm.testing import Step, call, reply
from gm.world.loading import check_world
from tests.support.command_line import gm, story_id_in
from tests.support.rounds import narrate_roll, roll_mara, table, tool_results
from tests.support.web import served_app
from tests.support.worlds import HARBOR_DICE, HARBOR_WORLD, write_world


def start(client: Any) -> tuple[str, dict[str, str]]:
    answer = client.post("/api/stories", json={"world": "harbour"})
    assert answer.status_code == 201, answer.text
    return answer.json()["story"]["id"], {"Authorization": f"Bearer {answer.json()['token']}"}


@pytest.mark.parametrize(
    ("text", "status", "words"),
    [
        ("hi\u0000", 400, "U+0000"),
        ("/roll 1d6 \u0000", 400, "U+0000"),
        ("\u0000/roll 1d6", 400, "U+0000"),
        ("/roll 1d6 half a pair \ud800", 422, "unicode"),  # refused by the body's schema already
    ],
)
def test_a_player_line_holding_a_nul_is_a_400(store: Store, worlds: Path, text: str, status: int, words: str) -> None:
    with served_app(store, worlds, [reply("never sent")]) as (client, model):
        story, auth = start(client)
        for path in ("messages", "messages/stream"):
            # json.dumps writes the NUL as \u0000 and the half pair as \ud800, as a browser would
            body = json.dumps({"text": text}).encode()
            answer = client.post(
                f"/api/stories/{story}/{path}", content=body, headers={**auth, "Content-Type": "application/json"}
            )
            assert answer.status_code == status, answer.text
            assert words in answer.json()["error"]
        assert [r for r in model.requests if "tools" in r] == []  # nothing was sent to the model
        shown = client.get(f"/api/stories/{story}", headers=auth).json()
        assert shown["story"]["rounds"] == 0
        with store.session() as session:
            assert list(session.exec(select(RollRecord))) == []  # the /roll was not rolled either


def test_a_nul_in_a_story_id_is_a_404(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        _, auth = start(client)
        for path in ("/api/stories/%00", "/api/stories/ab%00cd", "/api/stories/%ED%A0%80"):
            answer = client.get(path, headers=auth)
            assert answer.status_code == 404, answer.text
            assert "no story" in answer.json()["error"]
    assert store.stories()[0].title == "The Harbour Job"


def test_parse_command_names_the_character() -> None:
    with pytest.raises(CommandError, match=r"NUL character \(U\+0000\) at position 3"):
        parse_command("hi\x00 there")


def test_a_world_holding_a_nul_is_a_problem_gm_check_reports(tmp_path: Path) -> None:
    world = write_world(tmp_path / "nul-title", {**HARBOR_WORLD, "title": "The Harbour\u0000 Job"})
    result = gm("check", world)
    assert result.returncode == 1, result
    assert "world.json $.title" in result.stdout and "U+0000" in result.stdout
    dice = json.loads(json.dumps(HARBOR_DICE))
    dice["checks"][1]["bands"][0]["label"] = "Miss\u0000 it"
    paired = write_world(tmp_path / "nul-label", HARBOR_WORLD, dice)
    [problem] = check_world(paired)
    assert (problem.file, problem.path) == ("dice.json", "$.checks[1].bands[0].label")
    variables = json.loads(json.dumps(HARBOR_WORLD))
    variables["characters"][0]["variables"] = {"home\u0000town": "Vey"}
    keyed = write_world(tmp_path / "nul-key", variables, None)
    [problem] = check_world(keyed)
    assert problem.path == "$.characters[0].variables" and "U+0000" in problem.message


def test_a_world_holding_a_nul_is_not_offered_by_the_server(store: Store, worlds: Path) -> None:
    write_world(worlds / "broken", {**HARBOR_WORLD, "title": "Broken\u0000"})
    with served_app(store, worlds, []) as (client, _):
        assert client.post("/api/stories", json={"world": "broken"}).status_code == 422
        listed = {world["name"]: world for world in client.get("/api/worlds").json()}
        assert listed["harbour"]["problem"] is None
        assert "U+0000" in listed["broken"]["problem"]


@pytest.mark.parametrize(
    ("hostile", "where"),
    [
        (roll_mara(), None),  # control: nothing hostile
        (call("roll_check", {"check": "attempt", "character": "Mara", "target": 12, "reason": "lo\u0000ck"}), "reason"),
        (call("roll_dice", {"notation": "1d6", "reason": "\u0000"}), "reason"),
        (call("roll_dice", {"notation": "1d6\u0000", "reason": "x"}), "notation"),
    ],
)
def test_a_nul_in_a_tool_argument_is_a_tool_error(
    store: Store, hostile: Step, where: str | None, tmp_path: Path
) -> None:
    def honest(request: dict[str, Any]) -> Step:
        if any("band" in result for result in tool_results(request)):
            return narrate_roll()(request)
        return reply("The harbour is quiet.")

    async def play() -> None:
        async with table(store, [hostile, honest], faces=[11, 3]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            result = await played.game.play(story, "I try the lock.")
            errors = [r for r in tool_results(played.master.requests[-1]) if "error" in r]
            if where is None:
                assert errors == [] and result.refusals == []
            else:
                [error] = errors
                assert where in error["error"] and "U+0000" in error["error"]
                assert result.refusals == [error["error"]]
            assert all("\x00" not in roll.reason for roll in result.rolls)
            played.master.assert_done()

    asyncio.run(play())


@pytest.mark.parametrize("how", ["narrate", "plain"])
def test_a_nul_in_the_story_text_is_refused(store: Store, how: str, tmp_path: Path) -> None:
    if how == "narrate":
        hostile = call("narrate", {"narration": "The lock\u0000 gives.", "outcomes": []})
        honest = call("narrate", {"narration": "The lock gives.", "outcomes": []})
    else:
        hostile, honest = reply("The lock\u0000 gives."), reply("The lock gives.")

    async def play() -> None:
        async with table(store, [hostile, honest]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            result = await played.game.play(story, "I try the lock.")
            assert result.narration == "The lock gives."
            [refusal] = result.refusals
            assert "U+0000" in refusal and "narration" in refusal
            played.master.assert_done()

    asyncio.run(play())


def test_a_nul_in_the_memory_keepers_summary_is_neutralised(store: Store, tmp_path: Path) -> None:
    async def play() -> str:
        async with table(store, [reply("The lock gives.")], [reply("Mara\u0000 picked the lock.")]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            await played.game.play(story, "I try the lock.")
            await played.game.settle()
            return story

    [memory] = store.memories(asyncio.run(play()))
    assert memory.summary == "Mara\ufffd picked the lock."


def test_piped_gm_play_refuses_a_nul_line_and_plays_on(database_url: str, harbor: Path) -> None:
    from tests.support.rounds import fake
    from tests.support.web import keeper_too

    model = fake(keeper_too([reply("The first answer."), reply("The second answer.")])).start()
    try:
        env = {
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "k",
            "GM_MODEL": model.model,
            "GM_DATABASE_URL": database_url,
        }
        result = gm("play", harbor, stdin="first\nnul\x00 here\n/roll 1d6 \x00\nsecond\n", env=env)
    finally:
        model.close()
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert "The first answer." in result.stdout and "The second answer." in result.stdout
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 2 and all(line.startswith("error: ") and "U+0000" in line for line in errors), errors
    shown = json.loads(gm("show", story_id_in(result.stdout), "--json", env={"GM_DATABASE_URL": database_url}).stdout)
    assert [r["player_text"] for r in shown["rounds"]] == ["first", "second"]


def test_the_library_refuses_a_nul_before_writing_anything(store: Store, tmp_path: Path) -> None:
    async def play() -> None:
        async with table(store, []) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            with pytest.raises(UnstorableText, match="the player's text holds a NUL"):
                await played.game.play(story, "hi\x00")
            assert attempts(store) == []

    asyncio.run(play())


def attempts(store: Store) -> list[Attempt]:
    with store.session() as session:
        return list(session.exec(select(Attempt)))


def broken_accept(*arguments: Any) -> Any:
    raise OperationalError("INSERT INTO rounds ...", {"player_text": "secret words"}, Exception("disk full"))


def test_a_failed_write_fails_the_attempt_with_its_model_calls(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "accept_round", broken_accept)

    async def play() -> str:
        async with table(store, [roll_mara(), narrate_roll()], faces=[11]) as played:
            story = played.game.start_story(write_world(tmp_path / "w"))
            with pytest.raises(RoundFailed, match="internal error"):
                await played.game.play(story, "I try the lock.")
            return story

    story = asyncio.run(play())
    [attempt] = attempts(store)
    assert attempt.status == "failed" and "internal error" in (attempt.error or "")
    calls = store.model_calls(story)
    # the roll, the narration and the judge's reading of it: every call the attempt made is kept
    assert [(call.purpose, call.attempt_id) for call in calls] == [("game_master", attempt.id)] * 2 + [
        ("judge", attempt.id)
    ]
    assert [roll.attempt_id for roll in store.rolls_of_attempt(attempt.id)] == [attempt.id]  # its roll stays


def test_a_failed_write_ends_the_stream_with_a_failed_event(
    store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "accept_round", broken_accept)
    with served_app(store, worlds, [reply("The lock gives.")]) as (client, _):
        story, auth = start(client)
        answer = client.post(f"/api/stories/{story}/messages/stream", json={"text": "I try."}, headers=auth)
        assert answer.status_code == 200
        events = [line.removeprefix("event: ") for line in answer.text.splitlines() if line.startswith("event: ")]
        assert events[-1] == "failed", answer.text
        assert "internal error" in answer.text.splitlines()[-2]
        assert [attempt.status for attempt in attempts(store)] == ["failed"]
