"""The API's contract with hostile and unlucky clients (issue 10, defects 8 and 11), on SQLite and PostgreSQL.

Every error is documented in the OpenAPI description with its `{"error"}` shape; the streams are
documented as text/event-stream; a chunked body over 64 KB is a 413; a body that is not UTF-8 or not
JSON is one status (422); whitespace-only text fails the schema; a non-ASCII token is a 401; the API
answers only loopback Host names on a loopback server; SQL parameters never reach the log.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import IntegrityError

from gm.engine.game import Game
from gm.store import RoundRecord, Store, Story
from gm.testing import reply
from gm.web.app import create_app
from tests.support.web import served_app

ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorOut"}


def start(client: Any, headers: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
    answer = client.post("/api/stories", json={"world": "harbour"}, headers=headers or {})
    assert answer.status_code == 201, answer.text
    return answer.json()["story"]["id"], {"Authorization": f"Bearer {answer.json()['token']}"}


def test_every_error_is_documented_with_its_shape(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        spec = client.get("/openapi.json").json()
    assert spec["components"]["schemas"]["ErrorOut"]["properties"] == {"error": {"title": "Error", "type": "string"}}
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's {"detail": [...]} is never sent
    # 403: a seat's token asking for the owner's part, or another seat's (docs/table.md); 503: the database cannot be
    # used (every route reading it), or the server drains
    expected = {
        ("get", "/api/worlds"): {"400", "413"},
        ("post", "/api/stories"): {"400", "401", "404", "413", "422", "503"},
        ("get", "/api/stories/{story_id}"): {"400", "401", "404", "413", "422", "503"},  # 422: a bad page
        ("put", "/api/stories/{story_id}/settings"): {"400", "401", "403", "404", "413", "422", "503"},
        ("post", "/api/stories/{story_id}/messages"): {"400", "401", "403", "404", "409", "413", "422", "502", "503"},
        ("post", "/api/stories/{story_id}/regenerate"): {"400", "401", "403", "404", "409", "413", "502", "503"},
        # busy: an event; ended, or a round waiting for dice: a 409 before the stream
        ("post", "/api/stories/{story_id}/messages/stream"): {"400", "401", "403", "404", "409", "413", "422", "503"},
        ("post", "/api/stories/{story_id}/regenerate/stream"): {"400", "401", "403", "404", "409", "413", "503"},
        ("post", "/api/stories/{story_id}/faces"): {"400", "401", "403", "404", "409", "413", "422", "502", "503"},
        ("post", "/api/stories/{story_id}/faces/stream"): {"400", "401", "403", "404", "409", "413", "422", "503"},
        ("post", "/api/stories/{story_id}/abandon"): {"400", "401", "403", "404", "409", "413", "503"},
        ("post", "/api/stories/{story_id}/end"): {"400", "401", "403", "404", "409", "413", "503"},
    }
    for (method, path), statuses in expected.items():
        responses = spec["paths"][path][method]["responses"]
        errors = {status for status in responses if status.startswith(("4", "5"))}
        assert errors == statuses, (method, path, errors)
        for status in errors:
            assert responses[status]["content"]["application/json"]["schema"] == ERROR_SCHEMA, (path, status)
            assert responses[status]["description"]


def test_regenerating_before_any_round_is_a_409_with_or_without_the_stream(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start(client)
        for path in ("regenerate", "regenerate/stream"):
            answer = client.post(f"/api/stories/{story}/{path}", headers=auth)
            assert answer.status_code == 409 and answer.json() == {"error": "there is no round to play again yet"}


def test_the_streams_are_documented_as_event_streams(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        spec = client.get("/openapi.json").json()
    for path in ("/api/stories/{story_id}/messages/stream", "/api/stories/{story_id}/regenerate/stream"):
        ok = spec["paths"][path]["post"]["responses"]["200"]
        assert list(ok["content"]) == ["text/event-stream"], ok


def test_a_chunked_body_over_64_kb_is_a_413(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start(client)
        chunks = iter([b'{"text": "' + b"x" * 20_000] * 4 + [b'"}'])  # no Content-Length: sent chunked
        answer = client.post(
            f"/api/stories/{story}/messages", content=chunks, headers={**auth, "Content-Type": "application/json"}
        )
        assert answer.status_code == 413, answer.text
        assert "64" in answer.json()["error"]


@pytest.mark.parametrize("body", [b"{not json", b'{"text": "\xff\xfe"}', b"\xff\xfe", b'{"text": "caf\xc3"}'])
def test_a_body_that_is_not_json_or_not_utf8_is_one_status(store: Store, worlds: Path, body: bytes) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start(client)
        answer = client.post(
            f"/api/stories/{story}/messages", content=body, headers={**auth, "Content-Type": "application/json"}
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"].startswith("the request body is not"), answer.json()


@pytest.mark.parametrize("text", [" ", "   \t\n  ", "\u3000"])
def test_whitespace_only_text_fails_the_schema(store: Store, worlds: Path, text: str) -> None:
    with served_app(store, worlds, []) as (client, _):
        story, auth = start(client)
        for path in ("messages", "messages/stream"):
            answer = client.post(f"/api/stories/{story}/{path}", json={"text": text}, headers=auth)
            assert answer.status_code == 422, answer.text
            assert answer.json()["error"] == "text: must hold more than spaces"
        spec = client.get("/openapi.json").json()
        assert spec["components"]["schemas"]["MessageIn"]["properties"]["text"]["pattern"] == r"\S"


@pytest.mark.parametrize("token", ["s3cret-tokén", "tokén", "\u2603"])
def test_a_non_ascii_api_token_is_a_401(store: Store, worlds: Path, token: str) -> None:
    with served_app(store, worlds, [], api_token="s3cret") as (client, _):
        answer = client.post(
            "/api/stories", json={"world": "harbour"}, headers={"Authorization": f"Bearer {token}".encode()}
        )
        assert answer.status_code == 401, answer.text
        assert "wrong" in answer.json()["error"]
        stories = client.get("/api/stories/0123", headers={"Authorization": f"Bearer {token}".encode()})
        assert stories.status_code == 404


def test_a_non_ascii_api_token_opens_when_it_is_right(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, [], api_token="s3cret-tokén") as (client, _):
        right = {"Authorization": "Bearer s3cret-tokén".encode()}
        assert client.post("/api/stories", json={"world": "harbour"}, headers=right).status_code == 201


def test_the_api_answers_only_loopback_host_names_on_a_loopback_server(store: Store, worlds: Path) -> None:
    app = create_app(Game(model=None, store=store), worlds, editor=False)  # type: ignore[arg-type]  # no round
    for base in ("http://127.0.0.1:8000", "http://localhost", "http://[::1]:8000"):
        with TestClient(app, base_url=base) as local:
            assert local.get("/api/worlds").status_code == 200
            assert local.post("/api/stories", json={"world": "harbour"}).status_code == 201
    with TestClient(app, base_url="http://rebound.attacker.example") as remote:
        for answer in (remote.get("/api/worlds"), remote.post("/api/stories", json={"world": "harbour"})):
            assert answer.status_code == 400
            assert "Host" in answer.json()["error"]
    assert store.stories() and len(store.stories()) == 3  # the refused request started nothing
    anywhere = create_app(Game(model=None, store=store), worlds, editor=False, api_hosts=("*",))  # type: ignore[arg-type]
    with TestClient(anywhere, base_url="http://gm.example.org") as remote:
        assert remote.get("/api/worlds").status_code == 200


@pytest.mark.subprocess
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_gm_serve_on_loopback_refuses_other_host_names(worlds: Path, database_url: str, tmp_path: Path) -> None:
    import http.client

    from gm.testing import FakeModel
    from tests.support.servers import start_server, wait_until_up

    with FakeModel([]) as model:
        server = start_server("A", worlds, database_url, model, tmp_path)
        try:
            wait_until_up(server)
            answers = {}
            for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "rebound.attacker.example"):
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                connection.request("GET", "/api/worlds", headers={"Host": host})
                answer = connection.getresponse()
                answers[host.split(":")[0]] = (answer.status, answer.read())
                connection.close()
        finally:
            server.stop()
    assert answers["127.0.0.1"][0] == answers["localhost"][0] == 200
    assert answers["rebound.attacker.example"][0] == 400 and b"Host" in answers["rebound.attacker.example"][1]


def test_sql_parameters_are_not_logged(store: Store, worlds: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = "my secret plan to rob the harbour office"
    story = store.create_story(Story(title="T", world_data={}, dice_data=None, settings={}))
    attempt = store.start_attempt(story.id, 1)
    record = {"story_id": story.id, "number": 1, "attempt_id": attempt.id, "narration": "n"}
    store.accept_round(attempt.id, RoundRecord(player_text=secret, outcomes=[], rolls=[], refusals=[], **record))
    # The same round again: the database refuses it.
    with pytest.raises(IntegrityError) as raised, store.session() as session:
        session.add(RoundRecord(player_text=secret, outcomes=[], rolls=[], refusals=[], **record))
        session.commit()
    assert secret not in str(raised.value) and "hidden" in str(raised.value)

    def refuse(*arguments: Any, **keywords: Any) -> Any:
        with store.session() as session:  # a real database error, raised from inside a round
            session.add(RoundRecord(player_text=secret, outcomes=[], rolls=[], refusals=[], **record))
            session.commit()

    caplog.set_level(logging.INFO)  # the openai client logs whole requests at DEBUG, which is its business
    store_accept = store.accept_round
    store.accept_round = refuse  # type: ignore[method-assign]
    try:
        with served_app(store, worlds, [reply("The office is dark.")]) as (client, _):
            story_id, auth = start(client)
            answer = client.post(f"/api/stories/{story_id}/messages", json={"text": secret}, headers=auth)
            assert answer.status_code == 502 and "internal error" in answer.json()["error"]
    finally:
        store.accept_round = store_accept  # type: ignore[method-assign]
    assert "IntegrityError" in caplog.text  # the failure is logged, with its traceback
    assert secret not in caplog.text
