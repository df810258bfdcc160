"""`gm serve` tunes its process (gm.web.process) once its app is built: the garbage collector and the
threads' switch interval, in one process and in each worker; and what that relies on, that a round leaves
no cyclic garbage behind."""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import weakref
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import gm as gm_package
import gm.editor as editor_package
from gm.cli._serve import KEEP_ALIVE_SECONDS, worker_app
from gm.store import Store
from gm.testing import reply
from gm.web import process as server_process
from gm.web.process import SWITCH_SECONDS, Collector
from tests.support.command_line import gm
from tests.support.process import DEFAULT_COLLECTOR, DEFAULT_SWITCH
from tests.support.rounds import narrate_roll, roll_mara
from tests.support.web import served_app, start_story


@pytest.fixture
def collector() -> Iterator[None]:
    """CPython's own collector and switch interval for the test (conftest's `_untuned_process` restores them after)."""
    server_process.untune_server_process()
    gc.set_threshold(*DEFAULT_COLLECTOR)
    sys.setswitchinterval(DEFAULT_SWITCH)
    yield


def collector_now() -> dict[str, Any]:
    collecting = server_process._collector is not None and server_process._collector._thread.is_alive()
    return {
        "automatic": gc.isenabled(),
        "by the clock": collecting,
        "frozen": gc.get_freeze_count(),
        "switch": sys.getswitchinterval(),
    }


def serve_rehearsal(worlds: Path, database_url: str, *options: str) -> None:
    """`gm serve` the worlds with the rehearsal stand-in (uvicorn.run replaced by the test), which must exit 0."""
    ran = gm(
        "serve",
        "--worlds",
        worlds,
        "--port",
        "0",
        "--model",
        "rehearsal",
        *options,
        env={"GM_DATABASE_URL": database_url},
    )
    assert ran.returncode == 0, ran.stderr


@pytest.mark.slow
def test_gm_serve_freezes_the_built_app_and_collects_by_the_clock(
    worlds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: None
) -> None:
    # else this test proves nothing
    assert gc.isenabled() and server_process._collector is None and gc.get_freeze_count() == 0
    assert sys.getswitchinterval() != pytest.approx(SWITCH_SECONDS)
    served: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: served.update(app=app, **collector_now()))
    serve_rehearsal(worlds, f"sqlite:///{tmp_path / 'gm.db'}")
    assert not served["automatic"] and served["by the clock"]
    assert served["switch"] == pytest.approx(SWITCH_SECONDS)
    assert served["frozen"] > 10_000  # the web stack, openai's types and the app itself


@pytest.mark.slow
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
    monkeypatch.setenv("GM_SERVE_WORKER_ARGUMENTS", json.dumps(options))
    assert worker_app() is not None
    assert not collector_now()["automatic"] and collector_now()["by the clock"]
    assert sys.getswitchinterval() == pytest.approx(SWITCH_SECONDS)
    assert gc.get_freeze_count() > 10_000


class Cyclic:
    """An object in a reference cycle: only a garbage collection frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.slow
def test_the_collector_collects_the_young_generation_often_and_everything_now_and_then(collector: None) -> None:
    gc.disable()
    clock = Collector(young_seconds=0.01, full_seconds=0.5)
    old = Cyclic()
    freed: list[tuple[str, int]] = []  # what was freed, and how many young collections had been made before
    weakref.finalize(old, lambda: freed.append(("old", clock.young)))
    gc.collect(0)  # `old` outlives a young collection: only a full one frees it now
    del old
    young = Cyclic()
    weakref.finalize(young, lambda: freed.append(("young", clock.young)))
    del young
    clock.start()
    try:
        deadline = time.monotonic() + 5
        while len(freed) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
    finally:
        clock.stop()
        gc.enable()
    # `young` by the first young collection; `old` by none of them, but by the full one, half a second on
    assert freed[0] == ("young", 0) and freed[1][0] == "old" and freed[1][1] > 5
    assert clock.full == 1


@pytest.mark.slow
def test_rounds_over_the_api_leave_no_cyclic_garbage(store: Store, worlds: Path) -> None:
    """What a tuned server relies on: a round's objects are freed by reference counting as it ends (a closure
    over a round's own state once kept every round alive until a collection walked it)."""
    script = [roll_mara(), narrate_roll(), reply("The quay is quiet.")] * 4
    with served_app(store, worlds, script, faces=[11, 12, 13, 14], transport="http") as (client, _):
        story, auth = start_story(client)
        for text in ("I pick the lock.", "I look around."):  # first use: imports, caches, pools
            assert client.post(f"/api/stories/{story}/messages", json={"text": text}, headers=auth).status_code == 200
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for text in ("I pick the lock.", "I look around.") * 3:
                answer = client.post(f"/api/stories/{story}/messages", json={"text": text}, headers=auth)
                assert answer.status_code == 200, answer.text
            gc.collect()
            garbage = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    # The test's own harness makes some (starlette's TestClient and the fake model's schema checks): what counts
    # is that nothing of gm's is in a cycle, neither its objects nor frames of its code kept by an exception.
    kinds = Counter(f"{type(thing).__module__}.{type(thing).__qualname__}" for thing in garbage)
    assert not [kind for kind in kinds if kind.startswith("gm.")], kinds
    frames = [thing for thing in garbage if isinstance(thing, FrameType)]
    assert not [frame.f_code.co_filename for frame in frames if is_gms(frame.f_code.co_filename)]


# gm's code is its package and the editor (installed as gm.editor), wherever the checkout is: a clone in a folder
# named gm holds its virtualenv's libraries under a gm/ too, and those are not gm's.
GM_FOLDERS = tuple(
    os.path.realpath(os.path.dirname(package.__file__)) + os.sep for package in (gm_package, editor_package)
)


def is_gms(filename: str) -> bool:
    """Whether a code object's file is one of gm's own modules."""
    return os.path.realpath(filename).startswith(GM_FOLDERS)


def test_only_gms_own_files_count_as_gms() -> None:
    import starlette

    assert is_gms(server_process.__file__) and is_gms(editor_package.__file__)
    assert not is_gms(starlette.__file__) and not is_gms(__file__)
    checkout = os.path.dirname(os.path.dirname(gm_package.__file__))  # a clone named gm: <...>/gm/.venv/...
    assert not is_gms(os.path.join(checkout, ".venv", "lib", "python3", "site-packages", "gm", "anyio.py"))


@pytest.mark.parametrize("workers", [1, 2])
def test_gm_serve_keeps_a_thinking_players_connection_open(
    workers: int, worlds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector: None
) -> None:
    # uvicorn's own default (5 s) closes it while the player thinks; every round then opened a new one
    served: dict[str, Any] = {}
    monkeypatch.setattr("uvicorn.run", lambda app, **options: served.update(options))
    database = f"sqlite:///{tmp_path / 'gm.db'}" if workers == 1 else "postgresql://gm@127.0.0.1:1/unused"
    serve_rehearsal(worlds, database, "--workers", str(workers))
    assert served["timeout_keep_alive"] == KEEP_ALIVE_SECONDS >= 60
