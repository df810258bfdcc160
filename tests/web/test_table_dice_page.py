"""Dice rolled at the table on the play page, in Chromium (Playwright): the question, a wrong answer, the faces,
a reload while a round waits, and abandoning it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.engine.transcript import transcript
from gm.store import Store
from tests.support.browser import opened_page as open_page
from tests.support.browser import sync_api
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import serving

QUESTION = "Roll 1d20 for Risky attempt, Mara: type the faces"


@pytest.fixture
def worlds(tmp_path: Path, harbor: Path) -> Path:
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(harbor, folder / "harbour")
    return folder


def test_the_play_page_asks_for_the_faces(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    script = [roll_mara(), narrate_roll("The lock gives with a soft click."), roll_mara()]
    # The engine has no faces to give: every check roll here comes from the player.
    with (
        serving(store, worlds, script, faces=[]) as (base, _),
        open_page(browser, width=860, height=900) as (
            page,
            problems,
        ),
    ):
        page.goto(f"{base}/")
        world = page.locator("li.world", has_text="The Harbour Job")
        world.get_by_label("I roll the checks at the table").check()
        world.get_by_role("button", name="Start a story in The Harbour Job").click()
        page.wait_for_url(re.compile(r"/play/[0-9a-f-]+$"))
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        story_id = str(page.locator("#play").get_attribute("data-story"))
        expect(page.locator("#faces-form")).to_be_hidden()

        page.locator("#text").fill("I pick the lock of the harbour office.")
        page.locator("#text").press("Enter")
        expect(page.locator("#question")).to_have_text(QUESTION)
        expect(page.locator("#faces-form")).to_be_visible()
        expect(page.locator("#send")).to_be_disabled()  # no other round while this one waits
        expect(page.locator("#rounds > li.round .player")).to_have_text("I pick the lock of the harbour office.")

        page.get_by_label(QUESTION).fill("25")
        page.get_by_role("button", name="Send the faces").click()
        expect(page.locator("#error")).to_have_text(
            "Those faces do not answer: face 1 (25) is not on a d20, which shows 1 to 20"
        )
        expect(page.locator("#question")).to_have_text(QUESTION)  # the question stands

        page.get_by_label(QUESTION).fill("11")
        page.get_by_role("button", name="Send the faces").click()
        expect(page.locator("#rounds > li.round .narration")).to_have_text("The lock gives with a soft click.")
        expect(page.locator("#faces-form")).to_be_hidden()
        expect(page.locator("details.card summary")).to_have_text("Risky attempt - Mara: Partial success")
        page.locator("details.card summary").click()
        expect(page.locator("details.card .dice-line")).to_have_text(
            "1d20 (11) = 11, +3, target 12 -> 2, partial success, typed at the table"
        )
        [roll] = transcript(store, story_id).rounds[0].rolls
        assert roll.faces == [[11]] and roll.typed

        # Round 2 pauses; after a reload the page still asks, and the round can be abandoned.
        page.locator("#text").fill("I try the inner door.")
        expect(page.locator("#send")).to_be_enabled()  # the last round's stream is closed: Enter sends
        page.locator("#text").press("Enter")
        expect(page.locator("#question")).to_have_text(QUESTION)
        page.reload()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.locator("#question")).to_have_text(QUESTION)
        page.get_by_role("button", name="Abandon the round").click()
        expect(page.locator("#faces-form")).to_be_hidden()
        expect(page.locator("#send")).to_be_enabled()
        assert store.question(story_id) is None
        # The browser logs the one 400 the wrong faces drew, and nothing else.
        assert problems == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
