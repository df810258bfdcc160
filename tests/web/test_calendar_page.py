"""The play page in a world with a calendar, in Chromium: the story's time under the title, each round's under it."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from gm.testing import call, reply
from tests.support.browser import opened_page, sync_api
from tests.support.paths import ARTIFACTS
from tests.support.web import serving
from tests.support.worlds import CALENDAR, HARBOR_WORLD, write_world


@pytest.fixture
def worlds(tmp_path: Path) -> Path:
    folder = tmp_path / "worlds"
    write_world(folder / "bloom", {**copy.deepcopy(HARBOR_WORLD), "calendar": CALENDAR})
    return folder


def test_the_play_page_shows_the_time(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    script = [call("advance_time", {"amount": 3, "unit": "hours", "reason": "waiting"}), reply("Night falls.")]
    script.append(reply("You look at the stars."))
    with (
        serving(store, worlds, script, faces=[]) as (base, _),
        opened_page(browser, width=860, height=900) as (page, problems),
    ):
        page.goto(f"{base}/")
        page.get_by_role("button", name="Start a story in The Harbour Job").click()
        page.wait_for_url(re.compile(r"/play/[0-9a-f-]+$"))
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.locator("#now")).to_have_text("It is Threeday, 11 Bloom 311 AL, 19:30 (day).")

        page.locator("#text").fill("I wait until it is dark.")
        page.locator("#text").press("Enter")
        rounds = page.locator("#rounds > li.round")
        expect(rounds.nth(0).locator(".narration")).to_have_text("Night falls.")
        expect(rounds.nth(0).locator(".round-time")).to_have_text("Threeday, 11 Bloom 311 AL, 22:30 (night)")
        expect(page.locator("#now")).to_have_text("It is Threeday, 11 Bloom 311 AL, 22:30 (night).")

        page.locator("#text").fill("I look up.")
        expect(page.locator("#send")).to_be_enabled()  # the last round's stream is closed: Enter sends
        page.locator("#text").press("Enter")
        expect(rounds.nth(1).locator(".round-time")).to_have_text("Threeday, 11 Bloom 311 AL, 22:30 (night)")
        page.reload()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.locator(".round-time")).to_have_count(2)
        expect(page.locator("#now")).to_have_text("It is Threeday, 11 Bloom 311 AL, 22:30 (night).")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "play-page-calendar.png"), full_page=True)
        assert problems == []


def test_a_world_without_a_calendar_shows_no_time(browser: Any, store: Store, harbor: Path, tmp_path: Path) -> None:
    expect = sync_api().expect
    folder = tmp_path / "plain"
    shutil.copytree(harbor, folder / "harbour")
    with (
        serving(store, folder, [reply("Fog.")], faces=[]) as (base, _),
        opened_page(browser, width=860, height=900) as (page, _problems),
    ):
        page.goto(f"{base}/")
        page.get_by_role("button", name="Start a story in The Harbour Job").click()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        page.locator("#text").fill("I wait.")
        page.locator("#text").press("Enter")
        expect(page.locator("#rounds .narration")).to_have_text("Fog.")
        expect(page.locator("#now")).to_be_hidden()
        expect(page.locator(".round-time")).to_have_count(0)
