"""A character sheet made in a real browser: Debian's Chromium through Playwright, on a copy of harbour-heist.

An author gives Dace a bounded number, an item list and conditions, is shown a wrong bound next to its
field, fixes it, saves, and reloads the page: every field comes back as typed and world.json holds the
sheet in gm's format. A screenshot of the character is left in tests/artifacts/editor-sheet.png.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gm.editor import create_app
from gm.world.definition import validate_world
from tests.support.browser import opened_page as open_page
from tests.support.browser import sync_api
from tests.support.paths import ARTIFACTS, SAMPLE_WORLDS
from tests.support.web import uvicorn_in_thread

SCREENSHOT = ARTIFACTS / "editor-sheet.png"
HIDE_STICKY = ".actions { position: static; }"  # the Save bar sticks to the window's foot; not over the picture


@contextmanager
def serving(worlds: Path) -> Iterator[str]:
    """The editor under uvicorn on 127.0.0.1 (a free port) in a thread; yields its address."""
    with uvicorn_in_thread(create_app(worlds), "127.0.0.1") as port:
        yield f"http://127.0.0.1:{port}"


def opened_page(browser: Any) -> Any:
    return open_page(browser, width=1200, height=1000)


@pytest.fixture
def worlds(tmp_path: Path) -> Path:
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(SAMPLE_WORLDS / "harbour-heist", folder / "harbour-heist")
    return folder


@pytest.mark.slow
def test_an_author_adds_each_kind_of_sheet_variable_saves_and_reloads(browser: Any, worlds: Path) -> None:
    expect = sync_api().expect
    path = worlds / "harbour-heist" / "world.json"
    before = json.loads(path.read_text())
    dace = before["characters"][1]
    first = len(dace.get("variables", {}))  # the rows the new variables take
    hp, oars, state = (f"#characters-1-variables-{first + n}" for n in range(3))
    with serving(worlds) as base, opened_page(browser) as (page, problems):
        page.goto(f"{base}/worlds/harbour-heist")
        character = page.locator("#characters-1")

        # A bounded number: choosing the kind shows its min and max at once.
        character.get_by_role("button", name="Add a variable").click()
        row = page.locator(hp)
        expect(row.locator(f"{hp}-min")).to_be_hidden()
        row.locator(f"{hp}-name").fill("hp")
        row.locator(f"{hp}-kind").select_option("bounded")
        expect(row.locator(f"{hp}-min")).to_be_visible()
        row.locator(f"{hp}-value").fill("6")
        row.locator(f"{hp}-min").fill("0")
        row.locator(f"{hp}-max").fill("5")  # below where it starts: an error beside the value

        # An item list, one item with a count and one without.
        page.locator("#characters-1").get_by_role("button", name="Add a variable").click()
        row = page.locator(oars)
        row.locator(f"{oars}-name").fill("gear")
        row.locator(f"{oars}-kind").select_option("items")
        expect(row.get_by_role("button", name="Add an item")).to_be_visible()
        row.get_by_role("button", name="Add an item").click()
        page.locator(oars).get_by_role("button", name="Add an item").click()
        row = page.locator(oars)
        row.locator(f"{oars}-items-0-name").fill("oar")
        row.locator(f"{oars}-items-0-count").fill("2")
        row.locator(f"{oars}-items-1-name").fill("boathook")

        # Conditions, one on at the start.
        page.locator("#characters-1").get_by_role("button", name="Add a variable").click()
        row = page.locator(state)
        row.locator(f"{state}-name").fill("state")
        row.locator(f"{state}-kind").select_option("conditions")
        row.get_by_role("button", name="Add a condition").click()
        page.locator(state).get_by_role("button", name="Add a condition").click()
        row = page.locator(state)
        row.locator(f"{state}-conditions-0-name").fill("soaked")
        row.locator(f"{state}-conditions-1-name").fill("drunk")
        row.locator(f"{state}-conditions-1-on").check()

        page.get_by_role("button", name="Save world.json").click()
        expect(page.get_by_role("status").first).to_contain_text("Not saved: 1 error")
        expect(page.locator(f"#p-{hp[1:]}-value")).to_have_text("'hp' starts at 6, outside its bounds 0 to 5")
        expect(page.locator(f"{hp}-value")).to_have_attribute("aria-invalid", "true")
        assert json.loads(path.read_text()) == before
        page.locator(f"{hp}-max").fill("6")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.locator("#characters-1").screenshot(path=str(SCREENSHOT), style=HIDE_STICKY, animations="disabled")
        page.get_by_role("button", name="Save world.json").click()
        expect(page.get_by_role("status").first).to_have_text(
            "Saved world.json. The previous version is kept as world.json.bak."
        )

        page.reload()
        expect(page.locator(f"{hp}-kind")).to_have_value("bounded")
        expect(page.locator(f"{hp}-max")).to_have_value("6")
        expect(page.locator(f"{oars}-items-0-name")).to_have_value("oar")
        expect(page.locator(f"{oars}-items-0-count")).to_have_value("2")
        expect(page.locator(f"{oars}-items-1-count")).to_have_value("")
        expect(page.locator(f"{state}-conditions-1-on")).to_be_checked()
        expect(page.locator(f"{state}-conditions-0-on")).not_to_be_checked()
        expect(page.locator(f"{state}-min")).to_be_hidden()
        assert problems == ["Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)"]
    saved = json.loads(path.read_text())
    added = dict(list(saved["characters"][1]["variables"].items())[first:])
    assert added == {
        "hp": {"value": 6, "min": 0, "max": 6},
        "gear": {"items": [{"name": "oar", "count": 2}, "boathook"]},
        "state": {"conditions": {"soaked": False, "drunk": True}},
    }
    assert [problem for problem in validate_world(saved) if problem.severity == "error"] == []
