"""SQLite's database thread commits the work queued meanwhile together (gm.store._commit_groups), and nothing changes
for the work itself: each transaction block is still atomic, what it wrote is durable before its caller hears
of it, a failure undoes only its own block, and the order is kept."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, suppress
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from gm.errors import StoryNotFound
from gm.store import Store, Story
from gm.store import _commit_groups as commit_groups
from gm.store._commit_groups import MAX_GROUP, when_durable
from gm.store._workers import GroupCommitting, workers_for
from gm.testing import reply
from tests.support.rounds import narrate_roll, roll_mara, table


@pytest.fixture
def notes(sqlite_url: str) -> Iterator[Store]:
    """A SQLite store with a scratch table of notes, and its commits counted in `store.commits`."""
    store = Store(sqlite_url)
    with store.transaction() as connection:
        connection.exec_driver_sql("CREATE TABLE notes (text TEXT NOT NULL UNIQUE)")
    commits: list[int] = []
    event.listen(store.engine, "commit", lambda connection: commits.append(1))
    store.commits = commits  # type: ignore[attr-defined]
    yield store
    workers_for(store.engine).close()
    store.engine.dispose()


def note(store: Store, words: str) -> str:
    with store.transaction() as connection:
        connection.execute(text("INSERT INTO notes VALUES (:words)"), {"words": words})
    return words


def two_notes_then_fail(store: Store, first: str, second: str) -> None:
    """Two transaction blocks: the first ends well, the second fails after writing."""
    note(store, first)
    with store.transaction() as connection:
        connection.execute(text("INSERT INTO notes VALUES (:words)"), {"words": second})
        raise LookupError("the second block failed")


def written(store: Store) -> list[str]:
    """What is committed: read on a connection of its own, outside the store's pool."""
    with closing(sqlite3.connect(str(store.engine.url.database))) as connection:
        return [row[0] for row in connection.execute("SELECT text FROM notes ORDER BY rowid")]


async def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "waited 10 s"
        await asyncio.sleep(0.005)


async def grouped(
    store: Store, *work: tuple[Callable[..., Any], tuple[Any, ...]], cancel: int | None = None
) -> list[Any]:
    """Hand `work` over while the database thread is held busy, so it all queues and is run as one group (the
    caller of `work[cancel]` is cancelled while it waits)."""
    started, gate = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        gate.wait(10)

    held = asyncio.ensure_future(store.off_loop(hold))
    await until(started.is_set)
    groups = workers_for(store.engine)
    assert isinstance(groups, GroupCommitting)
    calls = [asyncio.ensure_future(store.off_loop(function, *arguments)) for function, arguments in work]
    await until(lambda: len(groups.groups._queue) == len(work))
    if cancel is not None:
        calls[cancel].cancel()
        await asyncio.sleep(0)
    gate.set()
    await held
    return await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 10)  # a failure, never a hang


def test_work_queued_meanwhile_is_committed_once_in_order(notes: Store) -> None:
    async def main() -> list[Any]:
        return await grouped(notes, *[(note, (notes, f"note {n}")) for n in range(5)])

    before = len(notes.commits)  # type: ignore[attr-defined]
    assert asyncio.run(main()) == [f"note {n}" for n in range(5)]
    assert written(notes) == [f"note {n}" for n in range(5)]
    # the gate's group (nothing to commit) and one commit for the five notes
    assert len(notes.commits) - before == 1  # type: ignore[attr-defined]
    groups = workers_for(notes.engine)
    assert isinstance(groups, GroupCommitting)


def test_a_group_holds_at_most_max_group_pieces_of_work(notes: Store) -> None:
    """More work queued than a group takes is committed in two groups, still in order."""
    count = MAX_GROUP + 3

    async def main() -> list[Any]:
        return await grouped(notes, *[(note, (notes, f"note {n}")) for n in range(count)])

    before = len(notes.commits)  # type: ignore[attr-defined]
    assert asyncio.run(main()) == [f"note {n}" for n in range(count)]
    assert written(notes) == [f"note {n}" for n in range(count)]
    assert len(notes.commits) - before == 2  # type: ignore[attr-defined]


def test_a_failed_block_undoes_itself_only_first_in_its_group_or_later(notes: Store) -> None:
    async def main() -> list[Any]:
        return await grouped(
            notes,
            (two_notes_then_fail, (notes, "a", "lost a")),  # first: its failed block has no savepoint
            (note, (notes, "b")),
            (note, (notes, "b")),  # UNIQUE: fails in its savepoint, after others wrote
            (two_notes_then_fail, (notes, "c", "lost c")),
            (note, (notes, "d")),
        )

    results = asyncio.run(main())
    assert isinstance(results[0], LookupError) and isinstance(results[3], LookupError)
    assert results[1] == "b" and results[4] == "d"
    assert "UNIQUE" in str(results[2])
    assert written(notes) == ["a", "b", "c", "d"]


def test_a_block_inside_a_block_fails_alone(notes: Store) -> None:
    def nested() -> None:
        with notes.transaction() as connection:
            connection.execute(text("INSERT INTO notes VALUES ('outer')"))
            with suppress(LookupError):
                two_notes_then_fail(notes, "inner", "inner lost")

    async def main() -> list[Any]:
        return await grouped(notes, (nested, ()), (note, (notes, "after")))

    assert asyncio.run(main()) == [None, "after"]
    assert written(notes) == ["outer", "inner", "after"]


def test_nobody_hears_of_a_write_before_its_group_commits(notes: Store) -> None:
    """The caller's answer and what the work tells the loop (a roll's card) both come after the commit."""
    seen: list[tuple[str, list[str]]] = []

    def tell_after_writing(words: str) -> str:
        note(notes, words)
        when_durable(lambda: seen.append((f"told {words}", written(notes))))
        return words

    async def main() -> list[Any]:
        return await grouped(notes, (tell_after_writing, ("x",)), (tell_after_writing, ("y",)))

    assert asyncio.run(main()) == ["x", "y"]
    assert seen == [("told x", ["x", "y"]), ("told y", ["x", "y"])]  # both committed when told


def test_a_failed_commit_fails_its_whole_group_and_tells_nothing(notes: Store) -> None:
    told: list[str] = []

    def tell_after_writing(words: str) -> str:
        note(notes, words)
        when_durable(lambda: told.append(words))
        return words

    def refuse(connection: Any) -> None:
        raise OSError("the disk is full")

    async def main() -> list[Any]:
        event.listen(notes.engine, "commit", refuse)
        try:
            return await grouped(notes, (tell_after_writing, ("x",)), (note, (notes, "y")))
        finally:
            event.remove(notes.engine, "commit", refuse)

    results = asyncio.run(main())
    assert [type(result) for result in results] == [OSError, OSError]
    assert written(notes) == [] and told == []
    assert asyncio.run(notes.off_loop(note, notes, "z")) == "z"  # the thread goes on
    assert written(notes) == ["z"]


def test_a_caller_cancelled_before_its_work_starts_drops_it(notes: Store) -> None:
    ran: list[str] = []

    def noted(words: str) -> str:
        ran.append(words)
        return note(notes, words)

    async def main() -> list[Any]:
        return await grouped(notes, (noted, ("never",)), (noted, ("kept",)), cancel=0)

    results = asyncio.run(main())
    assert isinstance(results[0], asyncio.CancelledError) and results[1] == "kept"
    assert ran == ["kept"] and written(notes) == ["kept"]


def test_an_idle_thread_ends_and_the_next_work_starts_another(notes: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit_groups, "IDLE_SECONDS", 0.05)
    workers = workers_for(notes.engine)
    assert isinstance(workers, GroupCommitting)
    asyncio.run(notes.off_loop(note, notes, "one"))
    thread = workers.groups._thread
    assert thread is not None and thread.name == "gm-sqlite_0"
    thread.join(5)
    assert not thread.is_alive() and workers.groups._thread is None
    assert asyncio.run(notes.off_loop(note, notes, "two")) == "two"
    assert workers.groups._thread is not None and workers.groups._thread is not thread
    assert written(notes) == ["one", "two"]


def test_work_outside_the_database_thread_commits_as_it_always_did(notes: Store) -> None:
    note(notes, "direct")  # a library caller in its own thread: its block commits at its end
    assert written(notes) == ["direct"]


def test_orm_sessions_join_the_group_each_atomic(notes: Store) -> None:
    story = notes.create_story(Story(title="t", world_data={}, settings={"dice": "shown"}))

    def settle_dice_then_fail() -> None:
        with notes.session() as session:
            found = session.get(Story, story.id)
            assert found is not None
            found.settings = {"dice": "lost"}
            session.add(found)
            session.flush()
            raise LookupError("failed after its flush")

    async def main() -> list[Any]:
        return await grouped(
            notes,
            (note, (notes, "a")),
            (notes.update_settings, (story.id, {"dice": "hidden"})),
            (settle_dice_then_fail, ()),
            (notes.update_settings, ("no-such-story", {"dice": "hidden"})),
            (note, (notes, "b")),
        )

    results = asyncio.run(main())
    assert results[0] == "a" and results[1] is None and results[4] == "b"
    assert isinstance(results[2], LookupError) and isinstance(results[3], StoryNotFound)
    assert written(notes) == ["a", "b"]
    assert notes.story(story.id).settings == {"dice": "hidden"}


def test_a_failure_of_the_group_itself_fails_its_callers_and_the_thread_goes_on(
    notes: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in the group's own code (here: closing its connection) reaches every caller; none waits for ever."""
    close = commit_groups.Group.close

    def broken(group: commit_groups.Group) -> None:
        used = group.connection is not None  # not the group that only held the thread busy
        close(group)
        if used:
            raise RuntimeError("a bug")

    monkeypatch.setattr(commit_groups.Group, "close", broken)

    async def main() -> list[Any]:
        return await grouped(notes, (note, (notes, "x")), (note, (notes, "y")))

    assert [str(result) for result in asyncio.run(main())] == ["a bug", "a bug"]
    monkeypatch.setattr(commit_groups.Group, "close", close)
    assert asyncio.run(notes.off_loop(note, notes, "z")) == "z"


def noted_at_level(store: Store, words: str) -> int:
    """A note written, and the `synchronous` level its transaction will commit with (1 NORMAL, 2 FULL)."""
    with store.transaction() as connection:
        connection.execute(text("INSERT INTO notes VALUES (:words)"), {"words": words})
        level: int = connection.exec_driver_sql("PRAGMA synchronous").scalar_one()
    return level


def test_work_that_need_not_be_durable_commits_unsynced_alone_and_the_connection_syncs_again(notes: Store) -> None:
    async def main() -> list[int]:
        alone_light = await notes.off_loop(noted_at_level, notes, "light", durable=False)
        alone_durable = await notes.off_loop(noted_at_level, notes, "durable")
        return [alone_light, alone_durable]

    assert asyncio.run(main()) == [1, 2]
    assert written(notes) == ["light", "durable"]
    # Every pooled connection (the one the light work had among them) went back syncing each commit.
    with ExitStack() as stack:
        pooled = [stack.enter_context(notes.engine.connect()) for _ in range(notes.engine.pool.size())]
        assert [connection.exec_driver_sql("PRAGMA synchronous").scalar_one() for connection in pooled] == [2] * len(
            pooled
        )


def test_a_group_with_any_durable_work_in_it_is_synced(notes: Store) -> None:
    started, gate = threading.Event(), threading.Event()

    def hold() -> None:
        started.set()
        gate.wait(10)

    async def main() -> list[Any]:
        held = asyncio.ensure_future(notes.off_loop(hold, durable=False))
        await until(started.is_set)
        calls = [
            asyncio.ensure_future(notes.off_loop(noted_at_level, notes, "light", durable=False)),
            asyncio.ensure_future(notes.off_loop(noted_at_level, notes, "durable")),
        ]
        groups = workers_for(notes.engine)
        assert isinstance(groups, GroupCommitting)
        await until(lambda: len(groups.groups._queue) == 2)
        gate.set()
        await held
        return await asyncio.wait_for(asyncio.gather(*calls), 10)

    assert asyncio.run(main()) == [2, 2]


def test_every_commit_that_writes_a_roll_or_a_round_is_synced(sqlite_url: str, harbor: Path) -> None:
    """Played rounds, rolled and not, the memory keeper's notes included: whatever each commit on the database thread
    adds, a commit that adds a roll or a round is made with synchronous=FULL; the others may not be."""
    store = Store(sqlite_url)
    seen: list[tuple[int, int, int]] = []  # (level, rolls, rounds) at each commit of the database thread
    commit = commit_groups.Group.commit

    def counted(group: commit_groups.Group) -> None:
        if group.connection is not None and group.connection.in_transaction():
            level, rolls, rounds = group.connection.exec_driver_sql(
                "SELECT (SELECT synchronous FROM pragma_synchronous), (SELECT count(*) FROM rolls),"
                " (SELECT count(*) FROM rounds)"
            ).one()
            seen.append((level, rolls, rounds))
        commit(group)

    async def main() -> None:
        async with table(store, [roll_mara(), narrate_roll(), reply("The fog thickens.")], faces=[11]) as played:
            story = played.game.start_story(harbor)
            await played.game.play(story, "I pick the lock.")
            await played.game.play(story, "I look around.")

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(commit_groups.Group, "commit", counted)
        asyncio.run(main())
    grew = [
        level
        for (level, rolls, rounds), (_, rolls_before, rounds_before) in zip(seen, [(0, 0, 0), *seen])
        if rolls > rolls_before or rounds > rounds_before
    ]
    assert len(grew) == 3 and set(grew) == {2}, seen  # the roll, then each accepted round
    assert any(level == 1 for level, _, _ in seen), seen  # the openings and the memory keeper's notes are not synced
    workers_for(store.engine).close()
    store.engine.dispose()


def test_the_database_thread_keeps_working_on_one_connection(notes: Store) -> None:
    """Groups one after another get the connection the last one gave back, so SQLite's page cache stays valid."""

    def driver_of(store: Store) -> int:
        with store.transaction() as connection:
            return id(connection.connection.driver_connection)

    async def main() -> set[int]:
        return {await notes.off_loop(driver_of, notes) for _ in range(6)}

    with ExitStack() as stack:  # another connection or two in the pool beside the thread's
        for _ in range(2):
            stack.enter_context(notes.engine.connect())
    assert len(asyncio.run(main())) == 1
