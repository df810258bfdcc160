"""World files an attacker or an unlucky author could leave in a worlds folder (issue 10, defects 4, 5 and 7).

A world.json nested thousands deep, a FIFO named world.json, or a modifier variable too large for a
roll are refused cleanly - `gm check` exits 2 (or 1) with one sentence - and every listing (the API,
the start page, the editor's index) still lists the other worlds, marking the broken one.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gm.editor import create_app as create_editor
from gm.store import Store
from gm.world.loading import check_world
from tests.support.command_line import gm
from tests.support.editor_forms import BASE
from tests.support.web import served_app
from tests.support.worlds import HARBOR_WORLD, write_world


def nested(folder: Path, levels: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text("[" * levels + "]" * levels)
    return folder


@pytest.mark.parametrize("levels", [5_000, 900, 100_000])
def test_gm_check_refuses_a_deeply_nested_file_in_one_sentence(tmp_path: Path, levels: int) -> None:
    result = gm("check", nested(tmp_path / "deep", levels))
    assert result.returncode == 2, result
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "nested" in line and "Traceback" not in result.stderr, line


def test_a_deeply_nested_dice_json_pasted_in_the_editor_is_a_problem(worlds: Path) -> None:
    from tests.support.editor_forms import post

    with TestClient(create_editor(worlds), base_url=BASE) as client:
        token = client.app.state.editor.csrf.token  # type: ignore[attr-defined]
        text = "[" * 5000 + "]" * 5000
        answer = post(client, "/worlds/harbour/dice/raw", {"csrf": token, "text": text, "action": "check"})
        assert answer.status_code == 422 and "nested" in answer.text


def test_a_deeply_nested_world_is_listed_as_broken_and_the_others_still_are(store: Store, worlds: Path) -> None:
    nested(worlds / "deep", 5_000)
    with served_app(store, worlds, []) as (client, _):
        listed = client.get("/api/worlds")
        assert listed.status_code == 200, listed.text
        by_name = {world["name"]: world for world in listed.json()}
        assert by_name["harbour"]["problem"] is None and by_name["harbour"]["title"] == "The Harbour Job"
        assert "nested" in by_name["deep"]["problem"]
        page = client.get("/")
        assert page.status_code == 200 and "The Harbour Job" in page.text and "cannot be played" in page.text
        assert client.post("/api/stories", json={"world": "deep"}).status_code == 422
    with TestClient(create_editor(worlds), base_url=BASE) as editor:
        index = editor.get("/")
        assert index.status_code == 200, index.text
        assert "The Harbour Job" in index.text and "nested" in index.text


def test_a_modifier_variable_beyond_a_million_is_an_error(tmp_path: Path) -> None:
    world = json.loads(json.dumps(HARBOR_WORLD))
    world["characters"][0]["variables"]["skill"] = 10**20
    world["characters"][1]["variables"]["skill"] = -1_000_000  # at the bound: fine
    problems = check_world(write_world(tmp_path / "big", world))
    [problem] = [problem for problem in problems if problem.severity == "error"]
    assert (problem.file, problem.path) == ("world.json", "$.characters[0].variables.skill")
    assert "1,000,000" in problem.message


def within(seconds: float, work: Callable[[], Any], unblock: Callable[[], None]) -> Any:
    """The result of `work`, which must end within `seconds`; `unblock` frees it if it hangs, and the test fails."""
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(10)
        pytest.fail(f"it hung for {seconds} s")
    return results[0]


@pytest.fixture
def fifo_world(worlds: Path) -> Iterator[Path]:
    """A world whose world.json is a FIFO, and another whose dice.json is one."""
    folder = worlds / "piped"
    folder.mkdir()
    os.mkfifo(folder / "world.json")
    dice = write_world(worlds / "piped-dice", HARBOR_WORLD, None)
    os.mkfifo(dice / "dice.json")
    yield folder


def open_and_close(fifo: Path) -> None:
    """A writer that opens the FIFO and leaves at once, so a reader blocked on it sees the end of the file."""
    os.close(os.open(fifo, os.O_RDWR))  # on Linux, opening a FIFO both ways never blocks


def test_a_fifo_named_world_json_is_refused_not_waited_for(fifo_world: Path, worlds: Path) -> None:
    fifo = fifo_world / "world.json"
    result = within(60, lambda: gm("check", fifo_world), lambda: open_and_close(fifo))
    assert result.returncode == 2 and "not a regular file" in result.stderr, result
    with TestClient(create_editor(worlds), base_url=BASE) as editor:
        index = within(30, lambda: editor.get("/"), lambda: open_and_close(fifo))
        assert index.status_code == 200 and "The Harbour Job" in index.text and "not a regular file" in index.text
        page = within(30, lambda: editor.get("/worlds/piped"), lambda: open_and_close(fifo))
        assert page.status_code in (200, 403) and "not a regular file" in page.text
        dice_fifo = worlds / "piped-dice" / "dice.json"
        for path in ("/worlds/piped-dice/dice/raw", "/worlds/piped-dice/dice", "/worlds/piped-dice"):
            shown = within(30, lambda path=path: editor.get(path), lambda: open_and_close(dice_fifo))
            assert shown.status_code in (200, 403) and "not a regular file" in shown.text, path
