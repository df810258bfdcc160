"""Browser tests' shared parts: Debian's Chromium through Playwright (no browser download), and pages."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# This machine reaches no network but package registries: these flags spare Chromium its attempts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

BAD_REQUEST = "the server responded with a status of 400 (Bad Request)"  # Chromium's console note of a 400
# How long an `expect(...)` waits for a page to show what it must: Playwright's 5 s was once too short for a round
# to reach the page on a machine loaded by other work (the page then showed it); a page that never shows it fails.
EXPECT_MS = 15_000


def sync_api() -> Any:
    """Playwright's sync API, or a skip with a message (a failure on CI) when it or Chromium is missing."""
    try:
        from playwright import sync_api as api
    except ImportError:
        api = None
    missing = "playwright is not installed" if api is None else None
    if missing is None and not CHROMIUM.exists():
        missing = f"{CHROMIUM} is missing (apt-get install chromium)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"the browser tests cannot run on CI: {missing}")
        pytest.skip(f"no browser for the browser tests: {missing}")
    return api


@contextmanager
def launched_browser() -> Iterator[Any]:
    api = sync_api()
    api.expect.set_options(timeout=EXPECT_MS)
    with api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@contextmanager
def opened_page(browser: Any, *, width: int, height: int, scripts: bool = True) -> Iterator[tuple[Any, list[str]]]:
    """A fresh page (its own storage) and the console errors, failed loads and CSP reports it logs."""
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=scripts)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    try:
        yield page, problems
    finally:
        context.close()
