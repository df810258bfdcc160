"""How the model client's requests travel: what goes over the wire, and the clients it opens under load."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gm import transport
from gm.model import ModelClient, ModelSettings, ModelUnavailable, request_options
from gm.testing import fake_model, reply, slow

HELLO = [{"role": "user", "content": "I pick the lock, \u00e9l\u00e8ve."}]
TOOL = {
    "type": "function",
    "function": {"name": "narrate", "parameters": {"type": "object", "properties": {}}},
}
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
}


@contextmanager
def recording_server(status: int = 200) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A bare HTTP server answering every POST with `status` (a completion when 200), and what it received."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"path": self.path, "headers": dict(self.headers.items()), "body": body})
            data = json.dumps(ANSWER if status == 200 else {"error": {"message": "Busy."}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


async def ask(client: ModelClient, **arguments: Any) -> Any:
    async with client:
        return await client.complete(HELLO, **arguments)


def test_a_request_carries_the_key_and_gms_body_as_json() -> None:
    with recording_server() as (url, seen):
        settings = ModelSettings(base_url=url, api_key="sk-test", model="m", tools="native")
        completion = asyncio.run(ask(ModelClient(settings), tools=[TOOL], tool_choice="auto"))
    assert completion.content == "Done."
    [request] = seen
    headers = {name.lower(): value for name, value in request["headers"].items()}
    assert request["path"] == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["content-type"] == "application/json"
    assert headers["x-stainless-retry-count"] == "0"
    # The body is exactly what gm built, sent as UTF-8 (not \u-escaped), nothing added or dropped.
    assert json.loads(request["body"]) == request_options("m", HELLO, [TOOL], "auto")
    assert "\u00e9l\u00e8ve".encode() in request["body"]


def test_the_openai_clients_own_retries_stay_off() -> None:
    with recording_server(status=503) as (url, seen):
        settings = ModelSettings(base_url=url, api_key="k", model="m", max_attempts=2, retry_after_cap=0.01)
        with pytest.raises(ModelUnavailable, match="after 2 attempts"):
            asyncio.run(ask(ModelClient(settings)))
    assert len(seen) == 2  # gm's two attempts, each one request: the openai client retried none


def test_many_requests_in_flight_are_spread_over_more_clients() -> None:
    in_flight = 3 * transport.SHARD_LOAD
    with fake_model([slow(reply(f"Answer {n}."), 0.5) for n in range(in_flight)]) as fake:
        client = ModelClient(ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model))

        async def play() -> tuple[list[str | None], int]:
            async with client:
                answers = await asyncio.gather(*(client.complete(HELLO) for _ in range(in_flight)))
                return [answer.content for answer in answers], client.clients

        contents, opened = asyncio.run(play())
    assert sorted(contents) == sorted(f"Answer {n}." for n in range(in_flight))
    assert 2 <= opened <= transport.MAX_SHARDS


def test_requests_one_at_a_time_use_one_client() -> None:
    with fake_model([reply("One."), reply("Two."), reply("Three.")]) as fake:
        client = ModelClient(ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model))

        async def play() -> int:
            async with client:
                for _ in range(3):
                    await client.complete(HELLO)
                return client.clients

        assert asyncio.run(play()) == 1
