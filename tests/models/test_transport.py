"""How the model client's requests travel: what goes over the wire, and the clients it opens under load."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gm.errors import ModelError, ModelUnavailable
from gm.models.client import ModelClient, ModelSettings, request_options
from gm.testing import Step, fake_model, http_error, raw, reply, slow
from tests.support.models import FakeTime

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
def recording_server(
    status: int = 200, answer_headers: dict[str, str] | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
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
            for name, value in (answer_headers or {}).items():
                self.send_header(name, value)
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
    assert headers["content-type"] == "application/json" and headers["accept"] == "application/json"
    assert headers["user-agent"].startswith("gm")
    assert "openai-organization" not in headers and "openai-project" not in headers
    # The body is exactly what gm built, sent as UTF-8 (not \u-escaped), nothing added or dropped.
    assert json.loads(request["body"]) == request_options("m", HELLO, [TOOL], "auto")
    assert "\u00e9l\u00e8ve".encode() in request["body"]


def test_an_organization_and_a_project_are_sent_as_openai_names_them() -> None:
    with recording_server() as (url, seen):
        settings = ModelSettings(base_url=url, api_key="k", model="m", organization="org-1", project="proj-1")
        asyncio.run(ask(ModelClient(settings)))
    headers = {name.lower(): value for name, value in seen[0]["headers"].items()}
    assert (headers["openai-organization"], headers["openai-project"]) == ("org-1", "proj-1")


def test_one_attempt_is_one_request() -> None:
    with recording_server(status=503) as (url, seen):
        settings = ModelSettings(base_url=url, api_key="k", model="m", max_attempts=2, retry_after_cap=0.01)
        with pytest.raises(ModelUnavailable, match="after 2 attempts"):
            asyncio.run(ask(ModelClient(settings)))
    assert len(seen) == 2  # gm's two attempts, each one request: nothing below gm's retry layer retried


def test_many_requests_in_flight_each_get_their_own_answer() -> None:
    in_flight = 48
    with fake_model([slow(reply(f"Answer {n}."), 0.5) for n in range(in_flight)]) as fake:
        client = ModelClient(ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model))

        async def play() -> list[str | None]:
            async with client:
                answers = await asyncio.gather(*(client.complete(HELLO) for _ in range(in_flight)))
                return [answer.content for answer in answers]

        contents = asyncio.run(play())
    assert sorted(contents) == sorted(f"Answer {n}." for n in range(in_flight))


def test_requests_carry_the_same_headers_each_with_its_own_body() -> None:
    asked = [[{"role": "user", "content": f"Question {n}, \u00e9l\u00e8ve."}] for n in range(3)]
    with recording_server() as (url, seen):
        client = ModelClient(ModelSettings(base_url=url, api_key="sk-test", model="m", tools="native"))

        async def three() -> list[str | None]:
            async with client:
                return [(await client.complete(each, tools=[TOOL])).content for each in asked]

        assert asyncio.run(three()) == ["Done."] * 3
    assert [request["path"] for request in seen] == ["/v1/chat/completions"] * 3
    assert [json.loads(request["body"]) for request in seen] == [request_options("m", each, [TOOL]) for each in asked]
    first, *later = [{name.lower(): value for name, value in request["headers"].items()} for request in seen]
    for headers, request in zip(later, seen[1:], strict=True):
        assert {**headers, "content-length": ""} == {**first, "content-length": ""}
        assert int(headers["content-length"]) == len(request["body"])


def test_cookies_a_server_sets_are_sent_back_as_the_openai_client_would() -> None:
    with recording_server(answer_headers={"Set-Cookie": "__cf_bm=abc123; Path=/"}) as (url, seen):
        client = ModelClient(ModelSettings(base_url=url, api_key="k", model="m"))

        async def three() -> None:
            async with client:
                for _ in range(3):
                    await client.complete(HELLO)

        asyncio.run(three())
    cookies = [{name.lower(): value for name, value in request["headers"].items()}.get("cookie") for request in seen]
    assert cookies == [None, "__cf_bm=abc123", "__cf_bm=abc123"]


WARM = reply("Warm.")

# Failures as a first request meets them and as a later one does: the sentences, the attempts and the
# waits must be the same, whichever way the request was built.
FAILURES: dict[str, list[Step]] = {
    "500 then 429 with Retry-After, then an answer": [
        http_error(500, "Overloaded."),
        http_error(429, "Slow down.", headers={"Retry-After": "7"}),
        reply("Done."),
    ],
    "503 every time": [http_error(503, "Busy.")] * 3,
    "400": [http_error(400, "Bad input.")],
    "401": [http_error(401, "Wrong key.")],
    "404": [http_error(404, "No such model.")],
    "an exhausted quota": [http_error(429, "Quota.", code="insufficient_quota", type="insufficient_quota")],
    "a server that takes no tools": [http_error(500, "tools param requires --jinja flag")],
    "an error answer that is not JSON": [raw("<html>Bad gateway</html>", status=502)] * 3,
    "a redirect": [raw({"error": "moved"}, status=302)],
    "an answer that is not JSON": [raw("<html>hello</html>")],
    "no choices": [raw({"choices": []})],
    "too slow every time": [slow(reply("late"), 5)] * 3,
    "too slow once": [slow(reply("late"), 5), reply("Done.")],
}
# Each "too slow" case waits out its timeouts (up to 3 of 0.3 s): slow, as the fast loop counts it.
SLOW_TOO = [pytest.param(name, marks=pytest.mark.slow) if name.startswith("too slow") else name for name in FAILURES]


def _outcome(settings: ModelSettings, warm: bool) -> tuple[Any, ...]:
    """What a request ends in (the answer or the error's class, text and attempts) and the waits before it."""
    time = FakeTime()

    async def ask() -> Any:
        async with ModelClient(settings, sleep=time.sleep, clock=time.clock) as client:
            if warm:
                await client.complete(HELLO)
            try:
                done = await client.complete(HELLO, tools=[TOOL])
            except ModelError as error:
                return type(error).__name__, str(error), getattr(error, "attempts", None)
            return done.content, done.attempts

    outcome = asyncio.run(ask())
    # Backoff has jitter (0.5 s x 2^n, plus up to 0.5 s): the waits are compared by their whole seconds.
    return outcome, [int(wait) for wait in time.waits]


@pytest.mark.parametrize("failure", SLOW_TOO)
def test_a_failure_reads_the_same_on_a_later_request_as_on_the_first(failure: str) -> None:
    steps = FAILURES[failure]
    with fake_model([*steps, WARM, *steps], check=False) as fake:
        settings = ModelSettings(
            base_url=fake.base_url, api_key="k", model=fake.model, timeout=0.3, max_attempts=3, tools="native"
        )
        first = _outcome(settings, warm=False)
        later = _outcome(settings, warm=True)
        assert not fake.remaining
    assert later == first
    assert first[0][0] in ("Done.", "ModelUnavailable", "ModelRequestRejected")


RECORDED = json.loads((Path(__file__).parent / "model_failures.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("failure", SLOW_TOO)
def test_a_failure_reads_as_it_did_through_the_openai_client(failure: str) -> None:
    """tests/models/model_failures.json holds what each failure came to when gm sent through the openai client
    (`openai.AsyncOpenAI`, its own retries off), recorded once with that client: gm's own client must match it."""
    with fake_model(FAILURES[failure], check=False) as fake:
        settings = ModelSettings(
            base_url=fake.base_url, api_key="k", model=fake.model, timeout=0.3, max_attempts=3, tools="native"
        )
        outcome, waits = _outcome(settings, warm=False)
    shown = [part.replace(fake.base_url, "{base_url}") if isinstance(part, str) else part for part in outcome]
    assert {"outcome": shown, "waits": waits} == RECORDED["http"][failure]


def test_a_server_gone_after_an_answer_is_a_connection_error_as_on_a_first_request() -> None:
    with fake_model([WARM]) as fake:
        settings = ModelSettings(base_url=fake.base_url, api_key="k", model=fake.model, max_attempts=2)
        time = FakeTime()

        async def ask_after_it_is_gone() -> str:
            async with ModelClient(settings, sleep=time.sleep, clock=time.clock) as client:
                await client.complete(HELLO)
                fake.close()
                with pytest.raises(ModelUnavailable) as gone:
                    await client.complete(HELLO)
                return str(gone.value)

        later = asyncio.run(ask_after_it_is_gone())
    assert "unavailable after 2 attempts" in later and "a connection error" in later
    assert later == _outcome(settings, warm=False)[0][1]


def test_a_redirected_request_is_not_the_one_later_requests_repeat() -> None:
    """A server that redirects (307) every request keeps being asked at the address gm was given."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.path)
            if self.path.startswith("/v1/"):
                self.send_response(307)
                self.send_header("Location", "/moved/chat/completions")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps(ANSWER).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    try:
        client = ModelClient(ModelSettings(f"http://127.0.0.1:{server.server_address[1]}/v1", "k", "m"))

        async def three() -> list[str | None]:
            async with client:
                return [(await client.complete(HELLO)).content for _ in range(3)]

        assert asyncio.run(three()) == ["Done."] * 3
    finally:
        server.shutdown()
        server.server_close()
    assert seen == ["/v1/chat/completions", "/moved/chat/completions"] * 3


@contextmanager
def trickling_server(seconds_per_byte: float) -> Iterator[str]:
    """A server that answers 200 at once, then sends its body one byte every `seconds_per_byte` (issue 40, hole 5)."""
    data = json.dumps(ANSWER).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for at in range(len(data)):
                try:
                    self.wfile.write(data[at : at + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up
                    return
                stop.wait(seconds_per_byte)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    stop = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_an_answer_that_trickles_in_is_bounded_by_one_total_deadline() -> None:
    """Each byte comes well within the timeout, but the whole answer would take about 30 s: the call ends at the
    timeout (1 s here, 120 s by default), as a timeout, not when the last byte arrives."""
    with trickling_server(0.1) as url:
        client = ModelClient(ModelSettings(url, "k", "m", timeout=1.0, max_attempts=1))
        began = time.monotonic()
        with pytest.raises(ModelUnavailable, match="no answer within 1 s"):
            asyncio.run(ask(client))
        assert time.monotonic() - began < 3.0
