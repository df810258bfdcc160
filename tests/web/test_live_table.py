"""Live for everyone: players at one table, each in a browser of their own, on two `gm serve` processes sharing a
PostgreSQL database, each seeing the others' rounds as they happen, without a reload (gm.web._live, play.js).

Free rounds (each message plays at once) and together rounds (the last seat's action plays everyone's), for two
players and for four; every story passes `gm audit` afterwards. PostgreSQL and Chromium only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gm.testing import FakeModel
from tests.support.browser import opened_page
from tests.support.command_line import gm
from tests.support.databases import POSTGRES_URL
from tests.support.rounds import fake
from tests.support.servers import Server, running_servers, send
from tests.support.table import table_master
from tests.support.worlds import write_table_world

pytestmark = [
    pytest.mark.skipif(not POSTGRES_URL, reason="two gm serve processes share a PostgreSQL database"),
    pytest.mark.postgres,
    pytest.mark.subprocess,
    pytest.mark.slow,
]

PLAYERS = ["Mara", "Odile", "Pell", "Quin"]
LIVE_MS = 15_000  # a round reaches every page well within this; a page that never sees it fails


@pytest.fixture
def table_folder(tmp_path: Path) -> Path:
    """A worlds folder with the table world, given two more player characters (four seats in all)."""
    folder = tmp_path / "live-worlds"
    world = write_table_world(folder / "table") / "world.json"
    data = json.loads(world.read_text())
    for name in PLAYERS[2:]:
        data["characters"].append({"name": name, "role": "player", "description": "Another hand.", "variables": {}})
    world.write_text(json.dumps(data))
    return folder


@pytest.fixture
def model() -> Iterator[FakeModel]:
    with fake(table_master) as started:  # started, and closed after the test
        yield started


@pytest.fixture
def servers(tmp_path: Path, table_folder: Path, database_url: str, model: FakeModel) -> Iterator[list[Server]]:
    with running_servers(("A", "B"), table_folder, database_url, model, tmp_path) as started:
        yield started


def seated_story(server: Server, players: int, rounds: str) -> tuple[str, list[str]]:
    """A table story with `players` seats, rounds gathered as `rounds`: its id and each seat's token."""
    status, started = send(server, "POST", "/api/stories", {"world": "table"})
    assert status == 201, started
    story, owner = started["story"]["id"], started["token"]
    status, body = send(server, "PUT", f"/api/stories/{story}/settings", {"rounds": rounds}, owner)
    assert status == 200, body
    tokens = []
    for character in PLAYERS[:players]:
        status, body = send(server, "POST", f"/api/stories/{story}/seats", {"character": character}, owner)
        assert status == 201, body
        tokens.append(body["token"])
    return story, tokens


def act(page: Any, text: str) -> None:
    page.fill("#text", text)
    page.click("#send")


def wait_for_round(page: Any, count: int, words: str) -> None:
    """Until the page shows `count` accepted rounds, the last holding `words`: live, with no reload."""
    page.wait_for_function(
        """([count, words]) => {
            const done = document.querySelectorAll('#rounds li.round:not(.pending)');
            return done.length >= count && done[count - 1].textContent.includes(words);
        }""",
        arg=[count, words],
        timeout=LIVE_MS,
    )


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("players", [2, 4])
@pytest.mark.parametrize("rounds", ["free", "together"])
def test_every_seat_sees_the_others_rounds_live_across_two_servers(
    browser: Any, servers: list[Server], database_url: str, players: int, rounds: str
) -> None:
    story, tokens = seated_story(servers[0], players, rounds)
    pages: list[Any] = []
    contexts = []
    try:
        for index, token in enumerate(tokens):  # seats alternate between the two servers
            context = opened_page(browser, width=900, height=700)
            page, problems = context.__enter__()
            contexts.append(context)
            page.goto(f"{servers[index % 2].url}/play/{story}#token={token}")
            page.wait_for_selector("#play[data-ready='true'][data-live='true']")
            pages.append((page, problems))
        if rounds == "free":
            for turn, (page, _) in enumerate(pages):
                words = f"{PLAYERS[turn]} tries door {turn + 1}"
                act(page, words)
                for other, _ in pages:  # the player's own page, and every other seat's, on either server
                    wait_for_round(other, turn + 1, words)
        else:
            for turn, (page, _) in enumerate(pages):
                act(page, f"{PLAYERS[turn]} guards gate {turn + 1}")
                if turn < len(pages) - 1:  # the others see who has yet to act, live
                    waiting = ", ".join(PLAYERS[turn + 1 : len(pages)])
                    for other, _ in pages:
                        other.wait_for_function(
                            "w => document.getElementById('status').textContent.includes(w)",
                            arg=f"Waiting for {waiting}",
                            timeout=LIVE_MS,
                        )
                    # The gathered action waits on its own page, drawn as pending, with no dice asked for.
                    assert page.locator("#faces-form").is_hidden()
                    pending = page.locator("#rounds li.round.pending").last.text_content() or ""
                    assert f"guards gate {turn + 1}" in pending
            for page, _ in pages:
                for turn in range(len(pages)):
                    wait_for_round(page, 1, f"{PLAYERS[turn]} guards gate {turn + 1}")
        for _page, problems in pages:
            assert problems == []
    finally:
        for context in contexts:
            context.__exit__(None, None, None)
    audited = gm("audit", story, env={"GM_DATABASE_URL": database_url})
    assert audited.returncode == 0, audited.stderr
