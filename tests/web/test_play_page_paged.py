"""The play page of a story longer than a transcript page (issue 40, hole 6): it draws the newest page of rounds
that `GET /api/stories/{id}` answers, and says that earlier rounds exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gm.store import RoundRecord, Store
from tests.support.browser import opened_page, sync_api
from tests.support.web import serving

ROUNDS = 203  # the page holds the newest 200


def test_a_long_story_shows_its_newest_page_and_says_earlier_rounds_exist(
    browser: Any, store: Store, worlds: Path
) -> None:
    expect = sync_api().expect
    with (
        serving(store, worlds, [], faces=[]) as (base, _),
        opened_page(browser, width=860, height=900) as (page, problems),
    ):
        started = page.request.post(f"{base}/api/stories", data={"world": "harbour"}).json()
        story, token = started["story"]["id"], started["token"]
        for number in range(1, ROUNDS + 1):  # written straight to the store: no model is asked
            attempt = store.start_attempt(story, number)
            record = RoundRecord(
                story_id=story, number=number, attempt_id=attempt.id, player_text=f"I try {number}.",
                narration=f"Round {number} is told.", outcomes=[], rolls=[], refusals=[],
            )  # fmt: skip
            store.accept_round(attempt.id, record)
        page.goto(f"{base}/play/{story}#token={token}")
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        rounds = page.locator("li.round")
        expect(rounds).to_have_count(200)
        expect(rounds.first).to_have_attribute("data-number", "4")
        expect(rounds.last).to_contain_text(f"Round {ROUNDS} is told.")
        expect(page.locator("#earlier")).to_have_text("The 3 earlier rounds are not shown here.")
        expect(page.locator("#empty")).to_be_hidden()
        assert problems == []
