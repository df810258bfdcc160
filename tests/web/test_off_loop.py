"""Nothing blocks the event loop (issue 15): a round's database work, the routes' token look-ups, world
validation and world files all run in worker threads, on SQLite and PostgreSQL.

The watch records every statement, commit and pool checkout (where the pool checks its connection:
gm.store._pgpool) made on a thread that is running an event loop, and every file opened or folder listed there. A
server's
stories all share that loop, so any of them stalls every other story and request meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fastapi.dependencies.utils
import fastapi.routing
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from gm.engine.game import Game
from gm.engine.round import RoundPaused, RoundResult, RoundSettings
from gm.store import Store
from gm.store._workers import BACKGROUND, SERVER_THREADS, Workers, workers_for
from gm.testing import reply, slow
from tests.support.rounds import function_model, narrate_roll, roll_mara, table
from tests.support.web import keeper_too, served_app

# A heartbeat that beats during the slow step below, so the lease's renewal is watched too.
BEATING = RoundSettings(lease_seconds=5.0, heartbeat_seconds=0.05)


def on_loop() -> bool:
    """Whether this thread is running an event loop just now."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class Watch:
    """What was done on an event loop's thread (it should stay empty), and how much was done off it."""

    on_loop: list[str] = field(default_factory=list)
    off_loop: int = 0
    files: list[str] = field(default_factory=list)

    def saw(self, what: str) -> None:
        if on_loop():
            self.on_loop.append(what)
        else:
            self.off_loop += 1


_watches: list[Watch] = []
_FILE_EVENTS = {"open", "os.listdir", "os.scandir"}


def _audit(name: str, arguments: tuple[Any, ...]) -> None:
    if _watches and name in _FILE_EVENTS and on_loop() and not _code(str(arguments[0] if arguments else "")):
        for watch in _watches:
            watch.files.append(f"{name} {arguments[0]}")


def _code(path: str) -> bool:
    """Python's own reading of code, once a process: a module imported late, or FastAPI finding a route's
    source line on its first request. Not what is watched for here: data files, read on every request."""
    return path.endswith((".py", ".pyc")) or os.path.isfile(os.path.join(path, "__init__.py"))


# An audit hook cannot be removed again, so it is added once, and does nothing unless a test watches.
sys.addaudithook(_audit)


@contextmanager
def watching(engine: Engine) -> Iterator[Watch]:
    watch = Watch()

    def statement(_connection: Any, _cursor: Any, text: str, *_rest: Any) -> None:
        watch.saw(text.split(None, 1)[0])

    def commit(_connection: Any) -> None:
        watch.saw("COMMIT")

    def checkout(*_arguments: Any) -> None:
        watch.saw("pool checkout")

    listeners = [(engine, "before_cursor_execute", statement), (engine, "commit", commit)]
    listeners.append((engine.pool, "checkout", checkout))
    for target, name, listener in listeners:
        event.listen(target, name, listener)
    _watches.append(watch)
    try:
        yield watch
    finally:
        _watches.remove(watch)
        for target, name, listener in listeners:
            event.remove(target, name, listener)


def test_the_watch_sees_database_work_and_file_reading_on_the_loop(store: Store, tmp_path: Path) -> None:
    """The check below can fail: work done on the loop is seen."""

    async def blocking() -> None:
        store.stories()
        (tmp_path / "file").read_text()

    (tmp_path / "file").write_text("x")
    with watching(store.engine) as watch:
        asyncio.run(blocking())
    assert "SELECT" in watch.on_loop and "pool checkout" in watch.on_loop
    assert any(str(tmp_path / "file") in opened for opened in watch.files)


def test_rounds_do_their_database_work_off_the_event_loop(store: Store, harbor: Path) -> None:
    """Every kind of round and what follows it: rolled, plain (with a lease heartbeat), regenerated, the memory
    keeper, the story's end, a round paused for the player's dice and answered, and one abandoned. The
    stories' worlds are not cached yet, so they are read and checked too."""
    script = [roll_mara(), narrate_roll(), slow(reply("The tide turns."), 0.2), reply("Again, slower.")]
    script += [roll_mara(), narrate_roll(), roll_mara()]

    async def play() -> None:
        async with table(store, script, faces=[15], settings=BEATING) as t:
            story = t.game.start_story(harbor)
            at_table = t.game.start_story(harbor, settings={"dice_from": "player"})
            # Another process, as it were: the stories' worlds are not in its cache.
            game = Game(t.master, store, memory_model=t.keeper, judge_model=t.judge, settings=BEATING)
            game.source = t.game.source
            with watching(store.engine) as watch:
                assert isinstance(await game.play(story, "I pick the lock."), RoundResult)
                assert isinstance(await game.play(story, "I wait."), RoundResult)
                assert isinstance(await game.regenerate(story), RoundResult)
                await game.settle()
                await game.end(story)
                assert isinstance(await game.play(at_table, "I pick it."), RoundPaused)
                assert isinstance(await game.answer(at_table, "11"), RoundResult)
                assert isinstance(await game.play(at_table, "Once more."), RoundPaused)
                assert await game.abandon(at_table) == 2
                await game.settle()
            assert watch.on_loop == [], watch.on_loop
            assert watch.files == [], watch.files
            assert watch.off_loop > 50  # the work was watched, and done elsewhere

    asyncio.run(play())


def _events(text: str) -> list[str]:
    return [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]


@pytest.mark.parametrize("transport", ["function", "http"])
def test_the_async_routes_do_no_database_work_and_read_no_files_on_the_loop(
    store: Store, harbor: Path, tmp_path: Path, transport: Any
) -> None:
    """Each async route of the story API and of the chat endpoint: its token look-up, its world (from the
    database, and from the worlds folder for the chat endpoint) and its round, all off the loop."""
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copytree(harbor, worlds / "harbour")
    script = [reply("Quiet."), reply("Quieter."), reply("Streamed."), reply("Streamed again."), reply("Chat one.")]
    script += [reply("Chat two."), roll_mara(), narrate_roll(), roll_mara()]
    with served_app(store, worlds, script, faces=[], transport=transport) as (client, _):
        started = client.post("/api/stories", json={"world": "harbour"}).json()
        story, auth = started["story"]["id"], {"Authorization": f"Bearer {started['token']}"}
        table_started = client.post("/api/stories", json={"world": "harbour", "dice_from": "player"}).json()
        at_table, table_auth = table_started["story"]["id"], {"Authorization": f"Bearer {table_started['token']}"}
        with watching(store.engine) as watch:
            answers = [client.post(f"/api/stories/{story}/messages", json={"text": "I pick it."}, headers=auth)]
            answers.append(client.post(f"/api/stories/{story}/regenerate", headers=auth))
            streamed = client.post(f"/api/stories/{story}/messages/stream", json={"text": "I wait."}, headers=auth)
            again = client.post(f"/api/stories/{story}/regenerate/stream", headers=auth)
            chat = {"model": "gm/harbour", "messages": [{"role": "user", "content": "I look around."}]}
            answers.append(client.post("/v1/chat/completions", json=chat))
            answers.append(client.post("/v1/chat/completions", json={**chat, "stream": True}))
            answers.append(client.post(f"/api/stories/{at_table}/messages", json={"text": "Lock."}, headers=table_auth))
            answers.append(client.post(f"/api/stories/{at_table}/faces", json={"faces": "11"}, headers=table_auth))
            paused = client.post(
                f"/api/stories/{at_table}/messages/stream", json={"text": "Again."}, headers=table_auth
            )
            answers.append(client.post(f"/api/stories/{at_table}/abandon", headers=table_auth))
            answers.append(client.post(f"/api/stories/{story}/end", headers=auth))
            answers.append(client.post(f"/api/stories/{story}/messages", json={"text": "x"}, headers={}))
            answers.append(client.post(f"/api/stories/{story}/messages", json={"text": "x"}, headers=table_auth))
        assert [answer.status_code for answer in answers] == [200] * 8 + [401, 404], [a.text for a in answers]
        assert _events(streamed.text)[-1] == "done" and _events(again.text)[-1] == "done"
        assert "asking" in _events(paused.text)
        assert json.loads(answers[3].text.split("data: ", 2)[1])["choices"][0]["delta"]["role"] == "assistant"
    assert watch.on_loop == [], watch.on_loop
    assert watch.files == [], watch.files
    assert watch.off_loop > 50
    assert threading.active_count() < 100  # workers are bounded


def test_a_cancelled_caller_waits_for_its_running_work_and_drops_its_queued_work() -> None:
    """What a cancelled round does next (mark its attempt failed, release its lease) comes after its running
    transaction, as if that had run in the round's own task; work still queued never starts."""
    workers = Workers(1, "test")
    done: list[str] = []

    def slow_work(name: str) -> str:
        time.sleep(0.3)
        done.append(name)
        return name

    async def main() -> tuple[list[str], list[str]]:
        running = asyncio.create_task(workers.run(slow_work, "running"))
        queued = asyncio.create_task(workers.run(slow_work, "queued"))
        await asyncio.sleep(0.1)  # the first has started; the second waits behind it for the one thread
        running.cancel()
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        seen_when_cancelled = list(done)
        with pytest.raises(asyncio.CancelledError):
            await queued
        await asyncio.sleep(0.4)
        return seen_when_cancelled, done

    try:
        seen_when_cancelled, finally_done = asyncio.run(main())
    finally:
        workers.close()
    assert seen_when_cancelled == ["running"]  # the cancellation arrived only once the running work had ended
    assert finally_done == ["running"]  # the queued work never ran


def test_background_work_leaves_threads_to_the_rest() -> None:
    """Six background jobs that block hold at most two of four threads: a round's work queued after them
    runs at once, and the background jobs still all run, in order, once let go."""
    workers = Workers(4, "test", background_lanes=2)
    let_go = threading.Event()
    started: list[int] = []

    def background_job(number: int) -> int:
        started.append(number)
        let_go.wait(5)
        return number

    async def in_background(number: int) -> int:
        BACKGROUND.set(True)  # this task's own context, as the memory keeper's task sets it
        return await workers.run(background_job, number)

    async def main() -> tuple[list[int], list[int], list[int]]:
        jobs = [asyncio.create_task(in_background(number)) for number in range(6)]
        await asyncio.sleep(0.1)
        urgent = await asyncio.wait_for(workers.run(lambda: "round"), 2)
        assert urgent == "round"
        started_then = list(started)
        let_go.set()
        return started_then, await asyncio.gather(*jobs), list(started)

    try:
        started_then, results, started_at_last = asyncio.run(main())
    finally:
        let_go.set()
        workers.close()
    assert started_then == [0, 1]
    assert results == list(range(6)) and started_at_last == list(range(6))


def test_the_memory_keepers_work_is_background_work(
    store: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every database hand-off of the memory keeper's task is marked background; a round's are not. The keeper's
    and the round's opening need no sync of their own (`durable=False`); the accepted round does."""
    marked: list[tuple[str, bool]] = []
    durable: dict[str, bool] = {}
    original = Workers.run

    async def run(self: Workers, work: Any, *arguments: Any, **options: Any) -> Any:
        name = getattr(work, "__name__", None) or getattr(getattr(work, "func", None), "__name__", "?")  # a partial
        marked.append((name, BACKGROUND.get()))
        durable[name] = options.get("durable", True)
        return await original(self, work, *arguments, **options)

    monkeypatch.setattr(Workers, "run", run)

    async def main() -> None:
        game = Game(function_model(keeper_too([reply("The fog thickens.")])), store)
        story = game.start_story(harbor)
        await game.play(story, "I look around.")
        await game.settle()

    asyncio.run(main())
    keeper = [background for name, background in marked if name in ("keeper_rounds", "_write_then_read_unfolded")]
    round_work = [background for name, background in marked if name in ("_open", "run_calls", "accept")]
    assert keeper and all(keeper), marked
    assert round_work and not any(round_work), marked
    assert durable["accept"] and not durable["_open"], durable
    assert not durable["keeper_rounds"] and not durable["_write_then_read_unfolded"], durable


def test_each_engine_has_its_own_workers_one_thread_for_sqlite(store: Store) -> None:
    found = workers_for(store.engine)
    assert found is workers_for(store.engine)
    assert found.threads == (1 if store.engine.dialect.name == "sqlite" else SERVER_THREADS)
    if store.engine.dialect.name != "sqlite":  # a pooled connection for every worker thread
        assert store.engine.pool.size() >= SERVER_THREADS  # type: ignore[attr-defined]


def test_an_async_route_and_its_dependencies_make_no_hop_through_the_thread_pool(
    store: Store, harbor: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastAPI runs a plain `def` dependency or route in its thread pool: a round's route, with its service and
    token dependencies, stays on the loop (its database work goes to gm's own workers instead)."""
    hops: list[str] = []

    def counted(original: Any) -> Any:
        async def run_in_threadpool(call: Any, /, *arguments: Any, **named: Any) -> Any:
            hops.append(getattr(call, "__name__", repr(call)))
            return await original(call, *arguments, **named)

        return run_in_threadpool

    for module in (fastapi.dependencies.utils, fastapi.routing):
        monkeypatch.setattr(module, "run_in_threadpool", counted(module.run_in_threadpool))
    worlds = tmp_path / "worlds"
    worlds.mkdir()
    shutil.copytree(harbor, worlds / "harbour")
    with served_app(store, worlds, [reply("Quiet.")], faces=[], transport="function") as (client, _):
        started = client.post("/api/stories", json={"world": "harbour"}).json()
        story, auth = started["story"]["id"], {"Authorization": f"Bearer {started['token']}"}
        assert hops, "the spy saw no hop, even for the plain `def` route that starts a story"
        hops.clear()
        assert client.post(f"/api/stories/{story}/messages", json={"text": "I wait."}, headers=auth).status_code == 200
    assert hops == []
