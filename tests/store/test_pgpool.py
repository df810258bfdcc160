"""A pooled PostgreSQL connection the server dropped is replaced at checkout (gm.store._pgpool), never a failed call.

SQLite has no server to drop a connection, so these run on PostgreSQL only (CI sets GM_TEST_POSTGRES_URL).
"""

from __future__ import annotations

import time

import psycopg
import pytest
from sqlalchemy import text

from gm.store import Store
from gm.store._pgpool import is_open
from tests.support.databases import POSTGRES_URL

pytestmark = [
    pytest.mark.skipif(not POSTGRES_URL, reason="a server that drops connections: set GM_TEST_POSTGRES_URL"),
    pytest.mark.parametrize("database_url", ["postgres"], indirect=True),
]


def backend_pid(store: Store) -> int:
    with store.engine.connect() as connection:
        return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())


def terminate(database_url: str, pid: int) -> None:
    """Have the server end backend `pid` (as a restart or an administrator would), and wait until it has."""
    with psycopg.connect(database_url, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)
        deadline = time.monotonic() + 10
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, f"backend {pid} did not end"
            time.sleep(0.02)


def test_a_connection_the_server_ended_is_replaced_at_checkout(store: Store, database_url: str) -> None:
    first = backend_pid(store)  # the pool now keeps this connection
    terminate(database_url, first)
    assert store.stories() == []  # no OperationalError: the pool opened another connection
    assert backend_pid(store) != first


def test_an_open_idle_connection_is_kept_and_a_closed_one_is_not(database_url: str) -> None:
    with psycopg.connect(database_url) as connection:
        assert is_open(connection)
        pid = connection.info.backend_pid
        terminate(database_url, pid)
        deadline = time.monotonic() + 10
        while is_open(connection):  # the server's goodbye reaches the socket a moment after the backend ends
            assert time.monotonic() < deadline, "a connection the server ended still looks open"
            time.sleep(0.02)
    assert not is_open(connection)  # closed by the client too
