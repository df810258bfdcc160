"""The play page of `gm serve`: its routes (TestClient), and a story played in Chromium (Playwright)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gm.engine.transcript import card, opened, transcript
from gm.store import Store
from gm.testing import reply, slow
from gm.transcript.shapes import RollPublic
from tests.support.browser import BAD_REQUEST, sync_api
from tests.support.browser import opened_page as open_page
from tests.support.paths import ARTIFACTS, SAMPLE_WORLDS
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import served_app, serving

NOT_FOUND = "the server responded with a status of 404 (Not Found)"
TRICKY_TITLE = 'Mara\'s <b>Harbour</b> & "Co"'


# ---- routes ----


def test_the_start_page_lists_the_worlds_escaped(store: Store, worlds: Path) -> None:
    tricky = shutil.copytree(worlds / "harbour", worlds / "tricky")
    data = json.loads((tricky / "world.json").read_text())
    (tricky / "world.json").write_text(json.dumps({**data, "title": TRICKY_TITLE}))
    with served_app(store, worlds, []) as (client, _):
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        html = page.text
        assert "The Harbour Job" in html
        assert "Mara&#39;s &lt;b&gt;Harbour&lt;/b&gt; &amp; &#34;Co&#34;" in html
        assert "<b>Harbour</b>" not in html
        assert re.findall(r'<form class="start" data-world="([^"]+)"', html) == ["harbour", "tricky"]
        assert html.count('name="dice" value="hidden"') == 2
        assert "You play Mara." in html and "2 dice checks." in html
        assert 'id="api-token"' not in html  # no GM_API_TOKEN, no token field
        assert "script-src 'self'" in page.headers["content-security-policy"]


def test_the_start_page_asks_for_the_api_token_when_the_server_has_one(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, [], api_token="s3cret") as (client, _):
        html = client.get("/").text
        assert 'id="api-token"' in html and 'type="password"' in html
        assert "s3cret" not in html


def test_the_start_page_without_worlds(store: Store, tmp_path: Path) -> None:
    with served_app(store, tmp_path / "no-worlds", []) as (client, _):
        assert "There are no worlds to play yet" in client.get("/").text


def test_the_play_page_is_served_for_any_id(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        for story_id in ("feedface", "not-a-story"):
            page = client.get(f"/play/{story_id}")
            assert page.status_code == 200, page.text
            assert f'data-story="{story_id}"' in page.text and 'id="text"' in page.text
        odd = client.get("/play/%3Cscript%3Ex")
        assert odd.status_code == 200 and 'data-story="&lt;script&gt;x"' in odd.text
        assert odd.headers["referrer-policy"] == "no-referrer"


def test_static_files_are_served_and_nothing_else(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        pages = client.get("/").text + client.get("/play/x").text
        linked = re.findall(r'(?:src|href)="(/static/[^"]+)"', pages)
        assert set(linked) == {"/static/gm.css", "/static/start.js", "/static/play.js"}
        for path, media in [
            ("/static/gm.css", "text/css"),
            ("/static/start.js", "text/javascript"),
            ("/static/play.js", "text/javascript"),
            ("/static/common.js", "text/javascript"),
        ]:
            answer = client.get(path)
            assert answer.status_code == 200, path
            assert answer.headers["content-type"].startswith(media)
        for path in ("/static/nope.js", "/static/pages.py", "/static/.hidden.js", "/static/..%2Fpages.py"):
            assert client.get(path).status_code == 404, path
        assert "no static file" in client.get("/static/nope.js").json()["error"]


def test_the_pages_stay_out_of_the_api_documentation(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        paths = client.get("/openapi.json").json()["paths"]
        assert not any(path == "/" or path.startswith(("/play", "/static")) for path in paths)


# ---- in a browser ----


def opened_page(browser: Any) -> Any:
    return open_page(browser, width=860, height=900)


@pytest.mark.slow
def test_a_story_played_in_the_browser(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    player_text = 'I whisper "<b>hello</b>" to the clerk & wait.'
    narration = 'The clerk mouths <img src=x onerror="window.pwned=1"> and nothing more.\n\nA clock ticks.'
    script = [
        roll_mara(),  # round 1: a Risky attempt for Mara against 12
        narrate_roll("The lock gives with a soft click."),
        roll_mara(),  # regenerated: the same roll comes back, no die is rolled again
        narrate_roll("The lock yields, grudgingly, with a click like a cough."),
        slow(reply(narration), 1.5),  # round 2, in plain text, slow enough to see the game master thinking
    ]
    with serving(store, worlds, script, faces=[11]) as (base, _), opened_page(browser) as (page, problems):
        sent: list[Any] = []
        page.on("request", lambda request: sent.append(request))

        # The start page: start a story in the harbour world, dice shown.
        page.goto(f"{base}/")
        world = page.locator("li.world", has_text="The Harbour Job")
        expect(world.locator("h2")).to_have_text("The Harbour Job")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "start-page.png"), full_page=True)
        world.get_by_role("button", name="Start a story in The Harbour Job").click()
        page.wait_for_url(re.compile(r"/play/[0-9a-f-]+$"))  # the token fragment is taken out of the address bar
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        story_id = page.locator("#play").get_attribute("data-story")
        token = json.loads(page.evaluate("localStorage.getItem('gm.stories')"))[story_id]["token"]
        expect(page.locator("#story-title")).to_have_text("The Harbour Job")
        expect(page.locator("#empty")).to_be_visible()
        expect(page.get_by_label("Shown")).to_be_checked()

        # Round 1: a roll and an honest narration. 11 + 3 (Mara's skill) - 12 = 2: Partial success (0 to 4).
        page.locator("#text").fill("I pick the lock of the harbour office.")
        page.locator("#text").press("Enter")
        rounds = page.locator("#rounds > li.round")
        expect(rounds).to_have_count(1)
        first = rounds.nth(0)
        expect(first.locator(".player")).to_have_text("I pick the lock of the harbour office.")
        expect(first.locator(".narration")).to_have_text("The lock gives with a soft click.")
        cards = page.locator("details.card")
        expect(cards).to_have_count(1)
        summary = "Risky attempt - Mara: Partial success"
        line = "1d20 (11) = 11, +3, target 12 -> 2, partial success"
        expect(cards.first.locator("summary")).to_have_text(summary)
        expect(cards.first).not_to_have_attribute("open", "")
        expect(cards.first.locator(".dice-line")).to_be_hidden()
        cards.first.locator("summary").click()
        expect(cards.first.locator(".dice-line")).to_be_visible()
        expect(cards.first.locator(".dice-line")).to_have_text(line)
        [stored] = transcript(store, story_id).rounds[0].rolls
        assert card(stored) == summary and opened(stored) == f"{summary}  [{line}]"  # the terminal's words
        roll_id = cards.first.get_attribute("data-roll")

        # Regenerate: a new telling of round 1, its roll kept (and its card still open).
        page.get_by_role("button", name="Regenerate").click()
        expect(first.locator(".narration")).to_have_text("The lock yields, grudgingly, with a click like a cough.")
        expect(rounds).to_have_count(1)
        expect(cards).to_have_count(1)
        assert cards.first.get_attribute("data-roll") == roll_id
        expect(cards.first.locator(".dice-line")).to_have_text(line)

        # Bad /roll notation: one readable line, nothing played, the text given back.
        page.locator("#text").fill("/roll 2d6+x pick the lock")
        page.get_by_role("button", name="Send").click()
        expect(page.locator("#error")).to_have_text(
            "Not sent: 2d6+x: unexpected 'x' at column 5, expected a number or dice"
        )
        expect(page.locator("#text")).to_have_value("/roll 2d6+x pick the lock")
        expect(rounds).to_have_count(1)

        # Round 2, in plain text; what the player typed and what the model wrote are text, never HTML.
        page.locator("#text").fill(player_text)
        expect(page.locator("#send")).to_be_enabled()  # the last round's stream is closed: Enter sends
        page.locator("#text").press("Enter")
        expect(page.locator("#status")).to_have_text("The game master is thinking…")
        expect(page.locator("#error")).to_be_hidden()
        second = rounds.nth(1)
        expect(second.locator(".player")).to_have_text(player_text)
        expect(second.locator(".narration p")).to_have_text(
            ['The clerk mouths <img src=x onerror="window.pwned=1"> and nothing more.', "A clock ticks."]
        )
        expect(page.locator("#status")).to_be_hidden()
        assert page.locator("#rounds img, #rounds b").count() == 0
        assert page.evaluate("window.pwned") is None
        expect(second.locator("details.card")).to_have_count(0)

        # The Dice setting: hidden shows no dice at all, and is the story's (it holds across a reload).
        page.get_by_label("Hidden").check()
        expect(cards).to_have_count(0)
        expect(page.locator("#rounds")).not_to_contain_text("Risky attempt")
        page.reload()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(rounds).to_have_count(2)
        expect(page.get_by_label("Hidden")).to_be_checked()
        expect(cards).to_have_count(0)
        page.get_by_label("Shown").check()
        expect(cards).to_have_count(1)
        expect(cards.first.locator(".dice-line")).to_be_hidden()
        cards.first.locator("summary").click()
        expect(cards.first.locator(".dice-line")).to_have_text(line)

        page.screenshot(path=str(ARTIFACTS / "play-page.png"), full_page=True)

        # The token went only in Authorization headers: never in a URL the server saw.
        api = [request for request in sent if "/api/stories/" in request.url]
        assert api and all(request.all_headers().get("authorization") == f"Bearer {token}" for request in api)
        assert not any(token in request.url for request in sent)
        assert problems == [f"Failed to load resource: {BAD_REQUEST}"]  # Chromium's note of the bad /roll's 400


def test_the_cards_read_as_the_terminal_does(browser: Any, store: Store, worlds: Path) -> None:
    """play.js's cardText/diceLine against gm.engine.transcript's card()/opened(), for every kind of roll."""
    base_roll = {"id": 1, "reason": "", "target": None, "modifier": 0, "faces": [[4, 4]], "successes": None}
    rolls: list[dict[str, Any]] = [
        {**base_roll, "kind": "player", "character": "Mara", "check": None, "check_name": None, "notation": "2d6+1",
         "reason": "pick the lock", "total": 9, "value": None, "band": None, "result": None, "critical": False,
         "void": False, "dice": "2d6 (4, 4) + 1 = 9"},
        {**base_roll, "kind": "dice", "character": None, "check": None, "check_name": None, "notation": "2d6",
         "reason": "the weather", "total": 8, "value": None, "band": None, "result": None, "critical": False,
         "void": False, "dice": "2d6 (4, 4) = 8"},
        {**base_roll, "kind": "check", "character": "Jon", "check": "attempt", "check_name": "Risky attempt",
         "notation": "1d20", "target": 5, "modifier": -1, "total": 20, "value": 14, "band": "Critical success",
         "result": "succeeded", "critical": True, "void": False, "dice": "1d20 (20) = 20"},
        {**base_roll, "kind": "check", "character": "Mara", "check": "notice", "check_name": None,
         "notation": "2d6", "total": 8, "value": 8, "band": None, "result": None, "critical": False,
         "void": True, "dice": "2d6 (4, 4) = 8"},
    ]  # fmt: skip
    with serving(store, worlds, [], faces=[]) as (base, _), opened_page(browser) as (page, problems):
        page.goto(f"{base}/play/none")
        expect = sync_api().expect
        expect(page.locator("#error")).to_contain_text("This story cannot be opened here")
        read = page.evaluate(
            """async (rolls) => {
                const { cardText, diceLine } = await import("/static/play.js");
                return rolls.map((roll) => `${cardText(roll)}  [${diceLine(roll)}]`);
            }""",
            rolls,
        )
        assert read == [opened(RollPublic.model_validate(roll)) for roll in rolls]
        assert problems == []


def test_a_failed_round_reads_as_one_line(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    lie = narrate_roll("It opens at once.", "succeeded")
    script = [roll_mara(), lie, lie, lie, lie]
    with serving(store, worlds, script, faces=[11]) as (base, _), opened_page(browser) as (page, problems):
        page.goto(f"{base}/")
        page.get_by_role("radio", name="Hidden").check()
        page.get_by_role("button", name="Start a story in The Harbour Job").click()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.get_by_label("Hidden")).to_be_checked()
        page.locator("#text").fill("I pick the lock.")
        page.locator("#text").press("Enter")
        error = page.locator("#error")
        expect(error).to_contain_text("The round did not happen: the game master could not end the round")
        expect(error).not_to_contain_text("{")
        expect(page.locator("#rounds > li")).to_have_count(0)
        expect(page.locator("#text")).to_have_value("I pick the lock.")
        expect(page.locator("#status")).to_be_hidden()
        expect(page.get_by_role("button", name="Regenerate")).to_be_disabled()
        # A story this browser has no token for cannot be opened, and says so in words.
        page.goto(f"{base}/play/{page.locator('#play').get_attribute('data-story')}x")
        expect(page.locator("#error")).to_have_text(
            "This story cannot be opened here: its key is in the link given when it started (after #token=). "
            "Start a story from the start page."
        )
        assert problems == []
        # One it has a token for, but the server does not know: the API's 404, in words.
        page.evaluate(
            "id => localStorage.setItem('gm.stories', JSON.stringify({[id]: {token: 'nope', title: 'Lost'}}))",
            "feedface",
        )
        page.goto(f"{base}/play/feedface")
        expect(page.locator("#error")).to_have_text(
            "This story cannot be opened: there is no story 'feedface' for this token"
        )
        expect(page.locator("#text")).to_be_disabled()
        assert problems == [f"Failed to load resource: {NOT_FOUND}"]


def test_starting_a_story_with_the_servers_api_token(browser: Any, store: Store, worlds: Path) -> None:
    expect = sync_api().expect
    with (
        serving(store, worlds, [], faces=[], api_token="s3cret") as (base, _),
        opened_page(browser) as (page, problems),
    ):
        page.goto(f"{base}/")
        start = page.get_by_role("button", name="Start a story in The Harbour Job")
        start.click()
        error = page.locator("#start-error")
        expect(error).to_have_text("Starting a story on this server needs its API token: fill it in above.")
        page.get_by_label("This server's API token").fill("wrong")
        start.click()
        expect(error).to_have_text("The story was not started: the API token is wrong")
        page.get_by_label("This server's API token").fill("s3cret")
        start.click()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        expect(page.locator("#story-title")).to_have_text("The Harbour Job")
        assert problems == ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"]
        # The start page now offers the story again, and the token field keeps the token for this tab.
        page.goto(f"{base}/")
        expect(page.locator("#saved-list a")).to_have_text(["The Harbour Job"])
        expect(page.get_by_label("This server's API token")).to_have_value("s3cret")


def test_the_start_page_tells_worlds_and_stories_apart(browser: Any, store: Store, worlds: Path) -> None:
    """Each world shows its premise and has its start button on a line of its own; two stories of one
    world are listed with the date each began and its round count; the text box's limit is stated."""
    expect = sync_api().expect
    long_title = shutil.copytree(worlds / "harbour", worlds / "long")
    data = json.loads((long_title / "world.json").read_text())
    (long_title / "world.json").write_text(json.dumps({**data, "title": "Low Water"}))  # a short title: room beside
    script = [reply("The fog thickens."), reply("Gulls cry.")]
    with serving(store, worlds, script, faces=[]) as (base, _), opened_page(browser) as (page, problems):
        page.goto(f"{base}/")
        harbour = page.locator("li.world", has_text="The Harbour Job")
        expect(harbour.locator(".premise")).to_have_text(data["premise"])
        for world in (harbour, page.locator("li.world", has_text="Low Water")):
            dice_box = world.locator("fieldset.dice-choice").bounding_box()
            fair_box = world.locator("fieldset.fair-choice").bounding_box()
            button = world.get_by_role("button").bounding_box()
            assert dice_box and fair_box and button
            assert button["y"] >= max(dice_box["y"] + dice_box["height"], fair_box["y"] + fair_box["height"])
        page.screenshot(path=str(ARTIFACTS / "start-page-worlds.png"), full_page=True)

        stories = []
        for _ in range(2):
            page.goto(f"{base}/")
            page.get_by_role("button", name="Start a story in The Harbour Job").click()
            expect(page.locator("#play")).to_have_attribute("data-ready", "true")
            stories.append(page.locator("#play").get_attribute("data-story"))
        text = page.locator("#text")
        expect(text).to_have_attribute("maxlength", "4000")
        expect(page.locator("#say .hint")).to_contain_text("Up to 4,000 characters.")
        for words in ("I wait.", "I wait some more."):
            expect(page.locator("#status")).to_be_hidden()  # the round before is over
            text.fill(words)
            text.press("Enter")
            expect(page.locator("#rounds > li.round .narration").last).to_have_text(
                "The fog thickens." if words == "I wait." else "Gulls cry."
            )

        page.goto(f"{base}/")
        items = page.locator("#saved-list li")
        expect(items).to_have_count(2)
        expect(items.locator("a")).to_have_text(["The Harbour Job", "The Harbour Job"])
        expect(items.nth(0)).to_contain_text("2 rounds")  # the newest first
        expect(items.nth(1)).to_contain_text("0 rounds")
        year = str(store.story(stories[0]).created_at.year)
        expect(items.nth(0).locator(".meta")).to_contain_text("started ")
        expect(items.nth(0).locator(".meta")).to_contain_text(year)
        assert problems == []


def test_the_start_page_keeps_premises_paragraphs_lists_stories_first_and_offers_only_dice_that_exist(
    browser: Any, store: Store, tmp_path: Path
) -> None:
    """The sample worlds as a player meets them: each premise's first paragraph, the rest under "Read on" with
    its paragraphs kept; "Your stories" above the worlds; no dice options for a world without checks."""
    expect = sync_api().expect
    samples = SAMPLE_WORLDS
    worlds = tmp_path / "worlds"
    for name in ("harbour-heist", "tea-house"):
        shutil.copytree(samples / name, worlds / name)
    premise = json.loads((worlds / "tea-house" / "world.json").read_text())["premise"]
    paragraphs = [part.strip() for part in premise.split("\n\n")]
    assert len(paragraphs) == 3
    with serving(store, worlds, [], faces=[]) as (base, _), opened_page(browser) as (page, problems):
        page.goto(f"{base}/")
        page.get_by_role("button", name="Start a story in Low Water at Greyquay").click()
        expect(page.locator("#play")).to_have_attribute("data-ready", "true")
        page.goto(f"{base}/")
        expect(page.locator("#saved")).to_be_visible()
        saved, first_world = page.locator("#saved").bounding_box(), page.locator("li.world").first.bounding_box()
        assert saved and first_world and saved["y"] < first_world["y"]  # your stories come first
        tea = page.locator("li.world", has_text="The Second Pot")
        expect(tea.locator(".premise > p")).to_have_text(paragraphs[0])
        expect(tea.locator(".premise details p")).to_have_text(paragraphs[1:])
        expect(tea.locator(".premise details p").first).to_be_hidden()  # until "Read on" is opened
        tea.get_by_text("Read on").click()
        expect(tea.locator(".premise details p").first).to_be_visible()
        expect(tea.locator("fieldset, input[name=dice-from]")).to_have_count(0)  # tea-house has no checks
        harbour = page.locator("li.world", has_text="Low Water at Greyquay")
        expect(harbour.locator("fieldset.dice-choice")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "start-page-samples.png"), full_page=True)
        assert problems == []
