"""The play page's sheet panel in Chromium: the characters' sheets as the database holds them, redrawn after each
round with what it changed marked, and the same after a reload."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import call, reply
from tests.support.browser import opened_page, sync_api
from tests.support.paths import ARTIFACTS, SAMPLE_WORLDS
from tests.support.web import serving

HURT = {
    "changes": [
        {"character": "Odile", "variable": "grit", "action": "adjust", "amount": -1, "reason": "slipped on the weed"},
        {"character": "Odile", "variable": "carrying", "action": "remove", "item": "wax", "reason": "lost in the mud"},
        {"character": "Odile", "variable": "state", "action": "on", "condition": "soaked", "reason": "waded in"},
    ]
}


@pytest.fixture
def heist(tmp_path: Path) -> Path:
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(SAMPLE_WORLDS / "harbour-heist", folder / "harbour-heist")
    return folder


def entry(page: Any, character: str, variable: str) -> Any:
    return page.locator(f'#sheets .sheet[data-character="{character}"] .sheet-entry[data-variable="{variable}"]')


@pytest.mark.slow
def test_the_sheet_panel_follows_the_rounds(browser: Any, store: Store, heist: Path) -> None:
    expect = sync_api().expect
    script = [
        call("change_sheet", HURT),
        reply("Odile slips on the weed at the gate, wades in to her waist, and the wax is lost in the mud."),
        reply("The clerk turns a page of the shipping news."),
    ]
    with (
        serving(store, heist, script, faces=[]) as (base, _),
        opened_page(browser, width=900, height=900) as (
            page,
            problems,
        ),
    ):
        page.goto(f"{base}/")
        page.get_by_role("button", name="Start a story in Low Water at Greyquay").click()
        page.wait_for_url(re.compile(r"/play/[0-9a-f-]+$"))
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.locator("#sheets")).to_be_visible()
        expect(page.locator("#sheets .sheet h3")).to_have_text(["Odile", "Dace", "Pruitt", "Quell"])
        expect(entry(page, "Odile", "grit").locator("dd")).to_have_text("3 (0 to 3)")
        expect(entry(page, "Odile", "carrying").locator("dd")).to_have_text(
            "wax, blank manifest x3, shuttered lantern, roll of picks"
        )
        expect(page.locator("#sheets .changed")).to_have_count(0)

        page.locator("#text").fill("I wade to the water gate.")
        page.locator("#text").press("Enter")
        expect(page.locator("#sheets")).to_have_attribute("data-round", "1")  # drawn again once the round is in
        expect(page.locator("#rounds > li.round")).to_have_count(1)
        expect(entry(page, "Odile", "grit").locator("dd")).to_have_text("2 (0 to 3)")
        expect(entry(page, "Odile", "carrying").locator("dd")).to_have_text(
            "blank manifest x3, shuttered lantern, roll of picks"
        )
        expect(entry(page, "Odile", "state").locator("dd")).to_have_text(
            "soaked (of soaked, spotted, sealed the manifests)"
        )
        expect(page.locator("#sheets .changed")).to_have_count(3)
        expect(entry(page, "Odile", "grit")).to_have_attribute(
            "title", "changed in the last round: slipped on the weed"
        )
        expect(entry(page, "Dace", "grit")).not_to_have_class(re.compile("changed"))
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator("#sheets").screenshot(path=str(ARTIFACTS / "play-sheets.png"))

        page.locator("#text").fill("I listen at the door.")  # a round that changes nothing: the marks go
        expect(page.locator("#send")).to_be_enabled()  # the last round's stream is closed: Enter sends
        page.locator("#text").press("Enter")
        expect(page.locator("#rounds > li.round")).to_have_count(2)
        expect(page.locator("#sheets")).to_have_attribute("data-round", "2")
        expect(page.locator("#sheets .changed")).to_have_count(0)
        expect(entry(page, "Odile", "grit").locator("dd")).to_have_text("2 (0 to 3)")

        page.reload()  # from the database again
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(entry(page, "Odile", "grit").locator("dd")).to_have_text("2 (0 to 3)")
        assert problems == []


@pytest.mark.slow
def test_a_world_without_sheets_shows_no_panel(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    with (
        serving(store, worlds, [], faces=[]) as (base, _),
        opened_page(browser, width=900, height=900) as (
            page,
            problems,
        ),
    ):
        page.goto(f"{base}/")
        page.get_by_role("button", name="Start a story in The Harbour Job").click()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.locator("#sheets")).to_be_hidden()
        assert problems == []
