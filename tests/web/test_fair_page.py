"""The play page's side of dice integrity, in Chromium: fair dice chosen at the start with the player's seed,
the commitment shown, `/roll 7` refused, and a roll kept across a failed attempt marked as such."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gm.engine.transcript import odds_text, opened, transcript
from gm.integrity import fair
from gm.store import Store
from gm.testing import http_error
from tests.support.browser import BAD_REQUEST, opened_page, sync_api
from tests.support.paths import ARTIFACTS
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import serving

NO_DICE = "there are no dice to roll here, only a number; a roll needs dice, such as 1d20 or 2d6+1"


@pytest.mark.slow
def test_a_fair_story_started_and_played_in_the_browser(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    script = [roll_mara(), http_error(400, "The model refused."), roll_mara(), narrate_roll()]
    ARTIFACTS.mkdir(exist_ok=True)
    with (
        serving(store, worlds, script, faces=[]) as (base, _),
        opened_page(browser, width=860, height=900) as (page, problems),
    ):
        page.goto(f"{base}/")
        world = page.locator("li.world", has_text="The Harbour Job")
        seed_field = world.get_by_label("Your seed (optional)")
        expect(seed_field).to_be_disabled()  # a seed of one's own is for fair dice only
        world.get_by_label("Provably fair dice").check()
        page.screenshot(path=str(ARTIFACTS / "fair-start-page.png"))
        expect(seed_field).to_be_enabled()
        seed_field.fill("Mara's <lucky> coin")
        world.get_by_role("button", name="Start a story in The Harbour Job").click()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        story_id = page.locator("#play").get_attribute("data-story")

        seeds = store.seeds(story_id)
        assert store.story(story_id).fair and store.story(story_id).player_seed == "Mara's <lucky> coin"
        expect(page.locator("#fair")).to_be_visible()
        expect(page.locator("#commitment")).to_have_text(seeds[0].commitment)
        expect(page.locator("#player-seed")).to_have_text("Mara's <lucky> coin")

        # A /roll without dice: one line, nothing played or rolled, the text given back.
        page.locator("#text").fill("/roll 7 for luck")
        page.locator("#text").press("Enter")
        expect(page.locator("#error")).to_have_text(f"Not sent: 7: {NO_DICE}")
        expect(page.locator("#text")).to_have_value("/roll 7 for luck")
        assert store.story_rolls(story_id) == []

        # The first attempt rolls, then fails; the second gets the same roll back, and its card says so.
        page.locator("#text").fill("I pick the lock.")
        page.locator("#text").press("Enter")
        expect(page.locator("#error")).to_contain_text("The round did not happen")
        [rolled] = store.story_rolls(story_id)
        expect(page.locator("#text")).to_have_value("I pick the lock.")
        page.locator("#text").press("Enter")  # the text was given back: send it again
        rounds = page.locator("#rounds > li.round")
        expect(rounds).to_have_count(1)
        card = page.locator("details.card")
        expect(card).to_have_count(1)
        card.locator("summary").click()
        [kept] = transcript(store, story_id).rounds[0].rolls
        assert kept.id == rolled.id and kept.from_earlier_attempt
        key = fair.key_for(seeds[0].seed, "Mara's <lucky> coin")
        assert kept.faces == fair.derive_faces(key, story_id, 1, "1d20")
        expect(card.locator(".dice-line")).to_have_text(re.sub(r"^.*?  \[(.*)\]$", r"\1", opened(kept)))
        # The odds at the moment of the roll, in the same digits as the terminal's (play.js's percent).
        expect(card.locator(".dice-odds")).to_have_text(f"odds {odds_text(kept)}")
        assert odds_text(kept).startswith("Critical failure 0.0%, Failure 40.0%, Partial success 25.0%")
        expect(card.locator(".dice-line")).to_contain_text(", rolled in an earlier attempt")
        assert page.locator("#fair lucky").count() == 0  # the player's seed is text, never markup
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "fair-play-page.png"), full_page=True)
        assert problems == [f"Failed to load resource: {BAD_REQUEST}"]  # Chromium's note of the /roll's 400
        stored = json.loads(page.evaluate("localStorage.getItem('gm.stories')"))
        assert story_id in stored
