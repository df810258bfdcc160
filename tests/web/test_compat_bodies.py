"""Big chat bodies under /v1 (issue 40, hole 3): the API token is checked before a body is parsed, a body is
bounded in JSON values before it is parsed, and parsing a big one does not hold up the server's other requests."""

from __future__ import annotations

import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.web.compat._body import MAX_CHAT_MESSAGES, MAX_JSON_VALUES
from gm.web.process import tune_server_process
from tests.support.compat import gm_server

TOKEN = "sesame"


def post(url: str, body: bytes, token: str) -> tuple[int, Any]:
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
    try:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        connection.request("POST", "/v1/chat/completions", body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def small_request_seconds(url: str) -> float:
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=60)
    try:
        began = time.perf_counter()
        connection.request("GET", "/v1/models", headers={"Authorization": f"Bearer {TOKEN}"})
        assert connection.getresponse().status == 200
        return time.perf_counter() - began
    finally:
        connection.close()


def chat_of(messages: int) -> bytes:
    """A chat of `messages` small messages, the last the player's, for a world that is not there (a 404 once read)."""
    history = [{"role": "user", "content": f"line {at}"} for at in range(messages)]
    return json.dumps({"model": "gm/atlantis", "messages": history}).encode()


@pytest.mark.slow
def test_a_body_without_the_api_token_is_refused_before_it_is_parsed(store: Store, worlds: Path) -> None:
    with gm_server(store, worlds, [], api_token=TOKEN) as served:
        for body in (b"{", b"[" * 100_000, chat_of(180_000)):
            status, answer = post(served.url, body, "wrong")
            assert status == 401 and answer["error"]["type"] == "authentication_error", answer


def test_a_body_of_too_many_values_is_refused_before_it_is_parsed(store: Store, worlds: Path) -> None:
    with gm_server(store, worlds, [], api_token=TOKEN) as served:
        status, answer = post(served.url, chat_of(180_000), TOKEN)
        assert status == 413 and f"more than {MAX_JSON_VALUES:,} JSON values" in answer["error"]["message"]
        status, answer = post(served.url, b"[" * 1_000_000, TOKEN)
        assert status == 413, answer
        status, answer = post(served.url, chat_of(MAX_CHAT_MESSAGES + 1), TOKEN)
        assert status == 422 and answer["error"]["message"].startswith("messages: "), answer
        status, answer = post(served.url, chat_of(MAX_CHAT_MESSAGES), TOKEN)
        assert status == 404 and "gm/atlantis" in answer["error"]["message"], answer  # read whole: a model unknown


@pytest.mark.slow
def test_a_big_body_does_not_hold_up_a_small_request(store: Store, worlds: Path) -> None:
    """Small requests are timed while big bodies are sent: the slowest must stay well under the 2.1 s the probe
    measured (with its 8 MB body of 180,000 messages, and the biggest bodies the bounds let through). The process
    is tuned as `gm serve` tunes it (gm.web.process: the collector runs by the clock), or a full collection would
    pause every thread."""
    tune_server_process()  # undone after the test (tests/conftest.py)
    with gm_server(store, worlds, [], api_token=TOKEN) as served:
        quiet = sorted(small_request_seconds(served.url) for _ in range(5))[2]
        big = [chat_of(180_000), chat_of(MAX_CHAT_MESSAGES), json.dumps([[]] * (MAX_JSON_VALUES // 2)).encode()]
        done = threading.Event()

        def send_big() -> None:
            for _ in range(3):
                for body in big:
                    post(served.url, body, TOKEN)
            done.set()

        sender = threading.Thread(target=send_big)
        sender.start()
        timed = []
        while not done.is_set():
            timed.append(small_request_seconds(served.url))
        sender.join()
        # Before the fix the slowest took 0.6 to 0.8 s here (2 shared cores); after, under 0.1 s. The second slowest
        # is held, not the slowest: once, with the suite's other workers busy (3 on 2 cores), one took 0.31 s; a loop
        # stalled by big bodies stalls the small requests sent during each of the 9, not one in all.
        assert len(timed) >= 5 and sorted(timed)[-2] < quiet + 0.3, (quiet, sorted(timed)[-5:])
