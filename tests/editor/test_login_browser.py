"""The editor's login in a real browser: Debian's Chromium, driven by Playwright, logs in and saves.

The editor listens on every address, as `gm edit --host 0.0.0.0` does, and the browser reaches it
through this machine's own network address when it has one (so the Host is not a loopback name).
Without playwright or /usr/bin/chromium this skips, except on CI, where it fails. A screenshot of
the refused login is left in tests/artifacts/editor-login.png.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gm.editor import create_app
from gm.editor.login import COOKIE
from gm.editor.sessions import Login, new_token
from tests.support.browser import opened_page, sync_api
from tests.support.paths import ARTIFACTS, SAMPLE_WORLDS
from tests.support.web import uvicorn_in_thread

SCREENSHOT = ARTIFACTS / "editor-login.png"


def own_address() -> str:
    """This machine's address on its network (no packet is sent), or 127.0.0.1 when it has none."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET: only picks the outgoing interface
            address = str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"
    return address if address != "0.0.0.0" else "127.0.0.1"


class Clock:
    """The wall clock, plus however far a test has moved it on."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@contextmanager
def serving(worlds: Path, token: str, clock: Clock | None = None) -> Iterator[str]:
    """The editor with a login under uvicorn on 0.0.0.0 (a free port) in a thread; yields its address."""
    app = create_app(worlds, allowed_hosts=("*",), login=Login(token, clock=clock))
    with uvicorn_in_thread(app, "0.0.0.0") as port:
        yield f"http://{own_address()}:{port}"


@pytest.fixture
def worlds(tmp_path: Path) -> Path:
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(SAMPLE_WORLDS / "harbour-heist", folder / "harbour-heist")
    return folder


@pytest.mark.slow
def test_an_author_logs_in_from_another_machine_and_saves(browser: Any, worlds: Path) -> None:
    expect = sync_api().expect
    dice_path = worlds / "harbour-heist" / "dice.json"
    token = new_token()
    with serving(worlds, token) as base, opened_page(browser, width=1000, height=800) as (page, problems):
        answer = page.goto(f"{base}/worlds/harbour-heist/dice")
        assert answer is not None and answer.status == 401
        expect(page.get_by_role("heading", level=1)).to_have_text("Log in")
        expect(page.get_by_role("status")).to_have_text("Log in to use the world editor.")
        assert page.locator("form.dice").count() == 0  # nothing of the editor shows

        page.get_by_label("Editor token").fill("not-" + token)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("alert")).to_contain_text("That is not the editor's token")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), animations="disabled")

        page.get_by_label("Editor token").fill(token)
        page.get_by_role("button", name="Log in").click()
        expect(page).to_have_url(f"{base}/worlds/harbour-heist/dice")  # back where the author was going
        expect(page.locator("#summary")).to_have_text("No problems: this can be saved.")
        (cookie,) = page.context.cookies()
        assert cookie["name"] == COOKIE and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert cookie["expires"] > time.time() + 11 * 3600
        assert page.evaluate("document.cookie") == ""  # out of reach of any script on the page

        # The live preview posts with the cookie too, and the save goes through.
        expect(page.locator("form.dice")).to_have_attribute("data-live", "true")
        page.locator("#checks-0").get_by_label("Name").fill("Pick a lock")
        page.locator("#checks-0").get_by_label("Dice").fill("3d6")
        expect(page.locator("#strip-0 .segment").first).not_to_contain_text("40.00%")
        page.get_by_role("button", name="Save dice.json").click()
        expect(page.get_by_role("status").first).to_have_text(
            "Saved dice.json. The previous version is kept as dice.json.bak."
        )

        page.get_by_role("button", name="Log out").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Log in")
        assert page.context.cookies() == []
        # Chromium logs each 401 page it loads; nothing else went wrong (no script error, no CSP report).
        assert problems == ["Failed to load resource: the server responded with a status of 401 (Unauthorized)"] * 2
    saved = json.loads(dice_path.read_text())
    assert saved["checks"][0]["name"] == "Pick a lock" and saved["checks"][0]["dice"] == "3d6"


@pytest.mark.parametrize("scripts", [True, False], ids=["scripts", "no-scripts"])
def test_a_save_after_the_session_ended_is_kept_through_the_login(browser: Any, worlds: Path, scripts: bool) -> None:
    expect = sync_api().expect
    dice_path = worlds / "harbour-heist" / "dice.json"
    before = dice_path.read_text()
    token, clock = new_token(), Clock()
    with (
        serving(worlds, token, clock) as base,
        opened_page(browser, width=1000, height=800, scripts=scripts) as (page, _),
    ):
        page.goto(f"{base}/worlds/harbour-heist/dice")
        page.get_by_label("Editor token").fill(token)
        page.get_by_role("button", name="Log in").click()
        page.locator("#checks-0").get_by_label("Name").fill("Typed at the end of a long day")
        clock.ahead = 12 * 60 * 60  # the session ends while the author types

        page.get_by_role("button", name="Save dice.json").click()
        expect(page.get_by_role("alert")).to_contain_text("Nothing was saved yet: your login has ended.")
        assert dice_path.read_text() == before
        page.get_by_label("Editor token").fill(token)
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("status")).to_contain_text("Nothing is lost")
        assert dice_path.read_text() == before  # sent only when the author presses the button
        page.get_by_role("button", name="Send it again").click()
        expect(page.get_by_role("status").first).to_have_text(
            "Saved dice.json. The previous version is kept as dice.json.bak."
        )
        expect(page.locator("#checks-0").get_by_label("Name")).to_have_value("Typed at the end of a long day")
    assert json.loads(dice_path.read_text())["checks"][0]["name"] == "Typed at the end of a long day"
