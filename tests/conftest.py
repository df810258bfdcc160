"""Shared fixtures: a store on SQLite and, when GM_TEST_POSTGRES_URL is set, on PostgreSQL too."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlmodel import SQLModel

from gm.models.client import forget_tool_modes
from gm.store import Store
from gm.web.process import untune_server_process
from tests.support.browser import launched_browser
from tests.support.databases import NO_POSTGRES, POSTGRES_URL
from tests.support.process import DEFAULT_COLLECTOR, DEFAULT_SWITCH
from tests.support.worlds import write_world


@pytest.fixture(autouse=True)
def _private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test touches the user's own stories: the default database lives in a temporary folder."""
    monkeypatch.setenv("GM_HOME", str(tmp_path / "gm-home"))
    monkeypatch.delenv("GM_DATABASE_URL", raising=False)


@pytest.fixture(autouse=True)
def _untuned_process() -> Iterator[None]:
    """Each test starts with CPython's own collector and switch interval: a test that runs `gm serve` in this
    process (uvicorn.run replaced) tunes it (gm.web.process), which must not reach the tests after it."""
    yield
    untune_server_process()
    gc.set_threshold(*DEFAULT_COLLECTOR)
    sys.setswitchinterval(DEFAULT_SWITCH)


@pytest.fixture(autouse=True)
def _fresh_tool_modes() -> Iterator[None]:
    """Each test starts with no endpoint's tools mode decided: a fake's port may be one an earlier test's fake had."""
    forget_tool_modes()
    yield
    forget_tool_modes()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database: empty, or, for a test that also uses `store`, at the newest schema already.
    PostgreSQL runs only with GM_TEST_POSTGRES_URL set, and then an unreachable server fails the test
    instead of skipping it (CI sets it).

    Migrating a database for every store test was most of their time, so a store's database is a
    copy of a migrated SQLite file, or one migrated PostgreSQL database per test session (each xdist
    worker has its own) emptied before each test, its ids starting again at 1. Migrating from
    empty is tested in tests/store/test_migrations.py, on fresh empty databases."""
    migrated = "store" in request.fixturenames
    if request.param == "sqlite":
        path = tmp_path / "gm.db"
        if migrated:
            shutil.copyfile(request.getfixturevalue("_migrated_sqlite"), path)
        yield f"sqlite:///{path}"
        return
    if not POSTGRES_URL:
        pytest.skip(NO_POSTGRES)
    if migrated:
        url: str = request.getfixturevalue("_migrated_postgres")
        _empty(url)
        yield url
        return
    with _postgres_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path, _migrated_sqlite: Path) -> str:
    """A SQLite database of the test's own at the newest schema: a copy of one migrated once a session."""
    path = tmp_path / "gm.db"
    shutil.copyfile(_migrated_sqlite, path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("migrated") / "gm.db"
    Store(f"sqlite:///{path}").engine.dispose()  # the last connection closed: the WAL is folded into the file
    return path


@pytest.fixture(scope="session")
def _migrated_postgres() -> Iterator[str]:
    with _postgres_database() as url:
        Store(url).engine.dispose()
        yield url
        if (admin := _ADMIN.pop(url, None)) is not None:
            admin.close()


@contextmanager
def _postgres_database() -> Iterator[str]:
    """A new, empty PostgreSQL database, dropped afterwards; its name is unique to this run and worker."""
    assert POSTGRES_URL
    name = f"gm_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{POSTGRES_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _empty(url: str) -> None:
    """Every table of gm's emptied, and its ids starting at 1 again, as in a database just made.

    DELETE, children first: on tables this small it is about three times faster than TRUNCATE, which makes new
    files for every table (measured side by side). Only the sequences the last test drew from are restarted: a
    restart is most of the cost, and most tests draw from few or none. All in one round trip, on a connection
    kept for the session (a new one costs PostgreSQL a process)."""
    admin = _admin(url)
    try:
        admin.execute(_emptying())
    except psycopg.OperationalError:
        if not admin.broken:
            raise  # a lock a test left held, say: its own error
        _admin(url).execute(_emptying())  # the server ended the session's connection: once more on a new one


def _admin(url: str) -> psycopg.Connection[Any]:
    """The session's connection for emptying the database at `url`, made again if a test broke it."""
    connection = _ADMIN.get(url)
    if connection is None or connection.closed or connection.broken:
        connection = _ADMIN[url] = psycopg.connect(url, autocommit=True)
        connection.execute("SET lock_timeout = '20s'")  # a connection a test left in a transaction fails it, not hangs
    return connection


_ADMIN: dict[str, psycopg.Connection[Any]] = {}


@cache
def _emptying() -> str:
    """The query that empties a migrated database: every table's rows, then the sequences that were drawn from."""
    deletes = [f'DELETE FROM "{table.name}"' for table in reversed(SQLModel.metadata.sorted_tables)]
    restarts = """DO $$
        DECLARE drawn text;
        BEGIN
            FOR drawn IN SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' AND last_value IS NOT NULL
            LOOP
                EXECUTE format('ALTER SEQUENCE %I RESTART', drawn);
            END LOOP;
        END $$"""
    return "; ".join([*deletes, restarts])


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    made = Store(database_url)
    yield made
    made.close()


@pytest.fixture
def harbor(tmp_path: Path) -> Path:
    """A small world folder with two checks: an over check with a modifier, and an absolute one."""
    return write_world(tmp_path / "harbor")


@pytest.fixture
def worlds(tmp_path: Path, harbor: Path) -> Path:
    """A server's worlds folder holding the harbour world as `harbour` (editor tests use their own)."""
    folder = tmp_path / "worlds"
    folder.mkdir()
    shutil.copytree(harbor, folder / "harbour")
    return folder


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright, one per test module; a test that asks for it is marked `browser`."""
    with launched_browser() as launched:
        yield launched


HEAVY = ("browser", "subprocess", "slow")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's `worksteal` where it would use `load` (its default): `load` hands each worker its first share as one
    run of consecutive tests, so the worker given the first share got every module of long tests put first (below)
    and ran 90 s after the others were done; with `worksteal` an idle worker takes half of a busy one's queue. Any
    other `--dist` (`loadfile`, `loadscope`, ...) is kept."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


@pytest.hookimpl(optionalhook=True)  # xdist's hook: without xdist (`-p no:xdist`) it is simply not called
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` starts one and a half workers a core: a third of the suite's time is spent waiting (on
    PostgreSQL's round trips, on `gm serve` and Chromium processes, on timers), which a third worker on two cores
    fills. Measured on 2 cores (docs/contributing.md): the fast loop 80.3 s with 2 workers, 60.4 s with 3 and
    61.2 s with 4; the whole suite 215.8 s with 3."""
    return max(1, len(os.sched_getaffinity(0)) * 3 // 2)


@pytest.hookimpl(trylast=True)  # after pytest's own unraisable-exception plugin has collected once more
def pytest_unconfigure(config: pytest.Config) -> None:
    """An xdist worker whose tests are done hides its objects from the collector before the interpreter exits.

    A worker's heap holds millions of objects by then (every module, app and world the tests loaded), and the
    interpreter's finalization collects it several times over: 6 to 9 s with 2 cores busy, while the
    controller waits for every worker to exit before the run ends (measured: the run ended 9.5 s after the
    workers' last tests, 2.8 s once they freeze). Frozen objects are never walked; the process ends all the same."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        gc.freeze()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks what the test's own arguments say: `browser` for a test using Chromium, `postgres` for a test
    run on PostgreSQL (the `database_url` fixture's "postgres" parameter, or a module's own `postgres` mark).

    Then puts the modules holding a browser, subprocess or slow test first, each module's tests kept together
    and in order: xdist hands tests out in this order, and the longest ones, last in the folders' order (the web
    tests), left one core idle while the other finished them."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("database_url") == "postgres":
            item.add_marker(pytest.mark.postgres)
    heavy_modules = {item.path for item in items if any(item.get_closest_marker(name) for name in HEAVY)}
    items.sort(key=lambda item: item.path not in heavy_modules)  # stable: the order within each group stays


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Says, beside the summary line, how many tests were skipped for want of PostgreSQL (without -rs)."""
    skipped = terminalreporter.stats.get("skipped", [])
    for_postgres = sum(1 for report in skipped if "GM_TEST_POSTGRES_URL" in str(report.longrepr))
    if for_postgres:
        terminalreporter.write_line(
            f"{for_postgres} skipped: GM_TEST_POSTGRES_URL is not set, so the PostgreSQL tests did not run "
            "(set it to a server's URL, e.g. postgresql://postgres@127.0.0.1:5432/test)",
            yellow=True,
        )
