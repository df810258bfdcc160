"""The story API over HTTP (TestClient), with a fake model (in process; over HTTP for one round), on SQLite
and PostgreSQL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import reply
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import served_app, start_story


@pytest.fixture
def worlds(tmp_path: Path, harbor: Path) -> Path:
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(harbor, folder / "harbour")
    (folder / "../outside").resolve().mkdir(exist_ok=True)
    return folder


def test_worlds_and_a_round_with_a_roll(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, [roll_mara(), narrate_roll()], faces=[11], transport="http") as (client, _):
        assert [w["name"] for w in client.get("/api/worlds").json()] == ["harbour"]
        story, auth = start_story(client)
        answer = client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=auth)
        assert answer.status_code == 200, answer.text
        played = answer.json()["round"]
        assert played["narration"] == "The lock gives with a soft click."
        [roll] = played["rolls"]
        # 11 + 3 (Mara's skill) - 12 = 2: a partial success
        assert (roll["check"], roll["character"], roll["band"], roll["value"]) == (
            "attempt",
            "Mara",
            "Partial success",
            2,
        )
        shown = client.get(f"/api/stories/{story}", headers=auth).json()
        assert shown["rounds"][0]["rolls"][0]["dice"] == "1d20 (11) = 11"
        assert shown["story"]["rounds"] == 1
        assert played == {**shown["rounds"][0], "regenerated": False}  # the answer is the round, as in the transcript


def test_stories_are_private(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start_story(client)
        assert client.get(f"/api/stories/{story}").status_code == 401
        wrong = client.get(f"/api/stories/{story}", headers={"Authorization": "Bearer nope"})
        unknown = client.get("/api/stories/feedface", headers=auth)
        assert wrong.status_code == unknown.status_code == 404
        assert "error" in wrong.json()
        other, _ = start_story(client)
        assert client.get(f"/api/stories/{other}", headers=auth).status_code == 404  # one story's token opens only it


def test_the_api_token_guards_story_creation(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, [], api_token="s3cret") as (client, _):
        assert client.post("/api/stories", json={"world": "harbour"}).status_code == 401
        bad = client.post("/api/stories", json={"world": "harbour"}, headers={"Authorization": "Bearer x"})
        assert bad.status_code == 401
        good = client.post("/api/stories", json={"world": "harbour"}, headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 201


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "words"),
    [
        ("post", "/api/stories", {"world": "../outside"}, 404, "no world"),
        ("post", "/api/stories", {"world": "nowhere"}, 404, "no world"),
        ("post", "/api/stories", {"world": "harbour", "dice": "sometimes"}, 422, "dice"),
        ("post", "/api/stories", {}, 422, "world"),
        ("post", "STORY/messages", {"text": ""}, 422, "text"),
        ("post", "STORY/messages", {"text": "/roll 2d6+x pick"}, 400, "column 5"),
        ("post", "STORY/messages", {"text": "/fly"}, 400, "no command /fly"),
        ("post", "STORY/messages", {"text": "/dice hidden"}, 400, "settings"),
        ("post", "STORY/messages", {"text": "x" * 5000}, 422, "text"),
        ("put", "STORY/settings", {"dice": "maybe"}, 422, "dice"),
        ("post", "STORY/regenerate", None, 409, "no round"),  # the client's mistake, not the model's
    ],
)
def test_bad_input_is_a_4xx_with_one_sentence(
    store: Store, worlds: Path, method: str, path: str, body: Any, status: int, words: str
) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start_story(client)
        url = path.replace("STORY", f"/api/stories/{story}")
        answer = getattr(client, method)(url, json=body, headers=auth)
        assert answer.status_code == status, answer.text
        assert words in answer.json()["error"]


def test_malformed_and_oversized_bodies(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start_story(client)
        broken = client.post(
            f"/api/stories/{story}/messages", content=b"{not json", headers={**auth, "Content-Type": "application/json"}
        )
        assert broken.status_code == 422 and "error" in broken.json()
        huge = client.post(
            f"/api/stories/{story}/messages",
            content=b"x" * 100_000,
            headers={**auth, "Content-Type": "application/json"},
        )
        assert huge.status_code == 413 and "bytes" in huge.json()["error"]


def test_dice_setting_roll_command_and_regenerate(store: Store, worlds: Path) -> None:
    script = [reply("The dice clatter on the quay."), reply("Told again, the dice still clatter.")]
    with served_app(store, worlds, script, faces=[4, 4]) as (client, model):
        story, auth = start_story(client, dice="hidden")
        assert client.get(f"/api/stories/{story}", headers=auth).json()["story"]["settings"]["dice"] == "hidden"
        changed = client.put(f"/api/stories/{story}/settings", json={"dice": "shown"}, headers=auth)
        assert changed.json()["settings"]["dice"] == "shown"
        rolled = client.post(f"/api/stories/{story}/messages", json={"text": "/roll 2d6+1 pick the lock"}, headers=auth)
        [roll] = rolled.json()["round"]["rolls"]
        assert (roll["kind"], roll["total"], roll["character"]) == ("player", 9, "Mara")
        fact = model.requests[0]["messages"][-1]["content"]
        assert "Mara rolled 2d6+1 for 'pick the lock': 9 = 4 + 4 + 1" in fact
        again = client.post(f"/api/stories/{story}/regenerate", headers=auth).json()["round"]
        assert again["narration"] == "Told again, the dice still clatter." and again["rolls"][0]["id"] == roll["id"]
        assert again["regenerated"] and not rolled.json()["round"]["regenerated"]


def test_a_round_as_server_sent_events(store: Store, worlds: Path) -> None:
    lie = narrate_roll("It opens at once.", "succeeded")
    with served_app(store, worlds, [roll_mara(), lie, narrate_roll()], faces=[11]) as (client, _):
        story, auth = start_story(client)
        with client.stream(
            "POST", f"/api/stories/{story}/messages/stream", json={"text": "I pick the lock."}, headers=auth
        ) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            text = "".join(answer.iter_text())
        events = [
            (block.split("\n")[0][len("event: ") :], json.loads(block.split("\n")[1][len("data: ") :]))
            for block in text.strip().split("\n\n")
        ]
        kinds = [kind for kind, _ in events]
        assert kinds == ["working", "roll", "working", "refusal", "working", "narration", "done"]
        assert events[1][1]["band"] == "Partial success"
        assert "'partial'" in events[3][1]["reason"]
        assert events[-1][1]["round"]["narration"] == "The lock gives with a soft click."


def test_a_failed_round_streams_failed(store: Store, worlds: Path) -> None:
    lie = narrate_roll("It opens at once.", "succeeded")
    with served_app(store, worlds, [roll_mara(), lie, lie, lie, lie], faces=[11]) as (client, _):
        story, auth = start_story(client)
        plain = client.post(f"/api/stories/{story}/messages", json={"text": "I pick the lock."}, headers=auth)
        assert plain.status_code == 502 and "agreement with the dice" in plain.json()["error"]
        assert client.get(f"/api/stories/{story}", headers=auth).json()["rounds"] == []


def test_openapi_documents_the_endpoints(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        paths = client.get("/openapi.json").json()["paths"]
        assert {"/api/worlds", "/api/stories", "/api/stories/{story_id}", "/api/stories/{story_id}/messages"} <= set(
            paths
        )


def test_unknown_paths_and_methods_answer_in_the_same_shape(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        missing = client.get("/api/nothing-here")
        assert missing.status_code == 404 and missing.json() == {"error": "there is no /api/nothing-here"}
        wrong = client.delete("/api/worlds")
        assert wrong.status_code == 405 and "DELETE" in wrong.json()["error"]


def test_gm_serve_mounts_the_editor_for_this_machine_only(store: Store, worlds: Path) -> None:
    from fastapi.testclient import TestClient

    from gm.engine.game import Game
    from gm.web.app import create_app

    app = create_app(Game(model=None, store=store), worlds)  # type: ignore[arg-type]  # no round is played
    with TestClient(app, base_url="http://127.0.0.1") as local:
        page = local.get("/editor/")
        assert page.status_code == 200 and "harbour" in page.text
    with TestClient(app, base_url="http://attacker.example") as remote:
        assert remote.get("/editor/").status_code == 400
        assert remote.get("/api/worlds").status_code == 400  # so is the API, against DNS rebinding
