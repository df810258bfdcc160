"""Shared fixtures: a store on SQLite and, when GM_TEST_POSTGRES_URL is set, on PostgreSQL too."""

from __future__ import annotations

import gc
import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlmodel import SQLModel

from gm.models.client import forget_tool_modes
from gm.store import Store
from gm.web.process import untune_server_process

POSTGRES_URL = os.environ.get("GM_TEST_POSTGRES_URL")
DEFAULT_COLLECTOR = gc.get_threshold()  # as pytest started: CPython's defaults
DEFAULT_SWITCH = sys.getswitchinterval()


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
    empty is tested in tests/test_migrations.py, on fresh empty databases."""
    migrated = "store" in request.fixturenames
    if request.param == "sqlite":
        path = tmp_path / "gm.db"
        if migrated:
            shutil.copyfile(request.getfixturevalue("_migrated_sqlite"), path)
        yield f"sqlite:///{path}"
        return
    if not POSTGRES_URL:
        pytest.skip("GM_TEST_POSTGRES_URL is not set")
    if migrated:
        url: str = request.getfixturevalue("_migrated_postgres")
        _empty(url)
        yield url
        return
    with _postgres_database() as url:
        yield url


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

    DELETE, children first, then each sequence restarted: on tables this small it is about three
    times faster than TRUNCATE, which makes new files for every table (measured side by side)."""
    with psycopg.connect(url) as connection:
        connection.execute("SET lock_timeout = '20s'")  # a connection a test left in a transaction fails it, not hangs
        for table in reversed(SQLModel.metadata.sorted_tables):
            connection.execute(f'DELETE FROM "{table.name}"')
        sequences = connection.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'")
        for (sequence,) in sequences.fetchall():
            connection.execute(f'ALTER SEQUENCE "{sequence}" RESTART')


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    made = Store(database_url)
    yield made
    made.engine.dispose()


HARBOR_WORLD: dict[str, Any] = {
    "title": "The Harbour Job",
    "premise": "Salt-rotten Port Vey, where the harbour office keeps the ledgers that could free Mara's brother.",
    "instructions": "Keep it tense and wry. Short paragraphs.",
    "characters": [
        {
            "name": "Mara",
            "role": "player",
            "description": "A locksmith's daughter with quick hands.",
            "variables": {"skill": 3, "hometown": "Vey"},
        },
        {"name": "Jon", "role": "npc", "description": "A dockhand who owes Mara a favour.", "variables": {"skill": -1}},
        {"name": "The Warden", "role": "npc", "description": "Keeper of the harbour office.", "variables": {}},
    ],
}

HARBOR_DICE: dict[str, Any] = {
    "checks": [
        {
            "key": "attempt",
            "name": "Risky attempt",
            "use": "Any risky action whose outcome is in doubt; the target is its difficulty.",
            "dice": "1d20",
            "compare": "over",
            "modifier": "skill",
            "bands": [
                {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
                {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
                {"label": "Partial success", "min": 0, "max": 4, "result": "partial"},
                {"label": "Success", "min": 5, "max": 9, "result": "succeeded"},
                {"label": "Critical success", "min": 10, "result": "succeeded", "critical": True},
            ],
        },
        {
            "key": "notice",
            "name": "Notice",
            "use": "Spotting what is hidden.",
            "dice": "2d6",
            "bands": [
                {"label": "Miss it", "max": 6, "result": "failed"},
                {"label": "Glimpse", "min": 7, "max": 9, "result": "partial"},
                {"label": "See it", "min": 10, "result": "succeeded"},
            ],
        },
    ]
}


def write_world(folder: Path, world: dict[str, Any] = HARBOR_WORLD, dice: dict[str, Any] | None = HARBOR_DICE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "world.json").write_text(json.dumps(world, indent=2))
    if dice is not None:
        (folder / "dice.json").write_text(json.dumps(dice, indent=2))
    return folder


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
