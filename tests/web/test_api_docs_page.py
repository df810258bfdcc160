"""The API's description page, `/docs` (Swagger UI), works with no internet: every script, style and
icon it loads is served by `gm serve` itself, and in Chromium it draws the API's operations while any
request leaving the server is refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gm.store import Store
from tests.support.browser import opened_page
from tests.support.paths import ARTIFACTS
from tests.support.web import served_app, serving


def test_the_page_loads_nothing_from_elsewhere(store: Store, worlds: Path) -> None:
    with served_app(store, worlds, []) as (client, _):
        page = client.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        linked = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert linked, page.text
        assert all(link.startswith("/") and not link.startswith("//") for link in linked), linked
        assert "http://" not in page.text and "https://" not in page.text
        for link in linked:
            asset = client.get(link)
            assert asset.status_code == 200 and len(asset.content) > 1000, link
        assert client.get("/openapi.json").json()["paths"]["/api/stories"]
        assert client.get("/redoc").status_code == 404  # ReDoc would fetch its logo from Redocly's site


@pytest.mark.browser
def test_the_page_draws_the_api_offline(browser: Any, store: Store, worlds: Path) -> None:
    with (
        serving(store, worlds, [], faces=[]) as (base, _),
        opened_page(browser, width=1100, height=900) as (
            page,
            problems,
        ),
    ):
        elsewhere: list[str] = []

        def only_this_server(route: Any) -> None:
            if route.request.url.startswith(base + "/"):
                route.continue_()
            else:
                elsewhere.append(route.request.url)
                route.abort()

        page.route("**/*", only_this_server)
        page.goto(base + "/docs")
        page.wait_for_selector(".opblock", timeout=30_000)
        page.wait_for_function("document.body.innerText.includes('/api/stories')", timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "api-docs.png"))
        assert elsewhere == [] and problems == []
        assert page.locator(".opblock").count() >= 10  # one block per operation
