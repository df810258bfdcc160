"""The world editor's login, through FastAPI's TestClient: refused without it, saving with it, expired and
tampered cookies, wrong tokens and their limit, the defences that stay, `gm edit` and `gm serve --editor`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gm.cli import main
from gm.editor import create_app
from gm.editor.login import COOKIE
from gm.editor.sessions import FAILURE_WINDOW, FAILURES_ALLOWED, Login
from gm.errors import SettingsError
from tests.support.editor_forms import form_of, post, submit

TOKEN = "the-editor-token-for-tests"
REMOTE = "http://192.0.2.10:8765"  # a Host name another machine would use
DICE = "/worlds/harbour-heist/dice"
FORM = "application/x-www-form-urlencoded"


class Clock:
    """A clock that moves only when a test moves it (no test here sleeps)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(worlds: Path, clock: Clock) -> Any:
    return create_app(worlds, allowed_hosts=("*",), login=Login(TOKEN, clock=clock))


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app, base_url=REMOTE, client=("198.51.100.7", 50000)) as made:
        yield made


def log_in(client: TestClient, token: str = TOKEN, next_path: str = "/") -> Any:
    return post(client, "/login", {"token": token, "next": next_path})


def files(worlds: Path) -> dict[str, bytes]:
    return {str(path.relative_to(worlds)): path.read_bytes() for path in sorted(worlds.rglob("*")) if path.is_file()}


# Refused without a login.

WITHOUT_LOGIN = [
    ("GET", "/"),
    ("GET", "/new"),
    ("GET", "/worlds/harbour-heist"),
    ("GET", DICE),
    ("GET", f"{DICE}/raw"),
    ("HEAD", "/"),
    ("GET", "/worlds/nowhere"),
    ("GET", "/login/"),
    ("POST", DICE),
    ("POST", f"{DICE}/preview"),
    ("POST", f"{DICE}/raw"),
    ("POST", "/worlds/harbour-heist"),
    ("POST", "/new"),
    ("POST", "/logout"),
    ("PUT", DICE),
    ("DELETE", "/worlds/harbour-heist"),
]


@pytest.mark.parametrize(("method", "path"), WITHOUT_LOGIN)
def test_the_editor_refuses_another_host_without_a_login(
    client: TestClient, worlds: Path, method: str, path: str
) -> None:
    before = files(worlds)
    csrf = client.app.state.editor.csrf.token  # type: ignore[attr-defined]
    fields = {"action": "save", "folder": "planted", "title": "Taken", "text": '{"checks": []}'}
    body = None if method in {"GET", "HEAD"} else fields
    answer = client.request(method, path, data=body)
    assert answer.status_code == 401
    if method != "HEAD":
        assert 'name="token"' in answer.text and "Low Water at Greyquay" not in answer.text
        assert csrf not in answer.text  # the login page does not hand out the forms' token
        assert 'name="carry"' not in answer.text and "Taken" not in answer.text  # a stranger's form is dropped
        assert "Traceback" not in answer.text
    assert COOKIE not in answer.headers.get("set-cookie", "")
    if body is not None:
        # Even with the forms' token (say, copied from a page seen before the session ended): no login, no write.
        assert client.request(method, path, data={**fields, "csrf": csrf}).status_code == 401
    assert files(worlds) == before


def test_gm_edit_beyond_loopback_refuses_the_editor_without_a_login(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The defect itself: `gm edit --host 0.0.0.0` answered 200 with the whole editor to anyone.
    monkeypatch.delenv("GM_EDITOR_TOKEN", raising=False)
    app = served_by_gm_edit(worlds, monkeypatch, "0.0.0.0")
    with TestClient(app, base_url=REMOTE) as remote:
        assert remote.get("/").status_code == 401
        save = submit(remote, DICE, "save", {"checks-0-name": "Taken"})
        assert save.status_code == 401
    assert "Taken" not in (worlds / "harbour-heist" / "dice.json").read_text()


def test_static_files_and_the_login_page_need_no_login(client: TestClient) -> None:
    for path in ["/static/editor.css", "/static/editor.js", "/static/favicon.svg", "/login"]:
        assert client.get(path).status_code == 200, path
    assert "stays logged in here for 12 hours" in client.get("/login").text


def test_the_login_page_says_how_long_a_session_lasts(worlds: Path) -> None:
    app = create_app(worlds, allowed_hosts=("*",), login=Login(TOKEN, lifetime=90))
    with TestClient(app, base_url=REMOTE) as client:
        assert "stays logged in here for 1 minute," in client.get("/login").text


def test_the_library_refuses_an_editor_for_any_host_without_a_login(worlds: Path) -> None:
    with pytest.raises(SettingsError, match="needs a login to answer Host names beyond loopback"):
        create_app(worlds, allowed_hosts=("*",))
    with pytest.raises(SettingsError, match=re.escape("192.0.2.10")):
        create_app(worlds, allowed_hosts=("127.0.0.1", "192.0.2.10"))
    create_app(worlds, allowed_hosts=("127.0.0.1", "localhost", "[::1]", "127.0.0.2"))  # loopback needs none


# Logging in.


def test_the_login_sets_a_strict_cookie_and_a_save_then_works(client: TestClient, worlds: Path) -> None:
    answer = log_in(client, next_path=DICE)
    assert answer.status_code == 303 and answer.headers["location"] == DICE
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
    assert "Max-Age=43200" in cookie and "Secure" not in cookie  # plain HTTP: a Secure cookie would be dropped
    assert "Low Water at Greyquay" in client.get("/").text
    saved = submit(client, DICE, "save", {"checks-0-name": "Logged In"})
    assert saved.status_code == 303
    assert json.loads((worlds / "harbour-heist" / "dice.json").read_text())["checks"][0]["name"] == "Logged In"


def test_the_cookie_is_secure_over_https(app: Any) -> None:
    with TestClient(app, base_url="https://editor.example") as client:
        cookie = log_in(client).headers["set-cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie


@pytest.mark.parametrize("next_path", ["//evil.example/", "https://evil.example/", "/\\evil.example", "/worlds/A B"])
def test_a_login_leads_back_to_the_editor_only(client: TestClient, next_path: str) -> None:
    assert log_in(client, next_path=next_path).headers["location"] == "/"


def test_logging_out_ends_the_session(client: TestClient) -> None:
    log_in(client)
    assert client.get("/").status_code == 200
    assert post(client, "/logout", {}).status_code == 403  # without the form's token
    page = client.get("/")
    out = post(client, "/logout", form_of(page.text))  # the page's first form is the Log out button's
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert f'{COOKIE}=""' in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
    assert client.get("/").status_code == 401


def test_on_loopback_without_a_token_there_is_no_login(worlds: Path) -> None:
    with TestClient(create_app(worlds), base_url="http://127.0.0.1") as client:
        page = client.get("/")
        assert page.status_code == 200 and "Log out" not in page.text
        assert client.get("/login").status_code == 404


def test_on_loopback_a_token_asks_for_the_login_too(worlds: Path) -> None:
    with TestClient(create_app(worlds, login=Login(TOKEN)), base_url="http://127.0.0.1") as client:
        assert client.get("/").status_code == 401
        log_in(client)
        assert "Log out" in client.get("/").text


def test_editors_in_one_process_keep_their_own_log_out_button(worlds: Path) -> None:
    """The editors share their templates (editor/pages.py): whether a page shows "Log out" is each editor's own."""
    with TestClient(create_app(worlds, login=Login(TOKEN)), base_url="http://127.0.0.1") as with_login:
        log_in(with_login)
        with TestClient(create_app(worlds), base_url="http://127.0.0.1") as without:
            assert "Log out" in with_login.get("/").text
            assert "Log out" not in without.get("/").text
            assert "Log out" in with_login.get("/").text


# Expired, tampered and foreign cookies.


def test_an_expired_cookie_is_refused(client: TestClient, clock: Clock) -> None:
    log_in(client)
    clock.now += 12 * 60 * 60 - 1
    assert client.get("/").status_code == 200
    clock.now += 1
    page = client.get("/")
    assert page.status_code == 401 and "Your login has ended" in page.text
    posted = client.post(DICE, data={"action": "save"})
    assert posted.status_code == 401 and "Nothing was changed: your login has ended. Log in to go on." in posted.text


def test_a_form_posted_after_the_session_ended_is_sent_again_after_the_login(
    client: TestClient, worlds: Path, clock: Clock
) -> None:
    dice = worlds / "harbour-heist" / "dice.json"
    before = dice.read_bytes()
    log_in(client)
    fields = {**form_of(client.get(DICE).text), "action": "save", "checks-0-use": "Two lines,\r\nkept & <escaped>."}
    clock.now += 12 * 60 * 60
    refused = post(client, DICE, fields)
    assert refused.status_code == 401 and "Nothing was saved yet: your login has ended" in refused.text
    assert dice.read_bytes() == before
    login_form = form_of(refused.text)
    assert login_form["next"] == DICE and login_form["carry"]
    wrong = post(client, "/login", {**login_form, "token": "a-wrong-token"})
    assert wrong.status_code == 401 and form_of(wrong.text)["carry"] == login_form["carry"]  # kept through a typo
    again = post(client, "/login", {**login_form, "token": TOKEN})
    assert again.status_code == 200 and "Send it again" in again.text
    assert dice.read_bytes() == before  # not sent until the author says so
    resent = form_of(again.text)
    assert resent == fields
    assert post(client, DICE, resent).status_code == 303
    assert json.loads(dice.read_text())["checks"][0]["use"] == "Two lines,\nkept & <escaped>."  # saved as lines


def test_a_strangers_big_or_odd_post_gets_the_login_page(client: TestClient) -> None:
    csrf = client.app.state.editor.csrf.token  # type: ignore[attr-defined]
    big = client.post(DICE, data={"csrf": csrf, "action": "save", "checks-0-use": "x" * 1_100_000})
    assert big.status_code == 413 and 'name="carry"' not in big.text  # the body limit comes before the login
    as_json = client.post(DICE, json={"csrf": csrf, "action": "save"})
    assert as_json.status_code == 401 and 'name="carry"' not in as_json.text
    broken = client.post(DICE, content=b"csrf=\xff\xfe&action=save", headers={"Content-Type": FORM})
    assert broken.status_code == 401 and 'name="carry"' not in broken.text


def test_a_carried_form_must_hold_the_forms_token(client: TestClient) -> None:
    forged = "csrf=not-the-token&action=save&checks-0-name=Taken"
    answer = post(client, "/login", {"token": TOKEN, "next": DICE, "carry": forged})
    assert answer.status_code == 303 and answer.headers["location"] == DICE


def test_a_tampered_cookie_is_refused(app: Any) -> None:
    with TestClient(app, base_url=REMOTE) as client:
        log_in(client)
        session = client.cookies[COOKIE]
    version, expires, session_id, signature = session.split(".")
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    for forged in [
        f"{version}.{expires}.{session_id}.{flipped}",
        f"{version}.{int(expires) + 86_400}.{session_id}.{signature}",  # stretched
        f"{version}.{expires}.{session_id}",
        Login(TOKEN).issue(),  # signed by another process with the same token
        "admin",
    ]:
        with TestClient(app, base_url=REMOTE, cookies={COOKIE: forged}) as client:
            assert client.get("/").status_code == 401, forged
    with TestClient(app, base_url=REMOTE, cookies={COOKIE: session}) as client:
        assert client.get("/").status_code == 200


def test_a_valid_cookie_counts_beside_a_stale_one_of_the_same_name(app: Any) -> None:
    # Two editors on one host name (gm edit and gm serve, on two ports) share the browser's cookie jar.
    with TestClient(app, base_url=REMOTE) as client:
        log_in(client)
        session = client.cookies[COOKIE]
    stale = Login(TOKEN).issue()
    with TestClient(app, base_url=REMOTE) as client:
        assert client.get("/", headers={"Cookie": f"{COOKIE}={stale}; {COOKIE}={session}"}).status_code == 200


# Wrong tokens.


def test_a_wrong_token_is_a_401_page(client: TestClient) -> None:
    answer = log_in(client, "not-the-token")
    assert answer.status_code == 401 and "That is not the editor&#39;s token" in answer.text
    assert "set-cookie" not in answer.headers
    assert log_in(client, "   ").status_code == 400  # nothing typed: said so, and not counted


def test_repeated_failures_from_one_client_are_slowed_down(app: Any, clock: Clock) -> None:
    with (
        TestClient(app, base_url=REMOTE, client=("198.51.100.7", 1)) as guesser,
        TestClient(app, base_url=REMOTE, client=("203.0.113.9", 1)) as author,
    ):
        for _ in range(FAILURES_ALLOWED):
            assert log_in(guesser, "a-wrong-guess").status_code == 401
            clock.now += 1
        held = log_in(guesser, "another-guess")
        assert held.status_code == 429 and held.headers["retry-after"] == str(int(FAILURE_WINDOW) - FAILURES_ALLOWED)
        assert "Too many wrong tokens from your address" in held.text
        right = log_in(guesser)  # even the right token: a guesser must learn nothing while held
        assert right.status_code == 429 and "set-cookie" not in right.headers
        assert log_in(author).status_code == 303  # another client is not held up
        clock.now += FAILURE_WINDOW
        assert log_in(guesser).status_code == 303


def test_wrong_tokens_from_one_ipv6_network_count_together(app: Any) -> None:
    for host in range(FAILURES_ALLOWED):
        with TestClient(app, base_url=REMOTE, client=(f"2001:db8:7:7::{host + 1:x}", 1)) as client:
            assert log_in(client, "a-wrong-guess").status_code == 401
    with TestClient(app, base_url=REMOTE, client=("2001:db8:7:7::beef", 1)) as client:
        assert log_in(client).status_code == 429


# The defences that were there stay.


def test_the_form_token_origin_check_and_body_limit_still_apply(client: TestClient, worlds: Path) -> None:
    before = files(worlds)
    evil = {"Origin": "http://evil.example"}
    assert client.post("/login", data={"token": TOKEN}, headers=evil).status_code == 403
    assert client.post("/login", data={"token": "x" * 1_100_000}).status_code == 413
    log_in(client)
    fields = {**form_of(client.get(DICE).text), "action": "save", "checks-0-name": "Forged"}
    assert post(client, DICE, {**fields, "csrf": "not-the-token"}).status_code == 403
    assert client.post(DICE, data=fields, headers=evil).status_code == 403
    assert client.post(DICE, data={**fields, "checks-0-use": "x" * 1_100_000}).status_code == 413
    assert files(worlds) == before


def test_the_host_check_stays_on_loopback_with_a_login(worlds: Path) -> None:
    with TestClient(create_app(worlds, login=Login(TOKEN)), base_url="http://attacker.example") as client:
        assert client.get("/login").status_code == 400
        assert client.post("/login", data={"token": TOKEN}).status_code == 400


# `gm edit` and `gm serve --editor`.


def served_by_gm_edit(worlds: Path, monkeypatch: pytest.MonkeyPatch, host: str) -> Any:
    served: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: served.update(app=app, **options))
    assert main(["edit", str(worlds), "--host", host, "--port", "0"]) == 0
    assert served["host"] == host
    return served["app"]


def printed_token(out: str) -> str:
    found = re.findall(r"^    (\S+)$", out, re.M)
    assert len(found) == 1, out
    return str(found[0])


def test_gm_edit_prints_a_generated_token_once_and_it_works(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GM_EDITOR_TOKEN", raising=False)
    app = served_by_gm_edit(worlds, monkeypatch, "0.0.0.0")
    out = capsys.readouterr().out
    token = printed_token(out)
    assert len(token) == 32 and out.count(token) == 1
    with TestClient(app, base_url=REMOTE) as client:
        assert log_in(client, "not-" + token).status_code == 401
        assert log_in(client, token).status_code == 303
        assert submit(client, DICE, "save", {"checks-0-name": "From Afar"}).status_code == 303
    assert "From Afar" in (worlds / "harbour-heist" / "dice.json").read_text()
    served_by_gm_edit(worlds, monkeypatch, "0.0.0.0")  # a second start: a fresh token, the first one no longer
    assert printed_token(capsys.readouterr().out) != token


def test_gm_edit_uses_gm_editor_token_and_never_prints_it(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GM_EDITOR_TOKEN", TOKEN)
    for host in ["0.0.0.0", "127.0.0.1"]:
        app = served_by_gm_edit(worlds, monkeypatch, host)
        out = capsys.readouterr().out
        assert TOKEN not in out and "asks for the token in GM_EDITOR_TOKEN" in out
        with TestClient(app, base_url=REMOTE if host == "0.0.0.0" else "http://127.0.0.1") as client:
            assert client.get("/").status_code == 401
            assert log_in(client).status_code == 303 and client.get("/").status_code == 200


def test_gm_edit_on_loopback_prints_no_token(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GM_EDITOR_TOKEN", raising=False)
    app = served_by_gm_edit(worlds, monkeypatch, "127.0.0.1")
    assert "token" not in capsys.readouterr().out
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/").status_code == 200


def test_gm_edit_refuses_a_short_gm_editor_token(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GM_EDITOR_TOKEN", "secret")
    monkeypatch.setattr("uvicorn.run", lambda app, **options: pytest.fail("served with a short token"))
    assert main(["edit", str(worlds), "--host", "0.0.0.0", "--port", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "error: GM_EDITOR_TOKEN: the editor's token must be at least 8 characters long, not 6"
        " (or unset it to have one generated)\n"
    )
    assert "secret" not in captured.out


def serve(worlds: Path, monkeypatch: pytest.MonkeyPatch, *options: str) -> Any:
    served: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **kwargs: served.update(app=app, **kwargs))
    model = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k"]  # never called here
    assert main(["serve", "--worlds", str(worlds), *options, *model]) == 0
    return served["app"]


@pytest.mark.slow
def test_gm_serve_with_the_editor_beyond_loopback_asks_for_the_printed_token(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GM_EDITOR_TOKEN", raising=False)
    app = serve(worlds, monkeypatch, "--host", "0.0.0.0", "--editor")
    out = capsys.readouterr().out
    token = printed_token(out)
    assert out.count(token) == 1
    with TestClient(app, base_url="http://192.0.2.10:8000") as client:
        assert client.get("/api/worlds").status_code == 200  # the API is not behind the editor's login
        refused = client.get("/editor/worlds/harbour-heist")
        assert refused.status_code == 401 and 'action="/editor/login"' in refused.text
        assert 'name="next" value="/worlds/harbour-heist"' in refused.text
        answer = post(client, "/editor/login", {"token": token, "next": "/worlds/harbour-heist"})
        assert answer.status_code == 303 and answer.headers["location"] == "/editor/worlds/harbour-heist"
        assert "Path=/editor" in answer.headers["set-cookie"]  # the play page and API never see it
        saved = submit(client, "/editor/worlds/harbour-heist/dice", "save", {"checks-0-name": "Served"})
        assert saved.status_code == 303
    assert "Served" in (worlds / "harbour-heist" / "dice.json").read_text()


def test_gm_serve_on_loopback_mounts_the_editor_without_a_login(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GM_EDITOR_TOKEN", raising=False)
    app = serve(worlds, monkeypatch, "--host", "127.0.0.1")
    assert "token" not in capsys.readouterr().out
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/editor/").status_code == 200
    monkeypatch.setenv("GM_EDITOR_TOKEN", TOKEN)
    app = serve(worlds, monkeypatch, "--host", "127.0.0.1")
    with TestClient(app, base_url="http://127.0.0.1:8000") as client:
        assert client.get("/editor/").status_code == 401


def test_gm_serve_beyond_loopback_without_editor_prints_no_token(
    worlds: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GM_EDITOR_TOKEN", raising=False)
    app = serve(worlds, monkeypatch, "--host", "0.0.0.0")
    out = capsys.readouterr().out
    assert "not mounted" in out and "token" not in out
    with TestClient(app, base_url="http://192.0.2.10:8000") as client:
        assert client.get("/editor/").status_code == 404
