"""`gm serve` tunes its process (gm.server_process) once its app is built: the garbage collector and the
threads' switch interval, in one process and in each worker."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from command_line import gm
from conftest import DEFAULT_COLLECTOR, DEFAULT_SWITCH

from gm.cli_serve import WORKER_ARGUMENTS, worker_app
from gm.server_process import SWITCH_SECONDS, YOUNG_OBJECTS


@pytest.fixture
def collector() -> Iterator[None]:
    """CPython's own collector and switch interval for the test (conftest's `_untuned_process` restores them after)."""
    gc.unfreeze()
    gc.set_threshold(*DEFAULT_COLLECTOR)
    sys.setswitchinterval(DEFAULT_SWITCH)
    yield


def collector_now() -> dict[str, Any]:
    return {"young": gc.get_threshold()[0], "frozen": gc.get_freeze_count(), "switch": sys.getswitchinterval()}


def test_gm_serve_freezes_the_built_app_and_widens_the_young_generation(
    worlds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: None
) -> None:
    # else this test proves nothing
    assert gc.get_threshold()[0] != YOUNG_OBJECTS and gc.get_freeze_count() == 0
    assert sys.getswitchinterval() != pytest.approx(SWITCH_SECONDS)
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
    assert served["switch"] == pytest.approx(SWITCH_SECONDS)
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
    assert sys.getswitchinterval() == pytest.approx(SWITCH_SECONDS)
    assert gc.get_freeze_count() > 10_000
