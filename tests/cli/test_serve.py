"""`gm serve` as a newcomer runs it: the real command in its own process, with the rehearsal stand-in.

It must say where it listens, how to stop it and which worlds it serves; play stories of several
worlds with `--model rehearsal`, each by its own world's checks; and refuse a port in use in one sentence.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.command_line import gm
from tests.support.paths import SAMPLE_WORLDS
from tests.support.servers import free_port, wait_until_ready


@contextmanager
def serving(worlds: Path, tmp_path: Path, *options: str) -> Iterator[tuple[str, Path]]:
    """`gm serve` in a subprocess on a free port: its base URL and the file its output goes to."""
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "GM_DATABASE_URL": f"sqlite:///{tmp_path / 'gm.db'}"}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "GM_MODEL"):
        env.pop(name, None)  # rehearsal needs no model: prove it
    command = [sys.executable, "-m", "gm.cli", "serve", "--worlds", str(worlds), "--port", str(port), *options]
    with log.open("w") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            urllib.request.urlopen(url + "/api/worlds", timeout=2).close()
        except OSError:
            return False
        return True

    try:
        wait_until_ready(process, answers, "gm serve", log.read_text)
        yield url, log
    finally:
        process.terminate()
        process.wait(timeout=30)


def send(url: str, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


@pytest.mark.slow
@pytest.mark.subprocess
def test_serve_with_rehearsal_plays_each_story_in_its_own_world(tmp_path: Path) -> None:
    worlds = tmp_path / "worlds"
    for name in ("harbour-heist", "storm-wall"):
        shutil.copytree(SAMPLE_WORLDS / name, worlds / name)
    with serving(worlds, tmp_path, "--model", "rehearsal") as (url, log):
        told = {}
        for world, words in (("harbour-heist", "I pick the lock."), ("storm-wall", "I fill the sandbags.")):
            started = send(url, "POST", "/api/stories", {"world": world})
            story, token = started["story"]["id"], started["token"]
            played = send(url, "POST", f"/api/stories/{story}/messages", {"text": words}, token)["round"]
            again = send(url, "POST", f"/api/stories/{story}/regenerate", None, token)["round"]
            assert [roll["id"] for roll in again["rolls"]] == [roll["id"] for roll in played["rolls"]]
            assert again["narration"] != played["narration"]  # a visibly different telling, same dice
            told[world] = (played["narration"], played["rolls"][0]["check"])
        output = log.read_text()
    assert told["harbour-heist"][1] == "lockwork" and "(rehearsal) Odile" in told["harbour-heist"][0]
    assert told["storm-wall"][1] == "labour" and "(rehearsal) Hesper" in told["storm-wall"][0]
    lines = output.splitlines()
    assert lines[0] == f"Serving stories at {url}/  (Ctrl+C stops it)"
    assert lines[1] == f"Worlds from {worlds.resolve()}: harbour-heist, storm-wall"
    assert "Traceback" not in output


@pytest.mark.slow
@pytest.mark.subprocess
def test_serve_says_when_its_worlds_folder_is_empty(tmp_path: Path) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    with serving(empty, tmp_path, "--model", "rehearsal") as (_, log):
        output = log.read_text()
    assert f"Worlds: {empty.resolve()} holds no world (a folder with world.json), so no story can be started." in output


def test_serve_refuses_a_port_in_use_in_one_sentence(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ran = gm("serve", "--worlds", SAMPLE_WORLDS, "--port", str(port), "--model", "rehearsal")
    assert ran.returncode == 2
    assert ran.stderr == f"error: cannot listen on 127.0.0.1:{port}: it is in use; choose another with --port\n"
    assert ran.stdout == ""


def test_the_unconfigured_model_points_at_rehearsal(tmp_path: Path) -> None:
    env = {"OPENAI_BASE_URL": "", "GM_MODEL": "", "GM_DATABASE_URL": f"sqlite:///{tmp_path / 'gm.db'}"}
    ran = gm("serve", "--worlds", SAMPLE_WORLDS, "--port", str(free_port()), env=env)
    assert ran.returncode == 2
    assert "The model is not configured" in ran.stderr and "--model rehearsal" in ran.stderr
    assert ran.stderr.count("\n") == 1
