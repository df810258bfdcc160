"""The ACCESS TEST of the shared table (docs/table.md): every route of the app, taken from the FastAPI app's own
routes (so a route added later is tried too), is called with every token but the owner's of the story that holds
the secrets: no token, a wrong one, each seat's, and another story's owner and seat. Nothing may leak: no
whisper to another character, no other seat's secret roll (its random salt is the marker), no other token; no
route may answer 5xx; and afterwards no seat has acted, rolled or been revoked as another."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Mount, Route

from gm import dice
from gm.engine.game import Game
from gm.store import Store
from gm.web.app import create_app
from tests.support.rounds import function_model
from tests.support.table import table_master, table_worlds

BODIES = {  # a plausible body for each kind of route, by the end of its path
    "messages": {"text": "I look around."},
    "messages/stream": {"text": "I look around."},
    "faces": {"faces": "3"},
    "faces/stream": {"faces": "3"},
    "seats": {"character": "Odile"},
    "settings": {"rounds": "free", "dice": "hidden"},
    "seat": {"dice": "hidden"},
    "stories": {"world": "table"},
    "completions": {"model": "gm/table", "messages": [{"role": "user", "content": "I look; whisper to Mara: X"}]},
}


def routes(app: Any) -> list[tuple[str, str]]:
    """Every (method, path) the app answers: its own routes, those of the routers it includes (FastAPI keeps an
    included router whole, as `original_router`), and those of its mounts (a static mount's as one path)."""
    found: set[tuple[str, str]] = set()

    def walk(entries: list[Any], prefix: str = "") -> None:
        for route in entries:
            included = getattr(route, "original_router", None)
            if included is not None:
                walk(list(included.routes), prefix)
            elif isinstance(route, Mount):
                inner = getattr(route, "routes", None) or []
                if inner:
                    walk(list(inner), prefix + route.path)
                else:
                    found.add(("GET", prefix + route.path + "/{name}"))
            elif isinstance(route, Route):
                found.update((method, prefix + route.path) for method in route.methods or () if method != "HEAD")

    walk(list(app.routes))
    return sorted(found)


@pytest.mark.slow
def test_no_route_leaks_a_seat_s_secrets_to_anyone_else(
    store: Store, tmp_path: Path, harbor: Path, capsys: Any
) -> None:
    worlds = table_worlds(tmp_path, harbor)
    game = Game(function_model(table_master), store, source=dice.seeded_source(5))
    app = create_app(game, worlds)  # the editor mounted too
    with TestClient(app, base_url="http://127.0.0.1") as client:

        def started() -> tuple[str, str]:
            body = client.post("/api/stories", json={"world": "table"}).json()
            return body["story"]["id"], body["token"]

        def invite(story: str, owner: str, character: str) -> tuple[str, str]:
            body = client.post(
                f"/api/stories/{story}/seats",
                json={"character": character},
                headers={"Authorization": f"Bearer {owner}"},
            ).json()
            return body["seat"]["id"], body["token"]

        story, owner = started()
        mara_seat, mara = invite(story, owner, "Mara")
        odile_seat, odile = invite(story, owner, "Odile")
        other_story, other_owner = started()
        _, other_seat = invite(other_story, other_owner, "Mara")
        auth = {"Authorization": f"Bearer {owner}"}
        client.put(f"/api/stories/{story}/settings", json={"rounds": "together"}, headers=auth)
        for token, words in (
            (mara, "sense for Mara; whisper to Mara: MARAWORD"),
            (odile, "sense for Odile; whisper to Odile: ODILEWORD"),
        ):
            answer = client.post(
                f"/api/stories/{story}/messages", json={"text": words}, headers={"Authorization": f"Bearer {token}"}
            )
            assert answer.status_code == 200, answer.text
        rolls = client.get(f"/api/stories/{story}", headers={"Authorization": f"Bearer {mara}"}).json()["rounds"][0][
            "rolls"
        ]
        salts = {
            roll["character"]: roll["salt"]
            for roll in client.get(f"/api/stories/{story}", headers=auth).json()["integrity"]["rolls"]
            if roll.get("salt")
        }
        assert not salts  # the owner sees no seated character's secret roll
        mara_salt = next(roll["salt"] for roll in rolls if roll["character"] == "Mara")
        odile_rolls = client.get(f"/api/stories/{story}", headers={"Authorization": f"Bearer {odile}"}).json()[
            "rounds"
        ][0]["rolls"]
        odile_salt = next(roll["salt"] for roll in odile_rolls if roll["character"] == "Odile")
        secrets_of = {
            "Mara": ["DROWARAM", mara_salt, mara],
            "Odile": ["DROWELIDO", odile_salt, odile],
        }  # whispers: backwards
        tokens: dict[str, tuple[str | None, list[str]]] = {
            "no token": (None, [*secrets_of["Mara"], *secrets_of["Odile"], owner]),
            "a wrong token": ("not-a-token-of-anything", [*secrets_of["Mara"], *secrets_of["Odile"], owner]),
            "Mara's seat": (mara, [*secrets_of["Odile"], owner]),
            "Odile's seat": (odile, [*secrets_of["Mara"], owner]),
            "another story's owner": (other_owner, [*secrets_of["Mara"], *secrets_of["Odile"], owner]),
            "another story's seat": (other_seat, [*secrets_of["Mara"], *secrets_of["Odile"], owner]),
        }
        tried = routes(app)
        requests = 0
        for method, path in tried:
            for label, (token, forbidden) in tokens.items():
                seat_id = mara_seat if token == odile else odile_seat  # always another seat's
                concrete = path.replace("{story_id}", story).replace("{seat_id}", seat_id)
                concrete = re.sub(r"\{name:path\}", "gm/table", concrete)
                concrete = re.sub(r"\{[^}]+\}", "x", concrete)
                ending = (
                    concrete.rsplit("/api/stories/", 1)[-1].split("/", 1)[-1]
                    if "/api/stories/" in concrete
                    else concrete.rsplit("/", 1)[-1]
                )
                body = BODIES.get(ending, BODIES.get(concrete.rsplit("/", 1)[-1]))
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                if ending == "events":  # the live stream never ends by itself: a bad Last-Event-ID is its 400 (after
                    headers["Last-Event-ID"] = "x"  # the token's check), so the walk reads an answer that ends
                answer = client.request(
                    method, concrete, json=body if method in ("POST", "PUT", "PATCH") else None, headers=headers
                )
                requests += 1
                where = f"{method} {path} with {label}: {answer.status_code}"
                assert answer.status_code < 500, where + " " + answer.text[:300]
                for secret in forbidden:
                    assert secret not in answer.text, f"{where} leaks {secret[:12]}..."
                if path.startswith("/api/stories/{story_id}") and token not in (mara, odile):
                    assert answer.status_code in (401, 404), where  # not even a 403: the story is not theirs
        # Nothing was done as another: the seats stand, every message is its seat's character's, the story goes on.
        assert {seat.id for seat in store.seats(story, live=True)} == {mara_seat, odile_seat}
        characters = {mara_seat: "Mara", odile_seat: "Odile"}
        for message in store.table_messages(story):
            assert characters[str(message.seat_id)] == message.character
        for record in store.rounds(story):
            for action in record.actions or []:
                assert characters[action["seat"]] == action["character"]
        assert store.story(story).ended_at is None
    with capsys.disabled():
        print(f"\naccess test: {len(tried)} routes x {len(tokens)} tokens = {requests} requests, nothing leaked")
