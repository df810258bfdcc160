"""Helpers for web tests: the app around a Game whose model is a fake (in process or over HTTP), in TestClient."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from rounds import Transport, fake, function_model

from gm import dice
from gm.engine.game import Game
from gm.models.client import ModelClient, ModelSettings
from gm.store import Store
from gm.testing import FakeModel, FunctionModel, Script, honest_judge, is_judge_request, reply
from gm.web.app import create_app


def keeper_too(script: list[Any]) -> Any:
    """One fake for every role: game-master requests (with tools) take the next step, the judge judges
    honestly, and the keeper summarises."""
    queue = list(script)

    def answer(request: dict[str, Any]) -> Any:
        if is_judge_request(request):
            return honest_judge(request)
        if "tools" not in request:
            return reply("Something memorable happened.")
        step = queue.pop(0)
        return step(request) if callable(step) else step

    return answer


@contextmanager
def served_app(
    store: Store,
    worlds: Path,
    script: Script,
    *,
    api_token: str | None = None,
    faces: list[int] | None = None,
    transport: Transport = "function",
) -> Iterator[tuple[TestClient, FakeModel | FunctionModel]]:
    answers = keeper_too(script) if isinstance(script, list) else script
    source = dice.GivenFaces(faces) if faces is not None else dice.seeded_source(3)
    if transport == "function":
        in_process = function_model(answers)
        app = create_app(Game(in_process, store, source=source), worlds, api_token=api_token, editor=False)
        with TestClient(app, base_url="http://127.0.0.1") as client:  # the app answers loopback names only
            yield client, in_process
        assert in_process.failures == [], in_process.failures
        return
    model = fake(answers).start()
    try:
        client_model = ModelClient(ModelSettings(model.base_url, "k", model.model))
        game = Game(client_model, store, source=source)
        app = create_app(game, worlds, api_token=api_token, editor=False)
        with TestClient(app, base_url="http://127.0.0.1") as client:  # the app answers loopback names only
            yield client, model
    finally:
        model.close()
