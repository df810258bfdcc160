"""The requests Open WebUI 0.12.4 and SillyTavern 1.12.6 really sent, replayed against gm serve's app.

`bench/front_ends.py` played chats through both front ends' pages (swipes, "Try Again" on first answers,
"Add Details", stops, an edited first message, a marker cut out in an edit box, a fork, Continue, the
Test Message) against `gm serve --model rehearsal`, behind a proxy that logged every request with gm's
answer: `tests/fixtures/front_ends/`. Here each request is sent again as it was (body, Open WebUI's
headers), in order, to gm's app under uvicorn with the rehearsal as the game master, with each of gm's
recorded answers in a history replaced by what gm answered this time. Every request must get the same
status as then, every answer the same kind (a story's round, the world's opening, a task's JSON, an
error), and the stories must map one to one onto the recorded ones: the same requests make the same
stories. Requests the front end stopped are left out (stopping is `tests/test_compat_stop.py`'s).
"""

from __future__ import annotations

import http.client
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from gm.engine.game import Game
from gm.rehearsal.model import RehearsalModel
from gm.store import Store
from gm.web.app import create_app
from tests.support.paths import FRONT_END_FIXTURES, SAMPLE_WORLDS
from tests.support.web import QuickServer

FIXTURES = FRONT_END_FIXTURES
WORLDS = SAMPLE_WORLDS
MARKER = re.compile(r"\n*\[gm-story\]: #gm-story-([0-9a-f]{32})-(\d+)-[A-Za-z0-9_-]{16}\s*$")
SENT_HEADERS = ("x-openwebui-chat-id", "x-openwebui-user-id", "x-openwebui-user-name", "x-openwebui-user-role")


@contextmanager
def rehearsal_server(store: Store, worlds: Path) -> Iterator[str]:
    """gm serve's app under uvicorn on a free port, the rehearsal playing every story's game master."""
    app = create_app(Game(RehearsalModel(), store), worlds, editor=False)
    server = QuickServer(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "gm's app did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def post(base: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    connection = http.client.HTTPConnection(base.removeprefix("http://"), timeout=60)
    try:
        connection.request("POST", path, body=body, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def kind(answer: Any) -> str:
    """What an answer was: a story's round (or command), the world's opening, a task's JSON, an error, or text."""
    if isinstance(answer, dict):
        return "error"
    if not isinstance(answer, str):
        return "none"
    if MARKER.search(answer):
        return "story"
    if "[gm-opening]: #gm-opening-" in answer:
        return "opening"
    if answer.startswith('{"title"'):
        return "task"
    return "text"


def streamed_text(body: str) -> str | dict[str, Any]:
    text = ""
    for line in body.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            event = json.loads(line[6:])
            if "error" in event:
                return dict(event["error"])
            for choice in event.get("choices") or []:
                text += (choice.get("delta") or {}).get("content") or ""
    return text


class Replay:
    """The recorded answers and stories, and what this replay's gm answered and started for each."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}  # a recorded answer -> this replay's answer to the same request
        self.stories: dict[str, str] = {}  # a recorded story id -> this replay's

    def history(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages as the front end would send them now: gm's recorded answers replaced by this replay's."""
        sent = []
        for message in messages:
            content = message.get("content")
            if message.get("role") == "assistant" and isinstance(content, str):
                content = self.answer_for(content)
            sent.append({**message, "content": content})
        return sent

    def answer_for(self, recorded: str) -> str:
        if recorded in self.answers:
            return self.answers[recorded]
        for old, new in self.answers.items():  # an answer whose marker was cut out in the edit box
            if MARKER.search(old) and recorded.strip() == MARKER.sub("", old).strip():
                return MARKER.sub("", new)
        return recorded

    def learn(self, recorded: Any, replayed: Any) -> None:
        if not (isinstance(recorded, str) and isinstance(replayed, str)):
            return
        self.answers[recorded] = replayed
        then, now = MARKER.search(recorded), MARKER.search(replayed)
        if then and now:
            assert then.group(2) == now.group(2), (recorded, replayed)  # the same round count
            known = self.stories.setdefault(then.group(1), now.group(1))
            assert known == now.group(1), "a recorded story became two stories in the replay"


def replay(front_end: str, store: Store, tmp_path: Path) -> tuple[Replay, list[dict[str, Any]]]:
    fixture = json.loads((FIXTURES / f"{front_end}.json").read_text())
    worlds = tmp_path / "worlds"
    shutil.copytree(WORLDS / "harbour-heist", worlds / "harbour-heist")
    played = Replay()
    requests = [entry for entry in fixture["requests"] if not entry.get("cancelled")]
    with rehearsal_server(store, worlds) as base:
        for entry in requests:
            body = dict(entry["body"])
            if body.get("tools") == "$tools":
                body["tools"] = fixture["tools"]
            body["messages"] = played.history(body["messages"])
            headers = {name: entry["headers"][name] for name in SENT_HEADERS if name in entry["headers"]}
            headers |= {"Authorization": "Bearer any key", "Content-Type": "application/json"}
            status, text = post(base, entry["path"], json.dumps(body).encode(), headers)
            assert status == entry["status"], (entry["body"]["messages"][-1], text)
            if status != 200:
                replayed: Any = json.loads(text)["error"]
            elif body.get("stream"):
                replayed = streamed_text(text)
            else:
                replayed = json.loads(text)["choices"][0]["message"]["content"]
            assert kind(replayed) == kind(entry.get("answer")), (entry.get("answer"), replayed)
            played.learn(entry.get("answer"), replayed)
    return played, requests


@pytest.mark.parametrize("front_end", ["open-webui", "sillytavern"])
@pytest.mark.slow
def test_the_requests_front_ends_sent_play_the_same_stories(front_end: str, store: Store, tmp_path: Path) -> None:
    played, requests = replay(front_end, store, tmp_path)
    assert len(requests) >= 10
    recorded = {
        found.group(1)
        for entry in requests
        if isinstance(entry.get("answer"), str) and (found := MARKER.search(entry["answer"]))
    }
    assert set(played.stories) == recorded and len(set(played.stories.values())) == len(recorded)
    assert sorted(story.id for story in store.stories()) == sorted(played.stories.values())
    assert all(story.rounds > 0 for story in store.stories())  # nothing was left with no round


def test_the_fixtures_hold_what_each_front_end_is_known_by() -> None:
    """The shapes this endpoint relies on, as the front ends sent them (so a new recording that lost one fails)."""
    open_webui = json.loads((FIXTURES / "open-webui.json").read_text())["requests"]
    tavern = json.loads((FIXTURES / "sillytavern.json").read_text())["requests"]
    chats = [entry for entry in open_webui if not entry["body"]["messages"][-1]["content"].startswith("### Task:")]
    assert all("x-openwebui-chat-id" in entry["headers"] for entry in open_webui)  # tasks carry it too
    assert {entry["body"]["messages"][-1]["content"] for entry in chats} >= {"Add Details", "More Concise", "/start"}
    assert any(entry.get("cancelled") for entry in open_webui) and any(entry.get("cancelled") for entry in tavern)
    assert tavern[0]["body"]["messages"] == [{"role": "user", "content": "Hi"}] and not tavern[0]["body"]["stream"]
    first = next(entry for entry in tavern[1:] if entry["body"]["stream"])
    assert [m["role"] for m in first["body"]["messages"]][:4] == ["system"] * 4  # the character card, as notes
    continued = [entry for entry in tavern if entry["body"]["messages"][-1]["role"] == "system"]
    assert [entry["status"] for entry in continued] == [400]  # Continue: its nudge after gm's answer, refused
    assert continued[0]["body"]["messages"][-2]["role"] == "assistant"
