"""The model client's HTTP transport: a failure reads as its cause (as it did through the openai client); a client
outlives a closed session or loop; a proxy from the environment is used."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gm.errors import ModelUnavailable
from gm.models.client import ModelClient, ModelSettings
from gm.testing import fake_model, reply
from tests.support.models import FakeTime, closed_port

HELLO = [{"role": "user", "content": "I pick the lock."}]


@contextmanager
def raw_server(answer: bytes | None) -> Iterator[str]:
    """A TCP server that reads a request, writes `answer` (None: nothing) and hangs up, for every connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    connection.recv(65536)
                    if answer is not None:
                        connection.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join()
        listener.close()


def failure(url: str) -> str:
    """The sentence a model call to `url` fails with, after two attempts."""
    time = FakeTime()

    async def call() -> str:
        async with ModelClient(
            ModelSettings(base_url=url, api_key="k", model="m", max_attempts=2, timeout=5),
            sleep=time.sleep,
            clock=time.clock,
        ) as client:
            with pytest.raises(ModelUnavailable) as failed:
                await client.complete(HELLO)
            return str(failed.value)

    return asyncio.run(call())


RECORDED = json.loads((Path(__file__).parent / "model_failures.json").read_text(encoding="utf-8"))


def test_a_refused_connection_is_a_connection_error_not_a_timeout() -> None:
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    said = failure(url)
    assert "a connection error (Cannot connect to host 127.0.0.1" in said
    assert "no answer within" not in said
    assert said.replace(url, "{base_url}").replace(str(port), "{port}") == RECORDED["transport"]["a refused connection"]


@pytest.mark.parametrize(
    ("recorded", "answer"),
    [
        ("a server that hangs up", None),
        ("an answer that is not HTTP", b"\x00\x1b[2J not http at all\r\n\r\n"),
        ("a malformed answer", b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"),
    ],
)
def test_a_broken_answer_reads_as_it_did_through_the_openai_client(recorded: str, answer: bytes | None) -> None:
    with raw_server(answer) as url:
        said = failure(url)
    assert said.replace(url, "{base_url}") == RECORDED["transport"][recorded]


def test_a_server_that_hangs_up_without_answering_is_a_connection_error() -> None:
    with raw_server(None) as url:
        said = failure(url)
    assert "unavailable after 2 attempts" in said and "a connection error (Server disconnected)" in said


def test_an_answer_that_is_not_http_is_a_connection_error_in_one_sentence() -> None:
    with raw_server(b"\x00\x1b[2J not http at all\r\n\r\n") as url:
        said = failure(url)
    assert "a connection error (" in said and "\x1b" not in said and "\n" not in said


def test_a_malformed_answer_is_worded_by_what_is_wrong_not_as_an_http_status() -> None:
    with raw_server(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n") as url:
        said = failure(url)
    assert "a connection error (Got more than 8190 bytes" in said and "message=" not in said


def test_a_client_closed_then_called_again_opens_new_connections() -> None:
    with fake_model([reply("One."), reply("Two."), reply("Three.")]) as fake:
        settings = ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model)
        client = ModelClient(settings)

        async def twice() -> list[str | None]:
            first = await client.complete(HELLO)
            await client.aclose()
            second = await client.complete(HELLO)
            await client.aclose()
            return [first.content, second.content]

        assert asyncio.run(twice()) == ["One.", "Two."]

        async def again() -> str | None:  # a new event loop: the last one's session is not touched
            async with client:
                return (await client.complete(HELLO)).content

        assert asyncio.run(again()) == "Three."


def test_a_closed_client_leaves_no_session_for_the_garbage_collector_to_warn_of() -> None:
    with fake_model([reply("One.")]) as fake:
        settings = ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model)

        async def call() -> None:
            async with ModelClient(settings) as client:
                await client.complete(HELLO)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            asyncio.run(call())
            gc.collect()
    assert not [warning for warning in caught if "nclosed" in str(warning.message)]


@pytest.mark.slow
def test_a_client_dropped_without_closing_lets_its_sockets_go_without_a_warning() -> None:
    with fake_model([reply("One.")]) as fake:
        settings = ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model)

        async def call_and_drop() -> None:
            client = ModelClient(settings)
            await client.complete(HELLO)
            del client
            gc.collect()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            asyncio.run(call_and_drop())
            gc.collect()
    assert not [warning for warning in caught if "nclosed" in str(warning.message)]


def test_a_proxy_from_the_environment_carries_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """With HTTP_PROXY set, the request goes to the proxy, naming the model server in its request line."""
    seen: list[str] = []
    answer = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "Via the proxy."}, "finish_reason": "stop"}
            ],
        }
    ).encode()

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.requestline)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, args=(0.01,), daemon=True).start()
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    try:
        settings = ModelSettings(base_url="http://model.invalid/v1", api_key="k", model="m")

        async def call() -> str | None:
            async with ModelClient(settings) as client:
                return (await client.complete(HELLO)).content

        assert asyncio.run(call()) == "Via the proxy."
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert seen == ["POST http://model.invalid/v1/chat/completions HTTP/1.1"]
