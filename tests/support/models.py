"""The model client's tests' parts: a fake model checked against OpenAI's schemas, fake time, one completion."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from gm.models.client import Completion, ModelClient, ModelSettings
from gm.testing import FakeModel, Script, fake_model
from tests.support.paths import OPENAI_SCHEMAS

HELLO = [{"role": "user", "content": "I pick the lock."}]


class FakeTime:
    """A clock that only moves when the client sleeps, and a sleep that returns at once but remembers."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@contextmanager
def served(script: Script, *, check: bool = True) -> Iterator[FakeModel]:
    """A fake model checking every request and answer against OpenAI's schemas."""
    request_schema = OPENAI_SCHEMAS / "chat-completion-request.schema.json"
    response_schema = OPENAI_SCHEMAS / "chat-completion-response.schema.json"
    with fake_model(script, check=check, request_schema=request_schema, response_schema=response_schema) as fake:
        yield fake


def settings_for(fake: FakeModel | str, **changes: Any) -> ModelSettings:
    """Settings for the fake (or a base URL), with `changes` over them."""
    base_url = fake if isinstance(fake, str) else fake.base_url
    return replace(ModelSettings(base_url=base_url, api_key="test-key", model="gm-test"), **changes)


def complete(
    settings: ModelSettings,
    messages: list[dict[str, Any]] = HELLO,
    *,
    time: FakeTime | None = None,
    **options: Any,
) -> Completion:
    """One completion through a fresh client, sleeping on fake time."""
    fake_time = time or FakeTime()

    async def run() -> Completion:
        async with ModelClient(settings, sleep=fake_time.sleep, clock=fake_time.clock) as client:
            return await client.complete(messages, **options)

    return asyncio.run(run())


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (one just bound and let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
