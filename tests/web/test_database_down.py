"""A database failure in a request is a 503 with one sentence, never a 500 (issue 40, hole 4): a full SQLite
disk when a story starts, or when a round opens; and a database lost mid-round, after which the attempt is
marked failed and its lease let go as soon as the database answers again (gm.engine._loose_ends)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from gm.store import Attempt, Store, Story
from gm.testing import reply
from tests.support.web import served_app, start_story


def full_disk(*args: Any, **kwargs: Any) -> Any:
    raise OperationalError("INSERT INTO story", {}, sqlite3.OperationalError("database or disk is full"))


def test_a_full_disk_when_a_story_starts_is_a_503(store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with served_app(store, worlds, []) as (client, _):
        monkeypatch.setattr(type(store), "create_story", full_disk)
        answer = client.post("/api/stories", json={"world": "harbour"})
        assert answer.status_code == 503, answer.text
        assert answer.json() == {
            "error": "the database cannot be used just now (database or disk is full); nothing was changed,"
            " try again in a moment"
        }
        assert answer.headers["retry-after"] == "5"


def test_a_full_disk_when_a_round_opens_is_a_503(store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with served_app(store, worlds, []) as (client, _):
        started = client.post("/api/stories", json={"world": "harbour"}).json()
        monkeypatch.setattr(type(store), "open_attempt", full_disk)
        auth = {"Authorization": f"Bearer {started['token']}"}
        answer = client.post(f"/api/stories/{started['story']['id']}/messages", json={"text": "I wait."}, headers=auth)
        assert answer.status_code == 503, answer.text
        assert "database or disk is full" in answer.json()["error"]


class Outage:
    """The database out of reach while `down`: every transaction, read and session of the store raises, as a
    full disk or a server gone would, until it is back."""

    def __init__(self, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = False
        for name in ("transaction", "reading", "session"):
            monkeypatch.setattr(type(store), name, self._guarded(getattr(type(store), name)))

    def _guarded(self, opens: Any) -> Any:
        outage = self

        @contextmanager
        def guarded(store: Store) -> Iterator[Any]:
            if outage.down:
                raise OperationalError("UPDATE story", {}, sqlite3.OperationalError("disk I/O error"))
            with opens(store) as opened:
                yield opened

        return guarded


@pytest.mark.slow
def test_after_an_outage_mid_round_the_next_message_plays_and_the_attempt_is_failed(
    store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outage = Outage(store, monkeypatch)

    def cut_off(request: Any) -> Any:  # the round is open, its lease taken: the database goes as the model answers
        outage.down = True
        return reply("The tide turns.")

    with served_app(store, worlds, [cut_off, reply("The gate opens.")]) as (client, _):
        story, auth = start_story(client)
        answer = client.post(f"/api/stories/{story}/messages", json={"text": "I wait."}, headers=auth)
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"].startswith("the database cannot be used just now (disk I/O error)")
        outage.down = False
        answer = client.post(f"/api/stories/{story}/messages", json={"text": "I try the gate."}, headers=auth)
        assert answer.status_code == 200, answer.text
        assert answer.json()["round"]["number"] == 1
    with store.session() as session:
        attempts = sorted(session.exec(select(Attempt)), key=lambda attempt: attempt.started_at)
    assert [attempt.status for attempt in attempts] == ["failed", "accepted"]
    assert "database" in (attempts[0].error or "")


@pytest.mark.slow
def test_after_an_outage_mid_round_the_attempt_is_failed_and_the_lease_let_go_with_no_request(
    store: Store, worlds: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outage = Outage(store, monkeypatch)

    def cut_off(request: Any) -> Any:
        outage.down = True
        return reply("The tide turns.")

    with served_app(store, worlds, [cut_off]) as (client, _):
        story, auth = start_story(client)
        answer = client.post(f"/api/stories/{story}/messages", json={"text": "I wait."}, headers=auth)
        assert answer.status_code == 503, answer.text
        time.sleep(0.5)  # tried again meanwhile, in vain
        outage.down = False
        deadline = time.monotonic() + 5  # tried again at most 2 s apart
        while True:
            with store.session() as session:
                statuses = [attempt.status for attempt in session.exec(select(Attempt))]
                holder = session.exec(select(Story.lease_holder).where(Story.id == story)).one()
            if statuses == ["failed"] and holder is None:
                break
            assert time.monotonic() < deadline, (statuses, holder)
            time.sleep(0.05)
