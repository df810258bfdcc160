"""Helpers for web tests: the app around a Game whose model is a fake, served by TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from rounds import fake

from gm import dice
from gm.game import Game
from gm.model import ModelClient, ModelSettings
from gm.store import Store
from gm.testing import FakeModel, Script, reply
from gm.web.app import create_app


def keeper_too(script: list[Any]) -> Any:
    """One fake for both roles: game-master requests (with tools) take the next step; the keeper summarises."""
    queue = list(script)

    def answer(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return reply("Something memorable happened.")
        step = queue.pop(0)
        return step(request) if callable(step) else step

    return answer


@contextmanager
def served_app(
    store: Store, worlds: Path, script: Script, *, api_token: str | None = None, faces: list[int] | None = None
) -> Iterator[tuple[TestClient, FakeModel]]:
    model = fake(keeper_too(script) if isinstance(script, list) else script).start()
    try:
        client_model = ModelClient(ModelSettings(model.base_url, "k", model.model))
        source = dice.GivenFaces(faces) if faces is not None else dice.seeded_source(3)
        game = Game(client_model, store, source=source)
        app = create_app(game, worlds, api_token=api_token, editor=False)
        with TestClient(app) as client:
            yield client, model
    finally:
        model.close()
