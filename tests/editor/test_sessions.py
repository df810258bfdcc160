"""The editor's login secrets without HTTP (gm.editor.sessions): tokens, signed sessions, the failure limit."""

from __future__ import annotations

import doctest
from collections.abc import Callable

import pytest

import gm.editor.sessions
from gm.editor.sessions import (
    MIN_TOKEN_CHARS,
    FailureLimit,
    Login,
    checked_token,
    client_key,
    login_for_host,
    new_token,
)
from gm.errors import SettingsError

TOKEN = "a-long-enough-token"


class Clock:
    """A clock that moves only when a test moves it."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_module_examples_hold() -> None:
    result = doctest.testmod(gm.editor.sessions)
    assert result.attempted >= 5 and result.failed == 0


def test_a_session_expires_after_its_lifetime() -> None:
    clock = Clock()
    login = Login(TOKEN, lifetime=600, clock=clock)
    session = login.issue()
    clock.now += 599
    assert login.valid(session)
    clock.now += 1
    assert not login.valid(session)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"),  # the signature
        lambda s: s.replace(".", ".9", 1),  # the expiry, made later
        lambda s: "1" + s[1:],  # the version
        lambda s: s.replace(s.split(".")[2], s.split(".")[2][::-1]),  # the session's id
        lambda s: s.rsplit(".", 1)[0],  # no signature
        lambda s: s + "." + s,
        lambda s: s.replace(s.split(".")[1], "\u0661" * len(s.split(".")[1])),  # non-ASCII digits
        lambda s: "",
    ],
)
def test_a_tampered_session_is_not_valid(tamper: Callable[[str], str]) -> None:
    login = Login(TOKEN)
    session = login.issue()
    assert login.valid(session)
    assert not login.valid(tamper(session))


def test_a_session_from_another_process_is_not_valid() -> None:
    # Same token, another secret: a restart (or another editor on the same machine) ends sessions.
    assert not Login(TOKEN).valid(Login(TOKEN).issue())


def test_the_token_must_be_typed_exactly() -> None:
    login = Login(TOKEN)
    assert login.matches(TOKEN) and login.matches(f"  {TOKEN}\n")
    for wrong in ["", TOKEN.upper(), TOKEN[:-1], TOKEN + "x", "é" + TOKEN]:
        assert not login.matches(wrong), wrong


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("short", f"must be at least {MIN_TOKEN_CHARS} characters long, not 5"),
        ("   ", f"must be at least {MIN_TOKEN_CHARS} characters long, not 0"),
        ("has\ta-tab-inside", "must not hold control characters"),
    ],
)
def test_a_weak_or_garbled_token_is_refused(token: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        checked_token(token)


def test_generated_tokens_are_long_and_fresh() -> None:
    tokens = {new_token() for _ in range(100)}
    assert len(tokens) == 100 and all(len(token) == 32 for token in tokens)


def test_failures_are_limited_per_client_within_a_window() -> None:
    clock = Clock(0.0)
    limit = FailureLimit(allowed=3, window=60, clock=clock)
    for _ in range(3):
        assert limit.wait("a") == 0
        limit.failed("a")
        clock.now += 1
    assert limit.wait("a") == pytest.approx(57)  # the first failure leaves the window at 60
    assert limit.wait("b") == 0  # another client is not held up
    clock.now = 60
    assert limit.wait("a") == 0  # one failure has left the window: one more try
    limit.failed("a")
    assert limit.wait("a") == pytest.approx(1)
    limit.forget("a")
    assert limit.wait("a") == 0


def test_the_failure_limit_remembers_a_bounded_number_of_clients() -> None:
    clock = Clock(0.0)
    limit = FailureLimit(allowed=1, window=60, clients=100, clock=clock)
    for number in range(1_000):
        limit.failed(f"client-{number}")
    assert len(limit._failures) == 100
    assert limit.wait("client-999") > 0 and limit.wait("client-0") == 0
    clock.now = 61
    assert limit.wait("client-999") == 0 and len(limit._failures) == 99  # old entries go when looked at


def test_clients_are_counted_by_address_and_ipv6_network() -> None:
    assert client_key("203.0.113.5") == "203.0.113.5"
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key("::ffff:203.0.113.5") == "203.0.113.5"
    assert client_key(None) == "unknown" and client_key("testclient") == "testclient"


def test_which_hosts_get_a_login() -> None:
    assert login_for_host("127.0.0.1", None) == (None, None)
    assert login_for_host("::1", "") == (None, None)  # an empty GM_EDITOR_TOKEN counts as unset
    login, generated = login_for_host("127.0.0.1", TOKEN)
    assert login is not None and login.matches(TOKEN) and generated is None
    login, generated = login_for_host("0.0.0.0", TOKEN)
    assert login is not None and login.matches(TOKEN) and generated is None
    login, generated = login_for_host("0.0.0.0", None)
    assert login is not None and generated is not None and login.matches(generated)
    with pytest.raises(SettingsError, match="at least"):
        login_for_host("0.0.0.0", "short")


def test_a_revoked_session_ends_and_the_live_sessions_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gm.editor.sessions, "LIVE_SESSIONS", 3)
    login = Login(TOKEN)
    first, *others = [login.issue() for _ in range(4)]
    assert not login.valid(first)  # the oldest ended when a fourth began
    assert all(login.valid(session) for session in others)
    assert login.revoke(others[0]) and not login.valid(others[0]) and not login.revoke(others[0])
    assert login.valid(others[1])
