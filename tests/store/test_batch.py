"""A batch of a transaction's statements (gm.store._batch), on SQLite and PostgreSQL: the same rows and errors as
`Connection.execute`, and on PostgreSQL one round trip with the transaction's BEGIN (and COMMIT, if asked)."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import bindparam, create_engine, event, insert, select, update
from sqlalchemy.exc import IntegrityError

from gm.errors import StoryNotFound
from gm.store import Store
from gm.store._base import row_of, table_of, values_of
from gm.store._batch import Batch
from gm.store._memory import memories_between, newest_rounds, read_now
from gm.store.records import Attempt, MemoryEntry, RoundRecord, Story
from tests.support.databases import a_story_with_rounds

STORIES = table_of(Story)


def a_story(title: str) -> dict[str, Any]:
    """A new story's row, as `Store.create_story` writes it."""
    return values_of(Story(title=title, world_data={}, settings={}))


def test_a_batch_reads_what_connection_execute_reads(store: Store) -> None:
    story_id = a_story_with_rounds(store, 3)
    rounds = table_of(RoundRecord)
    with store.transaction() as connection:
        query = select(rounds).where(rounds.c.story_id == story_id).order_by(rounds.c.number)
        executed = [row_of(RoundRecord, row) for row in connection.execute(query).mappings()]
        batch = Batch(connection)
        read = newest_rounds(batch, story_id, 3)
        batch.send()
        batched = read()
    assert [record.number for record in batched] == [1, 2, 3]
    assert [record.model_dump() for record in batched] == [record.model_dump() for record in executed]
    assert [record.clock for record in batched] == [90, None, 270] and batched[0].judgement == {"verdicts": []}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_batch_reads_each_engines_json_with_that_engines_own_parser(store: Store) -> None:
    """The same statement batched on two engines of one database, whose JSON columns parse differently, reads each
    engine's way: a statement's plan is kept for the engine's dialect, not for every dialect of the same name."""
    story_id = store.create_story(Story(title="Parsed twice", world_data={"weather": "rain"}, settings={})).id
    world = select(STORIES.c.world_data).where(STORIES.c.id == bindparam("story"))

    def tagged(text: str) -> Any:
        return {"tagged": json.loads(text)}

    other = create_engine(store.engine.url, json_deserializer=tagged)
    read = []
    for engine in (store.engine, other, store.engine):
        with engine.connect() as connection:
            batch = Batch(connection)
            sent = batch.add(world, {"story": story_id})
            batch.send()
            read.append(sent.rows[0][0])
    other.dispose()
    assert read == [{"weather": "rain"}, {"tagged": {"weather": "rain"}}, {"weather": "rain"}]


def test_a_batch_reads_the_shape_of_a_result_as_connection_execute_does(store: Store) -> None:
    """An empty read still names its columns, labels included; a write that returns nothing has no columns and
    counts its rows (on PostgreSQL read off libpq's result, not psycopg's description)."""
    a_story_with_rounds(store, 1)
    empty = select(STORIES.c.id, STORIES.c.title.label("named")).where(STORIES.c.id == "none")
    retitle = update(STORIES).values(title="renamed")
    with store.transaction() as connection:
        batch = Batch(connection)
        read, written = batch.add(empty, {}), batch.add(retitle, {})
        batch.send()
        executed_read, executed_write = connection.execute(empty), connection.execute(retitle)
        assert (read.columns, read.rows) == (list(executed_read.keys()), []) == (["id", "named"], [])
        assert (written.columns, written.rows, written.rowcount) == ([], [], executed_write.rowcount) == ([], [], 1)


def test_a_failing_statement_in_a_batch_leaves_nothing_of_its_transaction(store: Store) -> None:
    taken = store.create_story(Story(title="taken", world_data={}, settings={}))
    with pytest.raises(IntegrityError), store.transaction() as connection:
        batch = Batch(connection)
        batch.add(insert(STORIES), a_story("new"))
        batch.add(insert(STORIES), {**a_story("again"), "id": taken.id})
        batch.send()
    with store.reading() as connection:
        assert connection.execute(select(STORIES.c.title)).scalars().all() == ["taken"]


@pytest.fixture
def postgres_store(store: Store) -> Store:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("psycopg's pipeline: PostgreSQL only")
    return store


@contextmanager
def round_trips(store: Store) -> Iterator[list[int]]:
    """The round trips every connection the store's pool opens from now on makes while the block runs: each
    Sync (the extended protocol, a pipeline included) or Query (the simple protocol) the client sends."""
    store.engine.dispose()
    with tempfile.TemporaryFile() as trace:

        def traced(dbapi_connection: object, _record: object) -> None:
            dbapi_connection.pgconn.trace(trace.fileno())  # type: ignore[attr-defined]

        event.listen(store.engine, "connect", traced)
        counted: list[int] = []
        try:
            yield counted
        finally:
            event.remove(store.engine, "connect", traced)
            store.engine.dispose()
            trace.seek(0)
            lines = trace.read().decode().splitlines()
            counted.append(sum(1 for line in lines if "\tF\t" in line and ("\tSync" in line or "\tQuery\t" in line)))


def test_on_postgresql_a_batch_with_its_begin_and_commit_is_one_round_trip(postgres_store: Store) -> None:
    story_id = a_story_with_rounds(postgres_store, 1)
    with round_trips(postgres_store) as counted, postgres_store.transaction() as connection:
        batch = Batch(connection)
        attempt = Attempt(story_id=story_id, round_number=2)
        batch.add(insert(table_of(Attempt)), attempt.model_dump())
        renamed = batch.add(STORIES.update().values(title="renamed").returning(STORIES.c.title), {})
        newest = newest_rounds(batch, story_id, 3)
        batch.send(commit=True)
    assert counted == [1]
    assert renamed.scalar() == "renamed" and [record.number for record in newest()] == [1]
    assert postgres_store.story(story_id).title == "renamed"


def test_on_postgresql_a_rounds_opening_is_two_round_trips_its_commit_with_the_second(postgres_store: Store) -> None:
    story_id = a_story_with_rounds(postgres_store, 5)
    with round_trips(postgres_store) as counted:
        opened = postgres_store.open_attempt(
            story_id,
            regenerate=False,
        )
    assert counted == [2]
    assert opened.number == 6
    with postgres_store.reading() as connection:  # committed: another connection sees the attempt
        found = connection.execute(
            select(table_of(Attempt).c.round_number).where(table_of(Attempt).c.id == opened.attempt.id)
        )
        assert found.scalar_one() == 6


def test_on_postgresql_the_keepers_notes_are_two_round_trips_and_a_stale_one_is_left_out(postgres_store: Store) -> None:
    story_id = a_story_with_rounds(postgres_store, 3)
    rounds = postgres_store.rounds(story_id)
    remembered = [
        (
            record.attempt_id if record.number != 2 else "an attempt played over",
            MemoryEntry(story_id=story_id, round_number=record.number, summary=f"Summary {record.number}."),
        )
        for record in rounds
    ]
    with round_trips(postgres_store) as counted:
        asyncio.run(postgres_store.off_loop(postgres_store.add_memories, remembered, durable=False))
    assert counted == [2]  # the marks with the BEGIN, then the notes with the COMMIT
    with postgres_store.reading() as connection:
        written = {entry.round_number: entry.summary for entry in read_now(connection, memories_between, story_id, 0)}
    assert written == {1: "Summary 1.", 3: "Summary 3."}
    assert [record.memory_written for record in postgres_store.rounds(story_id)] == [True, False, True]


def test_on_postgresql_a_fold_is_two_round_trips_and_refuses_a_story_that_is_not_there(postgres_store: Store) -> None:
    story_id = a_story_with_rounds(postgres_store, 2)
    with round_trips(postgres_store) as counted:
        asyncio.run(postgres_store.off_loop(postgres_store.fold_summary, story_id, "So far: rain.", 2, durable=False))
    assert counted == [2]  # the fold with the BEGIN, then the COMMIT
    story = postgres_store.story(story_id)
    assert (story.summary, story.summary_through) == ("So far: rain.", 2)
    with pytest.raises(StoryNotFound):
        postgres_store.fold_summary("0" * 32, "So far: nothing.", 1)


def test_on_postgresql_a_result_is_read_only_once_its_batch_is_sent(postgres_store: Store) -> None:
    with postgres_store.reading() as connection:
        batch = Batch(connection)
        queued = batch.add(select(STORIES.c.id), {})
        with pytest.raises(RuntimeError, match="before its batch was sent"):
            queued.first()
        batch.send()
        assert queued.first() is None


def test_on_postgresql_the_next_transaction_on_a_connection_a_batch_opened_is_a_transaction(
    postgres_store: Store,
) -> None:
    """The batch switched its connection to autocommit to send BEGIN itself; back in the pool it is switched back,
    so a later block's statements are one transaction again, rolled back with it."""
    with postgres_store.transaction() as connection:
        batched = connection.connection.driver_connection
        batch = Batch(connection)
        batch.add(insert(STORIES), a_story("kept"))
        batch.send()
    with pytest.raises(ZeroDivisionError), postgres_store.transaction() as connection:
        assert connection.connection.driver_connection is batched  # the pool handed the same one back
        assert batched is not None and not batched.autocommit
        connection.execute(insert(STORIES), a_story("lost"))
        raise ZeroDivisionError
    with postgres_store.reading() as connection:
        assert connection.execute(select(STORIES.c.title)).scalars().all() == ["kept"]


def test_on_postgresql_a_connection_held_for_another_transaction_has_its_batch_open_that_one_too(
    postgres_store: Store,
) -> None:
    """The first batch switched the connection to autocommit, and the pool, which switches it back, never had it
    meanwhile: the second transaction's batch still sends its BEGIN, so the block's rollback undoes it."""
    with postgres_store.engine.connect() as connection:
        with connection.begin():
            batch = Batch(connection)
            batch.add(insert(STORIES), a_story("kept"))
            batch.send()
        with pytest.raises(ZeroDivisionError), connection.begin():
            batch = Batch(connection)
            batch.add(insert(STORIES), a_story("lost"))
            batch.send()
            raise ZeroDivisionError
    with postgres_store.reading() as connection:
        assert connection.execute(select(STORIES.c.title)).scalars().all() == ["kept"]


def test_without_a_pipeline_mode_a_batch_on_postgresql_runs_each_statement_as_it_is_added(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """psycopg over a libpq older than 14 has no pipeline mode: the batch then works as on SQLite."""
    import psycopg

    monkeypatch.setattr(psycopg.Pipeline, "is_supported", classmethod(lambda cls: False))
    story_id = a_story_with_rounds(postgres_store, 2)
    with postgres_store.transaction() as connection:
        batch = Batch(connection)
        newest = newest_rounds(batch, story_id, 3)
        assert not batch.pipelined and [record.number for record in newest()] == [1, 2]  # read before any send
        batch.send(commit=True)  # nothing queued: the block's end commits, as on SQLite


def test_a_batch_writes_the_very_values_connection_execute_writes(store: Store) -> None:
    """JSON (its None too), booleans, timestamps and text: each value as stored, beside the same row written by
    `Connection.execute`, so that SQL which looks inside them (or tests IS NULL) sees no difference."""
    story_id = a_story_with_rounds(store, 1)
    attempts = table_of(Attempt)
    made = [Attempt(story_id=story_id, round_number=number, error=None) for number in (2, 3)]
    rounds = [
        values_of(
            RoundRecord(
                story_id=story_id,
                number=number,
                attempt_id=attempt.id,
                player_text="I wait ✓.",
                narration="Rain.",
                outcomes=[{"character": "Mara", "result": "failed", "roll": None}],
                rolls=[],
                refusals=[],
                judgement=None,
                clock=None,
            )
        )
        for number, attempt in zip((2, 3), made, strict=True)
    ]
    with store.transaction() as connection:
        connection.execute(insert(attempts), values_of(made[0]))
        connection.execute(insert(table_of(RoundRecord)), rounds[0])
        batch = Batch(connection)
        batch.add(insert(attempts), values_of(made[1]))
        batch.add(insert(table_of(RoundRecord)), rounds[1])
        batch.send()
    stored = [
        "SELECT round_number, error IS NULL, regenerating, started_at IS NULL FROM attempts WHERE round_number > 1",
        "SELECT number, outcomes, rolls, judgement, judgement IS NULL, clock IS NULL, player_text FROM rounds"
        " WHERE number > 1",
    ]
    if store.engine.dialect.name == "sqlite":
        stored += [
            "SELECT number, typeof(judgement), typeof(regenerating), typeof(started_at), length(started_at) FROM rounds"
            " JOIN attempts ON attempts.id = rounds.attempt_id WHERE number > 1"
        ]
    with store.reading() as connection:
        for sql in stored:
            first, second = connection.exec_driver_sql(sql + " ORDER BY 1").all()
            assert first[1:] == second[1:], (sql, first, second)


def test_on_postgresql_work_that_need_not_be_durable_commits_without_waiting_for_its_sync(
    postgres_store: Store,
) -> None:
    """A transaction a batch opens for `durable=False` work asks PostgreSQL not to wait for its log's sync (for
    that transaction alone); any other work's transactions wait, as every transaction does by default."""

    def level(store: Store) -> str:
        with store.transaction() as connection:
            batch = Batch(connection)
            batch.add(select(STORIES.c.id), {})
            batch.send()
            found: str = connection.exec_driver_sql("SHOW synchronous_commit").scalar_one()
        return found

    async def main() -> list[str]:
        return [
            await postgres_store.off_loop(level, postgres_store, durable=False),
            await postgres_store.off_loop(level, postgres_store),
            await postgres_store.off_loop(level, postgres_store, durable=False),
            await postgres_store.off_loop(level, postgres_store),
        ]

    assert asyncio.run(main()) == ["off", "on", "off", "on"]
    with postgres_store.transaction() as connection:  # a library caller's own transaction, on a pooled connection
        assert connection.exec_driver_sql("SHOW synchronous_commit").scalar_one() == "on"


def test_on_postgresql_the_adapters_a_connection_keeps_go_with_it(postgres_store: Store) -> None:
    """Batches on one pooled connection share psycopg's adapters (gm.store._pipeline's `transformer_for`), each
    reading its own rows; once the pool closes the connection nothing of gm's keeps it alive."""
    import gc
    import weakref

    story_id = a_story_with_rounds(postgres_store, 3)
    postgres_store.engine.dispose()  # the next checkout opens a connection of its own
    read: list[list[int]] = []
    for last in (1, 3):
        with postgres_store.reading() as connection:
            driver = weakref.ref(connection.connection.driver_connection)
            read.append([record.number for record in read_now(connection, newest_rounds, story_id, last)])
    assert read == [[3], [1, 2, 3]]
    postgres_store.engine.dispose()
    gc.collect()
    assert driver() is None
