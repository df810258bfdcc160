"""Many stories on one database (issue 40, part 1): a process's heartbeat keeps all of its rounds' leases with
one statement a beat, which touches no story row; a dead process's leases run out and another process takes
its stories; a round makes a new version of its story's row at most three times (PostgreSQL). On SQLite and
PostgreSQL.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, text

from gm.engine.lease import Heartbeat, RoundLease
from gm.engine.round import RoundSettings
from gm.errors import LeaseBusy
from gm.store import Store, Story
from gm.store._stories import Claim
from gm.testing import reply, slow
from tests.support.rounds import narrate_roll, roll_mara, table
from tests.support.worlds import write_world

HEIST = Path(__file__).resolve().parents[2] / "worlds" / "harbour-heist"
SHORT = RoundSettings(lease_seconds=0.6, heartbeat_seconds=0.15)
BEAT = "INSERT INTO lease_processes"


def statements(store: Store) -> list[str]:
    """Every statement the store's engine runs from now on through SQLAlchemy (a list that grows)."""
    seen: list[str] = []

    @event.listens_for(store.engine, "before_cursor_execute")
    def _seen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement)

    return seen


@pytest.mark.slow
def test_one_beat_keeps_every_lease_of_the_process_with_one_statement(store: Store, tmp_path: Path) -> None:
    calls: list[dict[str, str]] = []
    processes: set[str] = set()
    beat = store.beat

    def counted(
        process: str, seconds: float, held: dict[str, str] | None = None, let_go: dict[str, str] | None = None
    ) -> set[str]:
        calls.append(dict(held or {}))
        processes.add(process)
        return beat(process, seconds, held, let_go)

    store.beat = counted  # type: ignore[method-assign]
    ran = statements(store)

    async def play() -> list[str]:
        script = [slow(reply(f"Round of story {n}."), 1.0) for n in range(3)]
        async with table(store, script, settings=SHORT) as played:
            stories = [played.game.start_story(write_world(tmp_path / f"w{n}")) for n in range(3)]
            await asyncio.gather(*(played.game.play(story, "I wait.") for story in stories))
            return stories

    stories = asyncio.run(play())
    assert calls, "the heartbeat never beat"
    assert len(processes) == 1  # the process's one row
    assert len([sql for sql in ran if sql.startswith(BEAT)]) == len(calls)  # one statement a beat
    assert max(len(held) for held in calls) == 3  # ... keeping the three rounds' leases at once
    assert {story for held in calls for story in held} == set(stories)
    assert not [sql for sql in ran if sql.startswith("UPDATE stories SET lease_expires")]  # no story row renewed
    # One beat every 0.15 s for the whole process (three rounds of a second each): per-round heartbeats made
    # about 3 x 6 renewals.
    assert len(calls) <= 10, len(calls)
    assert all(story.lease_holder is None and story.rounds == 1 for story in store.stories())


@pytest.mark.slow
def test_a_dead_process_leases_run_out_and_another_process_takes_its_story(store: Store, database_url: str) -> None:
    other = Store(database_url)  # a second process on the same database
    try:
        a, b = (store.create_story(Story(title="T", world_data={}, settings={})).id for _ in range(2))
        for story, holder in ((a, "round-a"), (b, "round-b")):  # taken for 0.2 s, kept by the process's beat
            store.open_attempt(story, regenerate=False, lease=Claim(holder, 0.2, "first-process"))
        for _ in range(3):  # past the rounds' own time: the beat alone keeps both
            assert store.beat("first-process", 0.5, {a: "round-a", b: "round-b"}) == {"round-a", "round-b"}
            time.sleep(0.15)
        with pytest.raises(LeaseBusy):
            other.open_attempt(a, regenerate=False, lease=Claim("other-round", 30, "other-process"))
        time.sleep(0.6)  # the first process died: nothing keeps its leases
        opened = other.open_attempt(a, regenerate=False, lease=Claim("other-round", 30, "other-process"))
        assert opened.number == 1 and other.story(a).lease_holder == "other-round"
        # Woken again, the first process's beat keeps what it still holds and learns what it lost.
        assert store.beat("first-process", 30, {a: "round-a", b: "round-b"}) == {"round-b"}
        assert store.story(a).lease_holder == "other-round"
    finally:
        other.engine.dispose()


def test_the_beat_tells_a_round_whose_lease_was_taken(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    story = store.create_story(Story(title="T", world_data={}, settings={})).id

    async def beat() -> list[str]:
        lease = RoundLease(store, story, SHORT)
        assert await lease.open(store.take_lease, story, lease.holder, SHORT.lease_seconds)
        beating = lease._heartbeat
        assert isinstance(beating, Heartbeat) and lease.holder in beating.leases
        store.release_lease(story, lease.holder)
        assert store.take_lease(story, "thief", 30)
        await asyncio.sleep(SHORT.heartbeat_seconds * 3)
        left = list(beating.leases)
        await lease.stop()
        return left

    assert asyncio.run(beat()) == []  # dropped from the beat, and told
    assert "lost its lease" in caplog.text and store.story(story).lease_holder == "thief"


def test_a_lease_whose_release_failed_is_let_go_by_the_next_beat(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Else the process's row would keep it for as long as the process lives (its own time is no longer enough)."""
    story = store.create_story(Story(title="T", world_data={}, settings={})).id

    def failing(story_id: str, holder: str) -> None:
        raise OSError("the database is out of reach")

    async def round_then_release() -> tuple[str | None, str | None]:
        lease = RoundLease(store, story, SHORT)
        assert await lease.open(functools.partial(store.open_attempt, story, regenerate=False, lease=lease.claim))
        with monkeypatch.context() as patched:
            patched.setattr(store, "release_lease", failing)
            await lease.release()
        still = store.story(story).lease_holder
        for _ in range(40):  # a few beats
            await asyncio.sleep(SHORT.heartbeat_seconds / 2)
            if store.story(story).lease_holder is None:
                break
        return still, store.story(story).lease_holder

    still, after = asyncio.run(round_then_release())
    assert still is not None and after is None


@contextmanager
def story_row_versions(store: Store) -> Iterator[list[int]]:
    """How many times PostgreSQL wrote a new version of a story row meanwhile (a trigger counts every UPDATE)."""
    counted: list[int] = []
    with store.engine.begin() as connection:
        connection.execute(text("CREATE TABLE test_story_updates (n integer NOT NULL)"))
        connection.execute(text("INSERT INTO test_story_updates VALUES (0)"))
        connection.execute(
            text(
                "CREATE FUNCTION test_count_story_update() RETURNS trigger LANGUAGE plpgsql AS"
                " $$ BEGIN UPDATE test_story_updates SET n = n + 1; RETURN NEW; END $$"
            )
        )
        connection.execute(
            text(
                "CREATE TRIGGER test_story_updates AFTER UPDATE ON stories"
                " FOR EACH ROW EXECUTE FUNCTION test_count_story_update()"
            )
        )
    try:
        yield counted
    finally:
        with store.engine.begin() as connection:
            counted.append(int(connection.execute(text("SELECT n FROM test_story_updates")).scalar_one()))
            connection.execute(text("DROP TRIGGER test_story_updates ON stories"))
            connection.execute(text("DROP FUNCTION test_count_story_update()"))
            connection.execute(text("DROP TABLE test_story_updates"))


@pytest.mark.slow
def test_a_round_writes_its_story_row_at_most_three_times(store: Store, tmp_path: Path) -> None:
    """Its opening takes the lease, a roll moves the dice chain, the accepted round counts itself and lets the
    lease go: 3 for a round with a roll, 2 without (PostgreSQL; a round's heartbeats used to add more)."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("row versions are PostgreSQL's (SQLite rewrites a page, not a row version)")
    world = write_world(tmp_path / "w")

    async def play(script: list[Any], faces: list[int] | None) -> None:
        async with table(store, script, faces=faces, settings=SHORT) as played:
            story = played.game.start_story(world)
            await played.game.play(story, "I pick the lock.")

    with story_row_versions(store) as rolled:
        asyncio.run(play([roll_mara(), lambda request: slow(narrate_roll()(request), 0.5)], [11]))
    with story_row_versions(store) as plain:
        asyncio.run(play([slow(reply("The harbour is quiet."), 0.5)], None))
    world = HEIST  # characters' sheets that can change: the sheets are written with the round's count
    with story_row_versions(store) as sheets:
        asyncio.run(play([slow(reply("The harbour is quiet."), 0.5)], None))
    assert (rolled, plain, sheets) == ([3], [2], [2])
