"""A story's live events (gm.web._live, gm.web._api_live): another viewer's stream sees each round as it happens.

Under uvicorn in a thread on SQLite and on PostgreSQL (where the events come back through LISTEN/NOTIFY
even to the process that wrote them); the store's ordering of events under concurrent writers is
tests/store/test_events.py.
"""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import reply
from gm.web import _live as live
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.table import table_master, table_worlds
from tests.support.web import serving

WAIT = 20.0


class Watcher:
    """A stream of a story's events read in a thread: each event as (id, kind, data), in a queue."""

    def __init__(self, url: str, token: str, last_id: int | None = None) -> None:
        self.events: queue.Queue[tuple[int | None, str, Any] | None] = queue.Queue()
        headers = {"Authorization": f"Bearer {token}"}
        if last_id is not None:
            headers["Last-Event-ID"] = str(last_id)
        where = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(where.netloc, timeout=WAIT)
        self.connection.request("GET", where.path, headers=headers)
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        block: dict[str, str] = {}
        try:
            while raw := self.response.readline():
                line = raw.decode().rstrip("\r\n")
                if line == "":
                    if "event" in block:
                        event_id = int(block["id"]) if "id" in block else None
                        self.events.put((event_id, block["event"], json.loads(block.get("data", "null"))))
                    block = {}
                elif not line.startswith(":"):
                    field, _, value = line.partition(": ")
                    block[field] = value
        except Exception:  # the test closed the connection under the reader (http.client raises several kinds)
            pass
        self.events.put(None)

    def next(self, timeout: float = WAIT) -> tuple[int | None, str, Any]:
        got = self.events.get(timeout=timeout)
        assert got is not None, "the stream ended"
        return got

    def until(self, kind: str) -> list[tuple[int | None, str, Any]]:
        seen = []
        while True:
            got = self.next()
            seen.append(got)
            if got[1] == kind:
                return seen

    def ended(self) -> bool:
        return self.events.get(timeout=WAIT) is None

    def close(self) -> None:
        if self.connection.sock is not None:  # the reading thread holds the socket too: shut it for both
            self.connection.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(timeout=WAIT)
        self.connection.close()


@contextmanager
def watching(url: str, token: str, last_id: int | None = None) -> Iterator[Watcher]:
    watcher = Watcher(url, token, last_id)
    try:
        yield watcher
    finally:
        watcher.close()


def call(url: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request; its status and JSON answer."""
    where = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(where.netloc, timeout=WAIT)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=sent)
        answer = connection.getresponse()
        data = answer.read()
        return answer.status, json.loads(data) if data else None
    finally:
        connection.close()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def start(url: str) -> tuple[str, str]:
    status, body = call(url, "POST", "/api/stories", {"world": "harbour"})
    assert status == 201, body
    return body["story"]["id"], body["token"]


def say(url: str, story: str, token: str, text: str) -> dict[str, Any]:
    status, body = call(url, "POST", f"/api/stories/{story}/messages", {"text": text}, auth(token))
    assert status == 200, body
    played: dict[str, Any] = body
    return played


def test_another_viewer_sees_the_action_the_roll_and_the_round_in_order(
    store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each event once; on PostgreSQL each in a transaction of the round's own (the action in its opening, the roll
    in its roll's, the round in its acceptance: gm.store._events.Ride), none in one of its own."""
    script = [roll_mara(), narrate_roll("The lock gives."), reply("The harbour is quiet.")]
    own: list[list[str]] = []  # the kinds of each transaction of events alone
    publish = store.publish_events

    def published(story_id: str, events: list[Any]) -> int:
        own.append([kind for kind, _, _ in events])
        return publish(story_id, events)

    monkeypatch.setattr(store, "publish_events", published)
    with serving(store, worlds, script, faces=[15, 3]) as (url, _game):
        story, token = start(url)
        events = f"{url}/api/stories/{story}/events"
        with watching(events, token) as viewer:
            ready_id, kind, data = viewer.next()
            assert (ready_id, kind, data) == (0, "ready", {"newest": 0})
            played = say(url, story, token, "I pick the lock.")
            seen = viewer.until("round")
        assert [kind for _, kind, _ in seen] == ["action", "roll", "round"]
        assert [event_id for event_id, _, _ in seen] == [1, 2, 3]
        assert seen[0][2] == {"player_text": "I pick the lock.", "character": None, "regenerating": False}
        assert seen[1][2]["id"] == played["round"]["rolls"][0]["id"]
        # The round's number only: each viewer reads the round as it may see it (a seat: its own whispers).
        assert seen[2][2] == {"number": played["round"]["number"], "regenerated": False}
        if store.engine.dialect.name == "postgresql":
            assert own == []
        else:  # SQLite: the relay writes them all, those that queue meanwhile together
            assert [kind for kinds in own for kind in kinds] == ["action", "roll", "round"]

        # A viewer that lost its connection after the action resumes from it: the roll and the round again.
        with watching(events, token, last_id=1) as resumed:
            assert [(i, k) for i, k, _ in resumed.until("round")] == [(2, "roll"), (3, "round")]
            say(url, story, token, "I wait.")
            assert [k for _, k, _ in resumed.until("round")] == ["action", "round"]


def test_a_stream_resumed_from_an_event_never_sent_is_told_to_read_the_story_again(store: Store, worlds: Path) -> None:
    with serving(store, worlds, [reply("Quiet.")], faces=[]) as (url, _game):
        story, token = start(url)
        say(url, story, token, "I wait.")
        with watching(f"{url}/api/stories/{story}/events", token, last_id=99) as viewer:
            assert viewer.next() == (2, "reset", {"newest": 2})
            status, bad = call(
                url, "GET", f"/api/stories/{story}/events", None, {**auth(token), "Last-Event-ID": "later"}
            )
        assert status == 400
        assert bad["error"].startswith("Last-Event-ID must be the id of an event")


def test_the_stream_needs_the_token_and_ends_when_the_story_is_deleted(store: Store, worlds: Path) -> None:
    with serving(store, worlds, [], faces=[]) as (url, _game):
        story, token = start(url)
        path = f"/api/stories/{story}/events"
        assert call(url, "GET", path)[0] == 401
        assert call(url, "GET", path, None, auth("wrong"))[0] == 404
        with watching(url + path, token) as viewer:
            assert viewer.next()[1] == "ready"
            assert call(url, "DELETE", f"/api/stories/{story}", None, auth(token))[0] == 204
            assert viewer.next() == (None, "gone", {"story": story})
            assert viewer.ended()


def test_one_server_keeps_a_bounded_number_of_streams_of_a_story(
    store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gm.web._live.MAX_VIEWERS", 2)
    with serving(store, worlds, [], faces=[]) as (url, _game):
        story, token = start(url)
        events = f"{url}/api/stories/{story}/events"
        with watching(events, token) as first, watching(events, token) as second:
            assert first.next()[1] == second.next()[1] == "ready"
            status, third = call(url, "GET", f"/api/stories/{story}/events", None, auth(token))
            assert status == 409
            assert "already has 2 live streams on this server" in third["error"]
        with watching(events, token) as again:  # a closed stream frees its place
            assert again.next()[1] == "ready"


def test_a_seat_s_stream_never_carries_another_s_whisper_and_ends_when_the_seat_is_revoked(
    store: Store, tmp_path: Path, harbor: Path
) -> None:
    with serving(store, table_worlds(tmp_path, harbor), [table_master] * 6, faces=[]) as (url, _game):
        status, started = call(url, "POST", "/api/stories", {"world": "table"})
        story, owner = started["story"]["id"], started["token"]
        seats = {}
        for character in ("Mara", "Odile"):
            status, body = call(url, "POST", f"/api/stories/{story}/seats", {"character": character}, auth(owner))
            assert status == 201, body
            seats[character] = (body["seat"]["id"], body["token"])
        events = f"{url}/api/stories/{story}/events"
        with watching(events, seats["Mara"][1]) as mara:
            assert mara.next()[1] == "ready"
            text = {"text": "I keep watch; whisper to Odile: WATCHWORD"}
            status, played = call(url, "POST", f"/api/stories/{story}/messages", text, auth(seats["Odile"][1]))
            assert status == 200 and played["round"]["whispers"] == [{"character": "Odile", "text": "DROWHCTAW"}]
            # The seats' invites are told as "changed" once they are answered, so one may come after "ready".
            seen = [event for event in mara.until("round") if event[1] != "changed"]
            assert [kind for _, kind, _ in seen] == ["action", "round"]
            assert seen[0][2]["character"] == "Odile"
            assert "DROWHCTAW" not in json.dumps(seen)  # the whisper is Odile's; Mara reads the round as hers
            revoked = call(url, "DELETE", f"/api/stories/{story}/seats/{seats['Mara'][0]}", None, auth(owner))
            assert revoked[0] == 204
            # At once (the revoke's `changed` event wakes the stream), not at the next heartbeat read.
            assert mara.next(timeout=live.HEARTBEAT_SECONDS / 3) == (None, "revoked", {"story": story})
            assert mara.ended()
