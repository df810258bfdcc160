"""The store on SQLite and PostgreSQL: rolls kept, rounds written whole, one round of a story at a time."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, select, text

from gm.store import MemoryEntry, RollRecord, RoundRecord, Store, Story
from gm.store._base import reader_of, table_of


def new_story(store: Store) -> Story:
    return store.create_story(Story(title="T", world_data={"title": "T"}, dice_data=None, settings={"dice": "shown"}))


def a_roll(story: Story, attempt_id: str, number: int = 1) -> RollRecord:
    return RollRecord(
        story_id=story.id, attempt_id=attempt_id, round_number=number, kind="dice", notation="1d6", faces=[[4]], total=4
    )


def a_round(story: Story, attempt_id: str, number: int = 1, narration: str = "n") -> RoundRecord:
    return RoundRecord(
        story_id=story.id,
        number=number,
        attempt_id=attempt_id,
        player_text="p",
        narration=narration,
        outcomes=[],
        rolls=[],
        refusals=[],
    )


def test_the_lease_admits_one_holder_until_released(store: Store, database_url: str) -> None:
    story = new_story(store)
    other_process_view = Store(database_url)
    assert store.take_lease(story.id, "first", 60)
    assert not other_process_view.take_lease(story.id, "second", 60)
    store.release_lease(story.id, "second")  # only the holder can release
    assert not other_process_view.take_lease(story.id, "second", 60)
    store.release_lease(story.id, "first")
    assert other_process_view.take_lease(story.id, "second", 60)
    other_process_view.engine.dispose()


def test_an_expired_lease_can_be_taken(store: Store) -> None:
    story = new_story(store)
    assert store.take_lease(story.id, "crashed", -1)  # a holder that died long ago
    assert store.take_lease(story.id, "next", 60)


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_lease_holds_across_processes(store: Store, database_url: str) -> None:
    story = new_story(store)
    assert store.take_lease(story.id, "here", 60)
    script = textwrap.dedent(
        f"""
        from gm.store import Store
        store = Store({database_url!r})
        print(store.take_lease({story.id!r}, "there", 60))
        """
    )
    there = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert there.stdout.strip() == "False", there.stderr
    store.release_lease(story.id, "here")
    there = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert there.stdout.strip() == "True", there.stderr


def test_a_failed_attempt_keeps_its_rolls_and_writes_no_round(store: Store) -> None:
    story = new_story(store)
    attempt = store.start_attempt(story.id, 1)
    roll = store.record_roll(a_roll(story, attempt.id))
    store.fail_attempt(attempt.id, "the model lied")
    assert [kept.id for kept in store.rolls_of_attempt(attempt.id)] == [roll.id]
    assert store.rounds(story.id) == []
    assert store.story(story.id).rounds == 0
    with store.session() as session:
        from gm.store import Attempt

        failed = session.get(Attempt, attempt.id)
        assert failed is not None and failed.status == "failed" and failed.error == "the model lied"


def test_accepting_rounds_counts_them_and_regenerating_replaces_the_last(store: Store) -> None:
    story = new_story(store)
    first = store.start_attempt(story.id, 1)
    store.accept_round(first.id, a_round(story, first.id, 1, "first telling"))
    store.add_memory(MemoryEntry(story_id=story.id, round_number=1, summary="s1", rolls=[], outcomes=[]))
    again = store.start_attempt(story.id, 1, regenerating=True)
    store.accept_round(again.id, a_round(story, again.id, 1, "second telling"))
    assert store.story(story.id).rounds == 1
    [only] = store.rounds(story.id)
    assert only.narration == "second telling" and only.attempt_id == again.id
    assert store.memories(story.id) == []  # the old telling's memory went with it
    assert [record.number for record in store.unremembered(story.id)] == [1]


def test_rounds_last_and_after(store: Store) -> None:
    story = new_story(store)
    for number in range(1, 6):
        attempt = store.start_attempt(story.id, number)
        store.accept_round(attempt.id, a_round(story, attempt.id, number))
    assert [record.number for record in store.rounds(story.id, last=2)] == [4, 5]
    assert [record.number for record in store.rounds(story.id, after=3)] == [4, 5]


def test_rolls_by_id_keep_the_order_asked(store: Store) -> None:
    story = new_story(store)
    attempt = store.start_attempt(story.id, 1)
    ids = [store.record_roll(a_roll(story, attempt.id)).id for _ in range(3)]
    assert [roll.id for roll in store.rolls_by_id([ids[2], ids[0]])] == [ids[2], ids[0]]  # type: ignore[list-item]


def test_reads_on_postgresql_run_outside_a_transaction_and_writes_inside_one(store: Store) -> None:
    """`reading()` on PostgreSQL sends no BEGIN and no ROLLBACK: each statement is its own transaction, so
    `now()` (its transaction's start) moves between two of them. The pooled connections go back to
    transactions: in `transaction()`, two statements share one. SQLite reads through the engine itself."""
    if store.engine.dialect.name == "sqlite":
        assert reader_of(store.engine) is store.engine
        return
    moment = text("SELECT now()")
    with store.reading() as connection:
        first = connection.execute(moment).scalar()
        time.sleep(0.01)
        assert connection.execute(moment).scalar() != first
        assert connection.connection.dbapi_connection.autocommit is True  # type: ignore[union-attr]
    for _ in range(10):  # more than the pool holds: every connection is seen again
        with store.transaction() as connection:
            first = connection.execute(moment).scalar()
            time.sleep(0.002)
            assert connection.execute(moment).scalar() == first
            assert connection.connection.dbapi_connection.autocommit is False  # type: ignore[union-attr]


def test_closing_a_store_lets_its_database_threads_go(database_url: str) -> None:
    before = set(threading.enumerate())
    opened = Store(database_url)
    assert asyncio.run(opened.off_loop(lambda: 2 + 2)) == 4  # its threads are started by the first work
    mine = [thread for thread in threading.enumerate() if thread not in before and thread.name.startswith("gm-")]
    assert mine
    opened.close()
    for thread in mine:
        thread.join(timeout=5)
    assert [thread.name for thread in mine if thread.is_alive()] == []


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_story_deleted_while_its_memory_is_written_is_deleted_whole(store: Store) -> None:
    """The memory keeper writes in the background: a delete that meets its write waits for it, then takes it too."""
    story = new_story(store)
    memory = table_of(MemoryEntry)
    failed: list[BaseException] = []

    def delete() -> None:
        try:
            store.delete_story(story.id)
        except BaseException as error:
            failed.append(error)

    with store.engine.connect() as writer:
        written = writer.begin()
        row = {"story_id": story.id, "round_number": 1, "summary": "s", "rolls": [], "outcomes": []}
        writer.execute(insert(memory).values(**row, created_at=datetime.now(UTC)))  # not committed yet
        deleting = threading.Thread(target=delete)
        deleting.start()
        time.sleep(0.5)  # the delete reaches the story while the memory's write holds it
        written.commit()
    deleting.join(timeout=10)
    assert failed == []
    assert store.stories() == []
    with store.engine.connect() as reader:
        assert reader.execute(select(memory.c.id)).all() == []
