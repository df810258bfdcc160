"""`gm serve` tunes the garbage collector (gm.heap) once its app is built, in one process and in each worker."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from command_line import gm

from gm.cli_serve import WORKER_ARGUMENTS, worker_app
from gm.heap import YOUNG_OBJECTS


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, whatever the test did to it."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def collector_now() -> dict[str, Any]:
    return {"young": gc.get_threshold()[0], "frozen": gc.get_freeze_count()}


def test_gm_serve_freezes_the_built_app_and_widens_the_young_generation(
    worlds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: None
) -> None:
    assert gc.get_threshold()[0] != YOUNG_OBJECTS and gc.get_freeze_count() == 0  # else this test proves nothing
    served: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: served.update(app=app, **collector_now()))
    ran = gm(
        "serve",
        "--worlds",
        worlds,
        "--port",
        "0",
        "--model",
        "rehearsal",
        env={"GM_DATABASE_URL": f"sqlite:///{tmp_path / 'gm.db'}"},
    )
    assert ran.returncode == 0, ran.stderr
    assert served["young"] == YOUNG_OBJECTS
    assert served["frozen"] > 10_000  # the web stack, openai's types and the app itself


def test_each_worker_of_gm_serve_tunes_its_own_collector(
    worlds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: None
) -> None:
    monkeypatch.setenv("GM_DATABASE_URL", f"sqlite:///{tmp_path / 'gm.db'}")
    options = {
        "worlds": str(worlds),
        "host": "127.0.0.1",
        "port": 0,
        "editor": False,
        "model": "rehearsal",
        "base_url": None,
        "api_key": None,
        "tools": "auto",
        "judge": None,
        "prompts": None,
    }
    monkeypatch.setenv(WORKER_ARGUMENTS, json.dumps(options))
    assert worker_app() is not None
    assert collector_now()["young"] == YOUNG_OBJECTS
    assert gc.get_freeze_count() > 10_000
