"""Helpers for round tests: a Game wired to three fake models (game master, judge, memory keeper).

By default the fakes are in process (`FunctionModel`); `transport="http"` serves them over HTTP
to the real model client instead (`FakeModel`), for the end-to-end tests that keep it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from gm import dice
from gm.engine.game import Game
from gm.engine.round import RoundSettings
from gm.models.client import ModelClient, ModelSettings, ToolsMode
from gm.store import Store
from gm.testing import FakeModel, FunctionModel, Script, Step, call, honest_judge, reply
from tests.support.paths import OPENAI_SCHEMAS

SCHEMAS = OPENAI_SCHEMAS
Transport = Literal["function", "http"]


def fake(script: Script) -> FakeModel:
    return FakeModel(
        script,
        request_schema=SCHEMAS / "chat-completion-request.schema.json",
        response_schema=SCHEMAS / "chat-completion-response.schema.json",
    )


def function_model(script: Script) -> FunctionModel:
    return FunctionModel(
        script,
        request_schema=SCHEMAS / "chat-completion-request.schema.json",
        response_schema=SCHEMAS / "chat-completion-response.schema.json",
    )


@dataclass
class Table:
    """A game, its three fakes, and the waits the model client was asked to sleep (over HTTP)."""

    game: Game
    master: FakeModel | FunctionModel
    keeper: FakeModel | FunctionModel
    judge: FakeModel | FunctionModel
    waits: list[float] = field(default_factory=list)


@asynccontextmanager
async def table(
    store: Store,
    script: Script,
    memory: Script | None = None,
    *,
    faces: list[int] | None = None,
    settings: RoundSettings | None = None,
    transport: Transport = "function",
    judge: Script = honest_judge,
    tools: ToolsMode = "auto",
    memory_batch: int | None = None,
) -> AsyncIterator[Table]:
    """A Game on `store` whose game master follows `script`; the memory keeper answers `memory`
    (by default, a summary for every request) and the judge `judge` (by default, honestly).
    `faces` are the dice faces rolled, in order; `memory_batch` the rounds per memory call (gm.engine.memory).
    Leaving the block normally waits for the memory keeper and checks that no fake failed."""
    keeper_script = memory if memory is not None else (lambda request: reply("Mara worked the lock."))
    source = dice.GivenFaces(faces) if faces is not None else dice.seeded_source(1)
    if transport == "function":
        master, keeper, judging = function_model(script), function_model(keeper_script), function_model(judge)
        game = Game(
            master,
            store,
            memory_model=keeper,
            judge_model=judging,
            settings=settings,
            source=source,
            memory_batch=memory_batch,
        )
        yield Table(game, master, keeper, judging)
        await game.settle()
        assert master.failures == keeper.failures == judging.failures == [], (master.failures, keeper.failures)
        return
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    served = fake(script).start()
    keeping = fake(keeper_script).start()
    judged = fake(judge).start()
    try:
        gm_client, memory_client, judge_client = (
            ModelClient(ModelSettings(each.base_url, "test-key", each.model, tools=tools), sleep=no_sleep)
            for each in (served, keeping, judged)
        )
        game = Game(
            gm_client,
            store,
            memory_model=memory_client,
            judge_model=judge_client,
            settings=settings,
            source=source,
            memory_batch=memory_batch,
        )
        yield Table(game, served, keeping, judged, waits)
        await game.settle()
        assert served.failures == keeping.failures == [], (served.failures, keeping.failures)
    finally:
        served.close()
        keeping.close()
        judged.close()


def last_tool_result(request: dict[str, Any]) -> dict[str, Any]:
    """The JSON content of the newest tool message in a request."""
    for message in reversed(request["messages"]):
        if message["role"] == "tool":
            result: dict[str, Any] = json.loads(message["content"])
            return result
    raise AssertionError("no tool result in the request")


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(message["content"]) for message in request["messages"] if message["role"] == "tool"]


def narrate_roll(
    narration: str = "The lock gives with a soft click.",
    result: str | None = None,
    *,
    change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
) -> Callable[[dict[str, Any]], Step]:
    """A step that narrates the newest check roll honestly, or with `result` instead, or `change`d outcomes."""

    def step(request: dict[str, Any]) -> Step:
        rolled = [result_ for result_ in tool_results(request) if "band" in result_]
        outcomes = [
            {"character": r["character"], "result": result or r["result"], "roll": r["roll"]} for r in rolled[-1:]
        ]
        if change is not None:
            outcomes = change(outcomes)
        return call("narrate", {"narration": narration, "outcomes": outcomes})

    return step


def roll_mara(target: int = 12) -> Step:
    return call("roll_check", {"check": "attempt", "character": "Mara", "target": target, "reason": "pick the lock"})
