"""Helpers for the OpenAI-compatible endpoint's tests: a real `gm serve` app under uvicorn on 127.0.0.1, its
game master a FakeModel over HTTP, and the real `openai` client talking to it as a chat front end would."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import uvicorn

from gm import dice
from gm.engine.game import Game
from gm.models.client import ModelClient, ModelSettings
from gm.store import Store
from gm.testing import FakeModel, Script, Step, call
from gm.testing._openai_schemas import load_validator, problems
from gm.web.app import create_app
from tests.support.rounds import SCHEMAS, fake
from tests.support.web import QuickServer, keeper_too

RESPONSE = load_validator(SCHEMAS / "chat-completion-response.schema.json")
REQUEST = load_validator(SCHEMAS / "chat-completion-request.schema.json")
MARKER = re.compile(r"^\[gm-story\]: #gm-story-([0-9a-f]{32})-(\d+)-([A-Za-z0-9_-]{16})$", re.MULTILINE)


@dataclass
class Served:
    """A running gm server: its /v1 address, its game master's fake, and a client for it."""

    url: str
    model: FakeModel
    game: Game
    clients: dict[str, openai.OpenAI] = field(default_factory=dict)

    def client(self, key: str = "any key") -> openai.OpenAI:
        """The chat front end's client for `key`, made once: making one loads the CA bundle (about 25 ms of CPU),
        and a front end keeps its client, and its connections, for the whole chat."""
        if key not in self.clients:
            self.clients[key] = openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, timeout=30)
        return self.clients[key]


async def _no_sleep(seconds: float) -> None:
    """The model client's back-off, skipped."""


@contextmanager
def gm_server(
    store: Store, worlds: Path, script: Script, *, faces: list[int] | None = None, api_token: str | None = None
) -> Iterator[Served]:
    """`gm serve`'s app around a Game whose every model role is one FakeModel (the judge judging honestly)."""
    model = fake(keeper_too(script) if isinstance(script, list) else script).start()
    source = dice.GivenFaces(faces) if faces is not None else dice.seeded_source(5)
    client = ModelClient(ModelSettings(model.base_url, "k", model.model), sleep=_no_sleep)
    game = Game(client, store, source=source)
    app = create_app(game, worlds, api_token=api_token, editor=False)
    server = QuickServer(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    front_ends: dict[str, openai.OpenAI] = {}
    try:
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "gm serve did not start"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield Served(f"http://127.0.0.1:{port}", model, game, front_ends)
    finally:
        for front_end in front_ends.values():
            front_end.close()
        server.should_exit = True
        thread.join(timeout=10)
        model.close()
    assert model.failures == [], model.failures


def chat(served: Served, messages: list[dict[str, Any]], model: str = "gm/harbour", **extra: Any) -> str:
    """One plain request; the raw JSON answer must validate against OpenAI's response schema."""
    raw = served.client().chat.completions.with_raw_response.create(model=model, messages=messages, **extra)  # type: ignore[call-overload]
    body = raw.http_response.json()
    assert problems(RESPONSE, body) == "", problems(RESPONSE, body)
    assert body["object"] == "chat.completion" and body["model"] == model
    content: str = raw.parse().choices[0].message.content
    return content


CHUNK_KEYS = {"id", "object", "created", "model", "choices"}


def streamed(served: Served, messages: list[dict[str, Any]], model: str = "gm/harbour", **extra: Any) -> str:
    """One streamed request: every chunk is a chat.completion.chunk, and the chunks put together make a
    completion that validates against OpenAI's response schema."""
    stream = served.client().chat.completions.create(model=model, messages=messages, stream=True, **extra)  # type: ignore[call-overload]
    text, finish, ident = "", None, None
    for chunk in stream:
        data = chunk.model_dump(exclude_unset=True)
        assert set(data) >= CHUNK_KEYS and data["object"] == "chat.completion.chunk", data
        ident = ident or data["id"]
        assert data["id"] == ident and data["model"] == model
        for choice in data["choices"]:
            text += choice["delta"].get("content") or ""
            finish = choice.get("finish_reason") or finish
    assembled = {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": finish,
                "logprobs": None,
            }
        ],
    }
    assert problems(RESPONSE, assembled) == "", problems(RESPONSE, assembled)
    return text


def marker_of(answer: str) -> tuple[str, str, int]:
    """The story id, seal and round count of the one marker ending an answer."""
    found = MARKER.findall(answer)
    assert len(found) == 1 and MARKER.search(answer.rstrip().splitlines()[-1]), answer
    story, rounds, seal = found[0]
    return story, seal, int(rounds)


def cards(answer: str) -> list[str]:
    return re.findall(r"<details>.*?</details>", answer, flags=re.S)


FACT = re.compile(r"already rolled: roll (\d+), .+? for (.+?), came out .+? \((\w+)")


def retell(narration: str) -> Any:
    """A game-master step for a round played again: narrate the roll the engine hands back as a fact."""

    def step(request: dict[str, Any]) -> Step:
        roll, character, result = FACT.findall(request["messages"][-1]["content"])[-1]
        outcome = {"character": character, "result": result, "roll": int(roll)}
        return call("narrate", {"narration": narration, "outcomes": [outcome]})

    return step
