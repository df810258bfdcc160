"""A database failure in a request is a 503 with one sentence, never a 500 (issue 40, hole 4, its first part):
a full SQLite disk when a story starts, or when a round opens."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from gm.store import Store
from tests.support.web import served_app


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
