"""Stop means stop: a chat front end that goes away mid-round cancels the round at once, its story is free
within a second, a first round that never finished leaves no story, and a busy story is a 409 before any
stream starts. gm serve's app under uvicorn, the game master a slow fake model over HTTP, raw HTTP clients."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import reply, slow
from tests.support.compat import Served, chat, gm_server, marker_of

SLOW = 8.0  # seconds the game master's model takes: far longer than any check below waits


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def gm(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def start_and_leave(served: Served, messages: list[dict[str, Any]], *, stream: bool) -> None:
    """Send a chat request, read nothing of a stream but its start, wait until the round is asking the game master
    (the fake has the player's last words), and close the connection (a front end's Stop)."""
    connection = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
    body = json.dumps({"model": "gm/harbour", "messages": messages, "stream": stream}).encode()
    connection.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
    if stream:
        answer = connection.getresponse()
        assert answer.status == 200
        answer.fp.readline()  # the stream has started (its round may not have opened yet: waited for below)
    last_words = messages[-1]["content"]

    def asked() -> bool:
        return any(last_words in json.dumps(request) for request in list(served.model.requests))

    assert wait_until(asked, 10.0), "the round never asked the game master"
    connection.close()


def free_within(store: Store, story_id: str, seconds: float) -> float:
    """How long the story's lease took to be let go; fails past `seconds`."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if store.story(story_id).lease_holder is None:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"story {story_id} still busy after {seconds} s")


def wait_until(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_stopped_stream_cancels_its_round_and_frees_the_story(store: Store, worlds: Path) -> None:
    script = [reply("Rain."), slow(reply("Never told."), SLOW), reply("Told at once.")]
    with gm_server(store, worlds, script) as served:
        first = chat(served, [user("I wait.")])
        story = marker_of(first)[0]
        history = [user("I wait."), gm(first), user("I wait longer.")]
        start_and_leave(served, history, stream=True)
        started = time.monotonic()
        assert wait_until(lambda: store.story(story).lease_holder is None, 1.0), "the story is still busy"
        assert time.monotonic() - started < 1.0
        assert store.story(story).rounds == 1  # the stopped round was not played on behind the player's back
        again = chat(served, [*history[:2], user("I wait longer."), user("I shout.")])
        assert again.startswith("Told at once.") and store.story(story).rounds == 2


def test_a_stopped_plain_request_cancels_its_round_too(store: Store, worlds: Path) -> None:
    script = [reply("Rain."), slow(reply("Never told."), SLOW), reply("Next.")]
    with gm_server(store, worlds, script) as served:
        first = chat(served, [user("I wait.")])
        story = marker_of(first)[0]
        start_and_leave(served, [user("I wait."), gm(first), user("I wait longer.")], stream=False)
        assert wait_until(lambda: store.story(story).lease_holder is None, 1.0), "the story is still busy"
        assert store.story(story).rounds == 1


def test_a_stopped_first_round_leaves_no_story(store: Store, worlds: Path) -> None:
    script = [slow(reply("Never told."), SLOW), reply("A story at last.")]
    with gm_server(store, worlds, script) as served:
        start_and_leave(served, [user("I wait.")], stream=True)
        assert wait_until(lambda: store.stories() == [], 1.0), "a story with no round is left"
        # Open WebUI then sends both player messages in a row, with the stopped answer empty between them.
        answer = chat(served, [user("I wait."), gm(""), user("I wait longer.")])
        assert answer.startswith("A story at last.") and len(store.stories()) == 1
        assert store.stories()[0].rounds == 1


@pytest.mark.slow
def test_a_busy_story_is_a_409_before_the_stream_starts(store: Store, worlds: Path) -> None:
    script = [reply("Rain."), slow(reply("Slowly."), 30.0)]  # the first stream is closed, not waited for
    with gm_server(store, worlds, script) as served:
        first = chat(served, [user("I wait.")])
        history = [user("I wait."), gm(first), user("I wait longer.")]
        connection = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
        body = json.dumps({"model": "gm/harbour", "messages": history, "stream": True}).encode()
        connection.request("POST", "/v1/chat/completions", body=body, headers={"Content-Type": "application/json"})
        first_answer = connection.getresponse()
        assert first_answer.status == 200
        first_answer.fp.readline()  # the stream's first event, which may come before the round has opened
        story = marker_of(first)[0]
        assert wait_until(lambda: store.story(story).lease_holder is not None, 10.0), "the round never opened"
        other = http.client.HTTPConnection(served.url.removeprefix("http://"), timeout=30)
        again = json.dumps({"model": "gm/harbour", "messages": [*history[:2], user("I shout.")], "stream": True})
        other.request("POST", "/v1/chat/completions", body=again.encode(), headers={"Content-Type": "application/json"})
        busy = other.getresponse()
        assert busy.status == 409 and busy.getheader("content-type") == "application/json"
        assert json.loads(busy.read())["error"]["code"] == "conflict"
        connection.close()
        other.close()
