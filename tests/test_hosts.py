"""One meaning of "this machine only" for `gm serve`, `gm edit` and the editor they mount (gm._hosts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gm._hosts import LOOPBACK_HOSTS, allowed_hosts, is_loopback
from gm.cli._serve import editor_hosts
from gm.engine.game import Game
from gm.store import Store
from gm.web.app import create_app


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "LocalHost", "127.0.0.2", "127.255.255.254", "::1", "[::1]"]
)
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    assert "*" not in allowed_hosts(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "10.0.0.1", "::2", "example.org", "128.0.0.1", ""])
def test_other_addresses(host: str) -> None:
    assert not is_loopback(host)
    assert allowed_hosts(host) == ("*",)


def test_gm_serve_on_ipv6_loopback_mounts_the_editor_for_this_machine_only() -> None:
    # Before gm._hosts, `gm serve` knew only 127.0.0.1 and localhost: on ::1 it left the editor out
    # (and would have mounted it for any Host with --editor), while `gm edit --host ::1` was local.
    assert editor_hosts("::1", editor=False) == LOOPBACK_HOSTS
    assert editor_hosts("::1", editor=True) == LOOPBACK_HOSTS
    assert editor_hosts("127.0.0.1", editor=False) == LOOPBACK_HOSTS
    assert editor_hosts("127.0.0.2", editor=False) == (*LOOPBACK_HOSTS, "127.0.0.2")


def test_gm_serve_elsewhere_mounts_the_editor_only_when_asked() -> None:
    assert editor_hosts("0.0.0.0", editor=False) is None
    assert editor_hosts("0.0.0.0", editor=True) == ("*",)


def test_the_editor_on_ipv6_loopback_answers_its_bracketed_address(sqlite_url: str, harbor: Path) -> None:
    store = Store(sqlite_url)
    hosts = editor_hosts("::1", editor=False)
    assert hosts is not None
    app = create_app(Game(model=None, store=store), harbor.parent, editor_hosts=hosts)  # type: ignore[arg-type]
    try:
        with TestClient(app, base_url="http://[::1]:8000") as local:
            assert local.get("/editor/").status_code == 200
        with TestClient(app, base_url="http://attacker.example") as remote:
            assert remote.get("/editor/").status_code == 400
    finally:
        store.engine.dispose()
