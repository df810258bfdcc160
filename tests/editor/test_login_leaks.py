"""What a client that is not logged in must never get from the editor: the forms' token (hole 1 of issue 40),
and a way past the Origin check through the login page's "send it again"; and what logging out ends (hole 9).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gm.editor import create_app
from gm.editor.login import COOKIE
from gm.editor.sessions import Login
from tests.support.editor_forms import form_of, post

TOKEN = "the-editor-token-for-tests"
REMOTE = "http://192.0.2.10:8765"
DICE = "/worlds/harbour-heist/dice"


@pytest.fixture
def app(worlds: Path) -> Any:
    return create_app(worlds, allowed_hosts=("*",), login=Login(TOKEN))


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url=REMOTE) as made:
        yield made


def log_in(client: TestClient) -> None:
    assert post(client, "/login", {"token": TOKEN, "next": "/"}).status_code == 303


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/static/nope"), ("PUT", "/login"), ("GET", "/login"), ("DELETE", "/static/editor.css"), ("GET", "/")],
)
def test_no_page_shows_the_forms_token_to_a_client_not_logged_in(client: TestClient, method: str, path: str) -> None:
    token = client.app.state.editor.csrf.token  # type: ignore[attr-defined]
    answer = client.request(method, path)
    assert answer.status_code >= 400 or path == "/login"
    assert token not in answer.text and "Log out" not in answer.text


def test_a_logged_in_client_still_gets_the_token_on_error_pages(client: TestClient) -> None:
    log_in(client)
    token = client.app.state.editor.csrf.token  # type: ignore[attr-defined]
    missing = client.get("/static/nope")
    assert missing.status_code == 404 and token in missing.text and "Log out" in missing.text


def test_a_cross_site_post_with_the_token_is_refused_not_kept_for_the_login(client: TestClient, worlds: Path) -> None:
    token = client.app.state.editor.csrf.token  # type: ignore[attr-defined]
    evil = {"Origin": "http://evil.example"}
    answer = client.post(DICE, data={"csrf": token, "action": "save", "checks-0-name": "Evil"}, headers=evil)
    assert answer.status_code == 403 and 'name="carry"' not in answer.text and "another site" in answer.text


def test_logging_out_ends_the_session_on_the_server(client: TestClient, app: Any) -> None:
    log_in(client)
    session = client.cookies[COOKIE]
    assert post(client, "/logout", form_of(client.get("/").text)).status_code == 303
    with TestClient(app, base_url=REMOTE, cookies={COOKIE: session}) as copied:
        page = copied.get("/")
        assert page.status_code == 401 and "Your login has ended" in page.text


def test_logging_out_ends_only_that_session(app: Any) -> None:
    with TestClient(app, base_url=REMOTE) as first, TestClient(app, base_url=REMOTE) as second:
        log_in(first)
        log_in(second)
        assert post(first, "/logout", form_of(first.get("/").text)).status_code == 303
        assert first.get("/").status_code == 401 and second.get("/").status_code == 200
