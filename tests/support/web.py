"""Helpers for web tests: the app around a Game whose model is a fake (in process or over HTTP), in TestClient
or under uvicorn in a thread."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi.testclient import TestClient

from gm import dice
from gm.engine.game import Game
from gm.engine.settings import RoundSettings
from gm.models.client import ModelClient, ModelSettings
from gm.store import Store
from gm.testing import FakeModel, FunctionModel, Script, honest_judge, is_judge_request, is_sheet_judge_request, reply
from gm.web.app import create_app
from tests.support.rounds import Transport, fake, function_model


def keeper_too(script: list[Any]) -> Any:
    """One fake for every role: game-master requests (with tools) take the next step, the judge judges
    honestly, and the keeper summarises."""
    queue = list(script)

    def answer(request: dict[str, Any]) -> Any:
        if is_judge_request(request) or is_sheet_judge_request(request):
            return honest_judge(request)
        if "tools" not in request:
            return reply("Something memorable happened.")
        step = queue.pop(0)
        return step(request) if callable(step) else step

    return answer


class QuickServer(uvicorn.Server):
    """uvicorn's server for a test's thread, which notices `should_exit` within 10 ms: uvicorn's own loop looks
    every 100 ms, and a test's server stops at the end of every test that starts one (about 70 in the fast loop)."""

    async def main_loop(self) -> None:
        counter = 0
        while not await self.on_tick(counter):  # uvicorn's tick (its Date header, every 10th), 10 times as often
            counter = (counter + 1) % 864000
            await asyncio.sleep(0.01)


@contextmanager
def served_app(
    store: Store,
    worlds: Path,
    script: Script,
    *,
    api_token: str | None = None,
    faces: list[int] | None = None,
    transport: Transport = "function",
    settings: RoundSettings | None = None,
) -> Iterator[tuple[TestClient, FakeModel | FunctionModel]]:
    answers = keeper_too(script) if isinstance(script, list) else script
    source = dice.GivenFaces(faces) if faces is not None else dice.seeded_source(3)
    if transport == "function":
        in_process = function_model(answers)
        app = create_app(
            Game(in_process, store, source=source, settings=settings), worlds, api_token=api_token, editor=False
        )
        with TestClient(app, base_url="http://127.0.0.1") as client:  # the app answers loopback names only
            yield client, in_process
        assert in_process.failures == [], in_process.failures
        return
    model = fake(answers).start()
    try:
        client_model = ModelClient(ModelSettings(model.base_url, "k", model.model))
        game = Game(client_model, store, source=source, settings=settings)
        app = create_app(game, worlds, api_token=api_token, editor=False)
        with TestClient(app, base_url="http://127.0.0.1") as client:  # the app answers loopback names only
            yield client, model
    finally:
        model.close()


def start_story(client: Any, world: str = "harbour", **extra: Any) -> tuple[str, dict[str, str]]:
    """A story started over the API: its id, and the headers that carry its token."""
    answer = client.post("/api/stories", json={"world": world, **extra})
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["story"]["id"], {"Authorization": f"Bearer {body['token']}"}


@contextmanager
def serving(
    store: Store, worlds: Path, script: list[Any], faces: list[int], *, api_token: str | None = None
) -> Iterator[tuple[str, Game]]:
    """The whole app under uvicorn on 127.0.0.1 (a free port), in a thread, around a Game with a fake model."""
    model = fake(keeper_too(script)).start()
    loop = asyncio.new_event_loop()
    listener = socket.socket()
    try:
        game = Game(ModelClient(ModelSettings(model.base_url, "k", model.model)), store, source=dice.GivenFaces(faces))
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        config = uvicorn.Config(
            create_app(game, worlds, api_token=api_token, editor=False), log_level="warning", lifespan="off"
        )
        server = QuickServer(config)
        thread = threading.Thread(target=loop.run_until_complete, args=(server.serve([listener]),), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}", game
        finally:
            asyncio.run_coroutine_threadsafe(game.settle(), loop).result(timeout=10)
            server.should_exit = True
            thread.join(timeout=10)
    finally:
        listener.close()
        loop.close()
        model.close()


@contextmanager
def uvicorn_in_thread(app: Any, host: str) -> Iterator[int]:
    """`app` under uvicorn on `host` (a free port) in a thread, waited for until it listens; yields the port."""
    server = QuickServer(uvicorn.Config(app, host=host, port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
