"""What a Game keeps per story stays bounded, however many stories a long-running server sees."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import gm.engine.game
import gm.world.shared
from gm._lru import LRU
from gm.engine.game import Game, StoryLocks
from gm.rehearsal.model import RehearsalModel
from gm.store import Store
from gm.world.loading import load_world


@pytest.fixture
def sqlite(sqlite_url: str) -> Iterator[Store]:
    made = Store(sqlite_url)
    yield made
    made.engine.dispose()


def test_a_game_keeps_the_worlds_of_the_stories_played_most_recently(sqlite: Store, harbor: Path) -> None:
    world = load_world(harbor)
    game = Game(RehearsalModel(world), sqlite, cached_worlds=2)
    first, second, third = (game.begin(world) for _ in range(3))
    game.world(first)
    game.world(second)
    game.world(first)  # now second is the least recently used
    game.world(third)
    assert len(game._worlds) == 2
    assert first in game._worlds and third in game._worlds and second not in game._worlds
    assert game.world(second).title == world.title  # rebuilt from the store when played again
    assert len(game._worlds) == 2


def test_a_story_started_keeps_its_world_so_its_first_round_does_not_check_it_again(
    sqlite: Store, harbor: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = load_world(harbor)
    game = Game(RehearsalModel(world), sqlite)
    story = game.begin(world)
    built: list[object] = []
    monkeypatch.setattr(gm.world.shared, "world_from_data", lambda *data: built.append(data))
    assert asyncio.run(game.world_of(story)) is world
    assert built == []
    other = Game(RehearsalModel(world), sqlite)  # another process: it builds the world once, then keeps it
    monkeypatch.undo()
    assert asyncio.run(other.world_of(story)).world_data == world.world_data
    assert asyncio.run(other.world_of(story)) is asyncio.run(other.world_of(story))


def test_no_memory_lock_outlives_its_round(sqlite: Store, harbor: Path) -> None:
    world = load_world(harbor)
    game = Game(RehearsalModel(world), sqlite)

    async def play() -> None:
        for _ in range(3):
            story_id = game.begin(world)
            await game.play(story_id, "Mara picks the lock.")
        await game.settle()

    asyncio.run(play())
    assert len(game._memory_locks) == 0


def test_a_story_lock_is_shared_until_nobody_holds_or_waits_for_it() -> None:
    locks = StoryLocks()
    running: dict[str, int] = {"a": 0, "b": 0}
    most: dict[str, int] = {"a": 0, "b": 0}

    async def work(story_id: str, gate: asyncio.Event) -> None:
        async with locks.hold(story_id):
            running[story_id] += 1
            most[story_id] = max(most[story_id], running[story_id])
            await gate.wait()
            running[story_id] -= 1

    async def main() -> None:
        gates = [asyncio.Event() for _ in range(4)]
        first = asyncio.create_task(work("a", gates[0]))
        second = asyncio.create_task(work("a", gates[1]))  # waits for the first
        other = asyncio.create_task(work("b", gates[2]))
        await asyncio.sleep(0)
        assert len(locks) == 2
        gates[0].set()
        await first
        third = asyncio.create_task(work("a", gates[3]))  # arrives while the second holds the lock
        await asyncio.sleep(0)
        assert len(locks) == 2  # the second's lock was kept for it, and the third shares it
        for gate in gates[1:]:
            gate.set()
        await asyncio.gather(second, third, other)

    asyncio.run(main())
    assert most == {"a": 1, "b": 1}  # never two tasks of one story at once
    assert len(locks) == 0


def test_a_task_cancelled_while_waiting_lets_go_of_the_story_lock() -> None:
    locks = StoryLocks()

    async def hold(gate: asyncio.Event) -> None:
        async with locks.hold("a"):
            await gate.wait()

    async def main() -> None:
        gate = asyncio.Event()
        holder = asyncio.create_task(hold(gate))
        waiter = asyncio.create_task(hold(asyncio.Event()))
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert len(locks) == 1  # the holder's, still held
        gate.set()
        await holder

    asyncio.run(main())
    assert len(locks) == 0


def test_an_lru_refuses_to_hold_nothing() -> None:
    with pytest.raises(ValueError):
        LRU[str, int](0)


def test_stories_of_one_world_share_one_world_and_another_world_gets_its_own(
    sqlite: Store, harbor: Path, tmp_path: Path
) -> None:
    game = Game(RehearsalModel(load_world(harbor)), sqlite)
    first, second = game.begin(load_world(harbor)), game.begin(load_world(harbor))  # two equal Worlds, loaded apart
    assert game.world(first) is game.world(second)
    edited = tmp_path / "edited"
    shutil.copytree(harbor, edited)
    definition = json.loads((edited / "world.json").read_text())
    (edited / "world.json").write_text(json.dumps({**definition, "title": "Another Harbour"}))
    other = game.begin(load_world(edited))
    assert game.world(other) is not game.world(first) and game.world(other).title == "Another Harbour"
    # a new Game (another process) rebuilds them from the store, once per world, with the async path too
    later = Game(RehearsalModel(load_world(harbor)), sqlite)
    assert later.world(first) is asyncio.run(later.world_of(second))
    assert later.world(other).title == "Another Harbour"
    assert later.world(first).title == definition["title"]
