"""`POST /api/stories/{id}/messages` without FastAPI's machinery (gm.web._fast_messages): the same answers as the
FastAPI route, for rounds and for every refusal, on SQLite and PostgreSQL.

The FastAPI route is reached with a content type FastAPI reads as JSON and the fast path hands on
(`application/vnd.gm+json`), so each answer of one can be compared with the other's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import reply
from gm.web._fast_messages import FastMessages
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import served_app

JSON = {"Content-Type": "application/json"}
HANDED_ON = {"Content-Type": "application/vnd.gm+json"}  # FastAPI reads it as JSON; the fast path does not take it


def fast_route(client: Any) -> FastMessages:
    """The app's FastMessages middleware (the stack is built by the first request)."""
    layer = client.app.middleware_stack
    while not isinstance(layer, FastMessages):
        layer = layer.app
    return layer


def start(client: Any) -> tuple[str, str]:
    answer = client.post("/api/stories", json={"world": "harbour"})
    assert answer.status_code == 201, answer.text
    return answer.json()["story"]["id"], answer.json()["token"]


def send(client: Any, story: str, body: bytes, headers: dict[str, str]) -> Any:
    return client.post(f"/api/stories/{story}/messages", content=body, headers=headers)


def test_a_round_is_answered_as_the_fastapi_route_answers_it(store: Store, worlds: Path) -> None:
    script = [roll_mara(), narrate_roll(), roll_mara(), narrate_roll()]
    with served_app(store, worlds, script, faces=[11, 11], transport="http") as (client, _):
        story, token = start(client)
        auth = {"Authorization": f"Bearer {token}"}
        fast = send(client, story, b'{"text": "I pick the lock."}', {**JSON, **auth})
        assert fast_route(client).answered == 1
        handed_on = send(client, story, b'{"text": "I pick the lock."}', {**HANDED_ON, **auth})
        assert fast_route(client).answered == 1  # FastAPI's route played the second round
        assert fast.status_code == handed_on.status_code == 200, (fast.text, handed_on.text)
        assert fast.headers["content-type"] == handed_on.headers["content-type"] == "application/json"
        shown = client.get(f"/api/stories/{story}", headers=auth).json()["rounds"]
        assert fast.json() == {"round": {**shown[0], "regenerated": False}, "asking": None}
        assert handed_on.json() == {"round": {**shown[1], "regenerated": False}, "asking": None}
        assert fast.json()["round"]["rolls"][0]["band"] == "Partial success"  # 11 + 3 - 12 = 2


def test_a_plain_round_and_a_command_take_the_fast_path(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, [reply("The fog thickens."), reply("You see the dice land.")]) as (client, _):
        story, token = start(client)
        auth = {"Authorization": f"bearer  {token} "}  # any case of the scheme, spaces around the token
        plain = send(client, story, '{"text": "Je regarde le brouillard…"}'.encode(), {**auth})  # no content type
        rolled = send(client, story, b'{"text": "/roll 2d6+1 pick the lock"}', {**JSON, **auth})
        assert (plain.status_code, rolled.status_code) == (200, 200), (plain.text, rolled.text)
        assert fast_route(client).answered == 2
        assert plain.json()["round"]["narration"] == "The fog thickens."
        assert plain.json()["round"]["player_text"] == "Je regarde le brouillard…"
        [roll] = rolled.json()["round"]["rolls"]
        assert (roll["kind"], roll["notation"], roll["reason"]) == ("player", "2d6+1", "pick the lock"), roll


@pytest.mark.parametrize(
    ("body", "headers", "status", "words"),
    [
        (b'{"text": "hello"}', {}, 401, "needs its token"),
        (b'{"text": "hello"}', {"Authorization": "Basic abc"}, 401, "needs its token"),
        (b'{"text": "hello"}', {"Authorization": "Bearer"}, 401, "needs its token"),
        (b'{"text": "hello"}', {"Authorization": "Bearer    "}, 401, "needs its token"),
        (b'{"text": "hello"}', {"Authorization": "Bearer wrong"}, 404, "for this token"),
        (b'{"text": "   "}', "token", 422, "text: must hold more than spaces"),
        (b'{"text": ""}', "token", 422, "text"),
        (b'{"words": "hello"}', "token", 422, "text"),
        (b'{"text": 7}', "token", 422, "text"),
        (b'["hello"]', "token", 422, "body"),
        (b"", "token", 422, ""),
        (b'{"text": "hello"', "token", 422, "not valid JSON"),
        (b'{"text": "a\x01b"}', "token", 422, "not valid JSON (invalid control character at character 12)"),
        (b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b"}", "token", 422, "not valid JSON (it is nested too deeply)"),
        (b'{"text": "/dice hidden"}', "token", 400, "PUT /api/stories/{id}/settings"),
        (b'{"text": "/quit"}', "token", 400, "terminal chat"),
        (b'{"text": "/roll 2d"}', "token", 400, ""),
    ],
)
def test_every_refusal_is_the_fastapi_routes_own(
    store: Store, worlds: Path, body: bytes, headers: Any, status: int, words: str
) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, token = start(client)
        if headers == "token":
            headers = {"Authorization": f"Bearer {token}"}
        fast = send(client, story, body, {**JSON, **headers})
        handed_on = send(client, story, body, {**HANDED_ON, **headers})
        assert fast.status_code == handed_on.status_code == status, (fast.text, handed_on.text)
        assert fast.json() == handed_on.json()
        assert set(fast.json()) == {"error"} and words in fast.json()["error"]
        assert fast.headers["content-type"] == "application/json"


def test_unknown_and_ended_stories_are_refused_alike(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, token = start(client)
        auth = {"Authorization": f"Bearer {token}"}
        for headers in (JSON, HANDED_ON):
            unknown = send(client, "feedface", b'{"text": "hello"}', {**headers, **auth})
            assert unknown.status_code == 404
            assert unknown.json() == {"error": "there is no story 'feedface' for this token"}
        assert client.post(f"/api/stories/{story}/end", headers=auth).status_code == 200
        fast = send(client, story, b'{"text": "hello"}', {**JSON, **auth})
        handed_on = send(client, story, b'{"text": "hello"}', {**HANDED_ON, **auth})
        assert fast.status_code == handed_on.status_code == 409
        assert fast.json() == handed_on.json()


def test_other_requests_go_to_fastapi(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, token = start(client)
        auth = {"Authorization": f"Bearer {token}"}
        assert client.get(f"/api/stories/{story}/messages", headers=auth).status_code == 405
        slash_path = f"/api/stories/{story}/messages/"
        slash = client.post(slash_path, json={"text": "hi"}, headers=auth, follow_redirects=False)
        assert slash.status_code in (307, 404)
        deeper = client.post(f"/api/stories/{story}/x/messages", json={"text": "hi"}, headers=auth)
        assert deeper.status_code == 404
        too_large = send(client, story, b'{"text": "' + b"a" * 70_000 + b'"}', {**JSON, **auth})
        assert too_large.status_code == 413  # BodyLimit, before the fast path
        assert fast_route(client).answered == 0


LONG_NUMBER = b"1" * 4_301  # one digit over Python's limit for converting a string to an int


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/stories", b'{"world": "harbour", "extra": ' + LONG_NUMBER + b"}"),
        ("/api/stories", b'{"world": ' + LONG_NUMBER + b"}"),
        ("messages", b'{"text": "hello", "extra": ' + LONG_NUMBER + b"}"),
        ("/v1/chat/completions", b'{"model": "gm/harbour", "messages": [], "n": ' + LONG_NUMBER + b"}"),
    ],
)
def test_a_number_over_4300_digits_is_the_documented_422(store: Store, worlds: Path, path: str, body: bytes) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, token = start(client)
        path = f"/api/stories/{story}/messages" if path == "messages" else path
        answer = client.post(path, content=body, headers={**JSON, "Authorization": f"Bearer {token}"})
        assert answer.status_code == 422, answer.text
        assert "not valid JSON (a number in it has more than 4,300 digits)" in answer.text
