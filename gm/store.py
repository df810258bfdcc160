"""The one place that talks to the database: stories, attempts, rolls, rounds, memory and model calls.

Rolls are append-only: each is written, in its own transaction, the moment it is rolled, and never
changed; each is the next link of its story's hash chain (gm.chain). A round is played as an
*attempt*; when the referee accepts it, the round (its text, narration, outcomes, refusals, and its
rolls copied in by code) is written in one transaction and the attempt marked accepted. A failed
attempt writes no round; its rolls stay, and the attempt says it failed (a later attempt at the same
round gets them back: gm.retries). Two rounds of one story never run at once: a lease on the story
row, taken with one conditional UPDATE, holds across processes on SQLite and PostgreSQL alike.

`GM_DATABASE_URL` picks the database; the default is a SQLite file in `GM_HOME`
(default `~/.local/share/gm`).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import event, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, create_engine, select

from gm.chain import genesis, roll_hash
from gm.errors import Conflict, LeaseLost, NotFound, RoundFailed, UsageError
from gm.migrations import upgrade
from gm.public import RollPublic
from gm.records import (
    Attempt,
    MemoryEntry,
    ModelCall,
    PausedRound,
    RollRecord,
    RoundRecord,
    SeedRecord,
    Story,
    StoryBase,
    model_call_from,
)
from gm.text import storable, unstorable
from gm.workers import SERVER_THREADS, workers_for

__all__ = [
    "AmbiguousStory",
    "Attempt",
    "MemoryEntry",
    "ModelCall",
    "PausedRound",
    "RollRecord",
    "RoundRecord",
    "SeedRecord",
    "Store",
    "Story",
    "StoryBase",
    "StoryNotFound",
    "default_database_url",
    "make_engine",
    "model_call_from",
]


T = TypeVar("T")

LEASE_LOST = (
    "the round outlived its hold on the story, which another round may have taken meanwhile, so it was not saved"
    " (its rolls are kept); try again"
)
ABANDONED = "the server playing this attempt stopped before it ended, so the next round marked it abandoned"


class StoryNotFound(NotFound, LookupError):
    """No story has that id."""

    def __init__(self, story_id: str) -> None:
        # An id no story can have (a NUL, or half a surrogate pair from bytes that were not UTF-8) is shown escaped.
        shown = story_id.encode("unicode_escape").decode("ascii") if unstorable(story_id) else story_id
        super().__init__(f"there is no story '{shown}'")


class AmbiguousStory(UsageError):
    """A shortened story id that is the start of more than one story's id."""


SHORT_ID = 6  # the fewest characters of a story's id that may stand for it
_ID_PREFIX = re.compile(r"^[0-9a-f]+$")


class ChainMoved(RoundFailed):
    """A fair roll was derived for a place in the story's chain, or from a seed, that is no longer the next one."""


class NotFair(Conflict):
    """A seed was asked of a story that does not use fair dice."""


def default_database_url() -> str:
    if url := os.environ.get("GM_DATABASE_URL"):
        return url
    home = Path(os.environ.get("GM_HOME") or Path.home() / ".local" / "share" / "gm")
    home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{home / 'gm.db'}"


def make_engine(url: str) -> Engine:
    """An engine; SQLite gets WAL and a busy timeout so several processes can share the file."""
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    # hide_parameters: a failed statement's text goes to the log, but never its values (a player's words).
    if not url.startswith("sqlite"):
        # A connection for each worker thread (gm.workers), and as many again for the web app's own threads.
        # pre_ping runs in those threads, never on the event loop; it costs a round trip per checkout and
        # turns a connection a restarted server dropped into a new one, rather than a failed round.
        pool = {"pool_size": SERVER_THREADS, "max_overflow": SERVER_THREADS}
        return create_engine(url, pool_pre_ping=True, hide_parameters=True, **pool)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, hide_parameters=True)

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        # Switching a new file to WAL needs a moment alone with it; processes opening it together
        # can find it locked, and the busy timeout does not always cover this one statement.
        for attempt in range(50):
            try:
                cursor.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError:
                if attempt == 49:
                    raise
                time.sleep(0.1)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


class Store:
    """The database behind every story; each method is one short transaction."""

    def __init__(self, url: str | None = None, *, engine: Engine | None = None) -> None:
        self.engine = engine or make_engine(url or default_database_url())
        upgrade(self.engine)  # to the newest schema: gm/migrations

    async def off_loop(self, work: Callable[..., T], *arguments: Any) -> T:
        """Run blocking database work for async code in the engine's worker threads (gm.workers), never on the
        event loop: one thread for SQLite, whose single writer would only make more of them queue, and a
        pool of them for a database server, so other stories and requests go on meanwhile."""
        return await workers_for(self.engine).run(work, *arguments)

    @contextmanager
    def session(self) -> Iterator[Session]:
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    # Stories

    def create_story(self, story: Story, seed: SeedRecord | None = None) -> Story:
        """Write a new story, and a fair story's first seed with it (one transaction)."""
        with self.session() as session:
            session.add(story)
            if seed is not None:
                session.flush()  # the story row first: the seed refers to it
                seed.story_id, story.seed_epoch = story.id, seed.epoch
                session.add(seed)
            session.commit()
            return story

    def story(self, story_id: str) -> Story:
        if unstorable(story_id):  # no story has such an id, and PostgreSQL could not even look for it
            raise StoryNotFound(story_id)
        with self.session() as session:
            found = session.get(Story, story_id)
            if found is None:
                raise StoryNotFound(story_id)
            return found

    def find_story_id(self, typed: str) -> str:
        """The id of the story `typed` names: its whole id, or a unique start of it of at least `SHORT_ID`
        characters (ids are lower-case hex; case is ignored). Raises `StoryNotFound`, or `AmbiguousStory`
        naming two of the stories a prefix fits."""
        wanted = typed.strip().lower()
        if unstorable(wanted):  # as in `story`: no story has such an id, and no database could look for it
            raise StoryNotFound(typed)
        with self.session() as session:
            if session.get(Story, wanted) is not None:
                return wanted
            if len(wanted) < SHORT_ID or not _ID_PREFIX.match(wanted):
                raise StoryNotFound(typed)
            query = select(Story.id).where(col(Story.id).startswith(wanted)).order_by(col(Story.id)).limit(2)
            found = list(session.exec(query))
        if not found:
            raise StoryNotFound(typed)
        if len(found) > 1:
            raise AmbiguousStory(
                f"'{wanted}' is the start of more than one story's id ({found[0]}, {found[1]}...); type more of it"
            )
        return found[0]

    def stories(self) -> list[Story]:
        with self.session() as session:
            return list(session.exec(select(Story).order_by(col(Story.created_at))))

    def update_settings(self, story_id: str, settings: dict[str, Any]) -> None:
        with self.session() as session:
            story = session.get(Story, story_id)
            if story is None:
                raise StoryNotFound(story_id)
            story.settings = {**story.settings, **settings}
            session.add(story)
            session.commit()

    # The round lease

    def take_lease(self, story_id: str, holder: str, seconds: float) -> bool:
        """Take the story's round lease unless someone else holds an unexpired one; True if taken."""
        now = datetime.now(UTC)
        statement = (
            update(Story)
            .where(col(Story.id) == story_id)
            .where((col(Story.lease_holder).is_(None)) | (col(Story.lease_expires) < now))
            .values(lease_holder=holder, lease_expires=now + timedelta(seconds=seconds))
        )
        with self.session() as session:
            taken = session.execute(statement).rowcount == 1  # type: ignore[attr-defined]
            session.commit()
            return bool(taken)

    def renew_lease(self, story_id: str, holder: str, seconds: float) -> bool:
        """Extend `holder`'s lease to `seconds` from now; False (and nothing changed) if it holds it no more."""
        statement = (
            update(Story)
            .where(col(Story.id) == story_id)
            .where(col(Story.lease_holder) == holder)
            .values(lease_expires=datetime.now(UTC) + timedelta(seconds=seconds))
        )
        with self.session() as session:
            renewed = session.execute(statement).rowcount == 1  # type: ignore[attr-defined]
            session.commit()
            return bool(renewed)

    def release_lease(self, story_id: str, holder: str) -> None:
        statement = (
            update(Story)
            .where(col(Story.id) == story_id)
            .where(col(Story.lease_holder) == holder)
            .values(lease_holder=None, lease_expires=None)
        )
        with self.session() as session:
            session.execute(statement)
            session.commit()

    # Attempts and rolls

    def start_attempt(self, story_id: str, round_number: int, regenerating: bool = False) -> Attempt:
        """Open an attempt at a round (under the story's lease), marking any other still running as abandoned.

        Only the lease holder plays a round, so an attempt of this story still `running` belongs to a
        process that died (or lost the lease) before it could end it.
        """
        attempt = Attempt(story_id=story_id, round_number=round_number, regenerating=regenerating)
        abandon = (
            update(Attempt)
            .where(col(Attempt.story_id) == story_id)
            .where(col(Attempt.status) == "running")
            .values(status="abandoned", error=ABANDONED)
        )
        with self.session() as session:
            session.execute(abandon)
            session.add(attempt)
            session.commit()
            return attempt

    def record_roll(self, roll: RollRecord) -> RollRecord:
        """Write a roll now, in its own transaction, so no later failure can lose or change it.

        The roll becomes the next link of its story's chain: the story's count is claimed first (one
        UPDATE, so two writers queue instead of forking the chain), then the roll gets that place and
        the hash of the roll before, and the story the new head. A fair roll comes with the place and
        seed epoch it was derived for (see gm.fair.FairDice) and is refused, `ChainMoved`, anywhere else.
        """
        claim = (
            update(Story)
            .where(col(Story.id) == roll.story_id)
            .values(chain_length=col(Story.chain_length) + 1)
            .returning(col(Story.chain_length), col(Story.chain_head), col(Story.seed_epoch))
        )
        with self.session() as session:
            claimed = session.execute(claim).first()
            if claimed is None:
                raise StoryNotFound(roll.story_id)
            place, head, epoch = claimed
            if roll.seq is not None and (roll.seq != place or roll.seed_epoch != epoch):
                session.rollback()
                raise ChainMoved(
                    "this story's dice moved on while the round was played (its lease ran out, and another round "
                    "or a reveal went ahead); the roll was not written, try again"
                )
            roll.seq, roll.prev_hash = place, head or genesis(roll.story_id)
            session.add(roll)
            session.flush()  # the roll's id is part of what its hash covers
            link = roll_hash(RollPublic.from_stored(roll).model_dump(mode="json"))
            session.execute(update(Story).where(col(Story.id) == roll.story_id).values(chain_head=link))
            session.commit()
            return roll

    def unfinished_attempts(self, story_id: str, round_number: int | None = None) -> set[str]:
        """The ids of a story's attempts (at one round, if given) that were not accepted: failed, or never finished."""
        with self.session() as session:
            query = select(Attempt.id).where(Attempt.story_id == story_id, Attempt.status != "accepted")
            if round_number is not None:
                query = query.where(Attempt.round_number == round_number)
            return set(session.exec(query))

    def rolls_of_round(self, story_id: str, number: int) -> list[RollRecord]:
        """Every roll made for round `number` of a story, by any attempt, in the order rolled."""
        with self.session() as session:
            query = select(RollRecord).where(RollRecord.story_id == story_id, RollRecord.round_number == number)
            return list(session.exec(query.order_by(col(RollRecord.seq))))

    def story_rolls(self, story_id: str) -> list[RollRecord]:
        """Every roll of a story, in chain order."""
        with self.session() as session:
            query = select(RollRecord).where(RollRecord.story_id == story_id).order_by(col(RollRecord.seq))
            return list(session.exec(query))

    # A fair story's seeds

    def seeds(self, story_id: str) -> list[SeedRecord]:
        with self.session() as session:
            query = select(SeedRecord).where(SeedRecord.story_id == story_id).order_by(col(SeedRecord.epoch))
            return list(session.exec(query))

    def current_seed(self, story_id: str) -> SeedRecord:
        """The seed a fair story's next rolls are derived from; `NotFair` for any other story."""
        with self.session() as session:
            story = session.get(Story, story_id)
            if story is None:
                raise StoryNotFound(story_id)
            seed = session.exec(
                select(SeedRecord).where(SeedRecord.story_id == story_id, SeedRecord.epoch == story.seed_epoch)
            ).first()
            if not story.fair or seed is None:
                raise NotFair(f"story '{story_id}' does not use fair dice, so it has no seed to reveal")
            return seed

    def reveal_seed(self, story_id: str, fresh: SeedRecord) -> tuple[SeedRecord, SeedRecord]:
        """Reveal the current seed (through the rolls made so far) and make `fresh` the next, in one transaction.

        Returns the revealed seed and the fresh one (its epoch and first roll set here).
        """
        with self.session() as session:
            story = session.get(Story, story_id)
            current = self.current_seed(story_id)  # NotFair for a story without seeds
            assert story is not None
            current.last_roll, current.revealed_at = story.chain_length, datetime.now(UTC)
            fresh.story_id, fresh.epoch, fresh.first_roll = story_id, current.epoch + 1, story.chain_length + 1
            # Only from the epoch it read: a reveal that raced another is refused rather than skipping one.
            moved = session.execute(
                update(Story)
                .where(col(Story.id) == story_id, col(Story.seed_epoch) == current.epoch)
                .where(col(Story.chain_length) == story.chain_length)
                .values(seed_epoch=fresh.epoch)
            )
            if moved.rowcount != 1:  # type: ignore[attr-defined]
                session.rollback()
                raise ChainMoved("the story's dice moved on while its seed was being revealed; try again")
            session.add_all([current, fresh])
            session.commit()
            return current, fresh

    def fail_attempt(self, attempt_id: str, error: str, calls: Sequence[ModelCall] = ()) -> None:
        """Mark an unfinished attempt failed, with the model calls it made; its rolls stay as they are.

        An attempt already accepted stays accepted (its calls were written with it).
        """
        with self.session() as session:
            attempt = session.get(Attempt, attempt_id)
            if attempt is not None and attempt.status == "accepted":
                return
            if attempt is not None:
                attempt.status, attempt.error = "failed", storable(error)
                session.add(attempt)
            session.add_all(list(calls))
            session.commit()

    def rolls_of_attempt(self, attempt_id: str) -> list[RollRecord]:
        with self.session() as session:
            query = select(RollRecord).where(RollRecord.attempt_id == attempt_id).order_by(col(RollRecord.id))
            return list(session.exec(query))

    def rolls_by_id(self, ids: Sequence[int]) -> list[RollRecord]:
        """The rolls with these ids, in the order given."""
        if not ids:
            return []
        with self.session() as session:
            found = {
                roll.id: roll for roll in session.exec(select(RollRecord).where(col(RollRecord.id).in_(list(ids))))
            }
            return [found[roll_id] for roll_id in ids if roll_id in found]

    def accept_round(
        self, attempt_id: str, record: RoundRecord, calls: Sequence[ModelCall] = (), *, holder: str | None = None
    ) -> RoundRecord:
        """Write an accepted round with its model calls, mark its attempt, and count it, in one transaction.

        A regenerated round replaces the earlier version of the same number. With `holder`, the write is
        fenced on the story's lease: it happens only if `holder` holds it still, else `LeaseLost` and
        nothing is written. The fence is the transaction's first statement, so it locks the story row
        (PostgreSQL) or the database (SQLite) until the round is written: no other round can take the
        lease between the check and the commit.
        """
        with self.session() as session:
            if holder is not None:
                fence = (
                    update(Story)
                    .where(col(Story.id) == record.story_id)
                    .where(col(Story.lease_holder) == holder)
                    .values(lease_holder=holder)
                )
                if session.execute(fence).rowcount != 1:  # type: ignore[attr-defined]
                    raise LeaseLost(LEASE_LOST)
            attempt = session.get(Attempt, attempt_id)
            story = session.get(Story, record.story_id)
            if attempt is None or story is None:
                raise StoryNotFound(record.story_id)
            earlier = session.exec(
                select(RoundRecord).where(RoundRecord.story_id == record.story_id, RoundRecord.number == record.number)
            ).first()
            if earlier is not None and not attempt.regenerating:
                raise LeaseLost(
                    f"round {record.number} was played meanwhile by another attempt; this one was not saved"
                )
            if earlier is not None:
                memory = session.exec(
                    select(MemoryEntry).where(
                        MemoryEntry.story_id == record.story_id, MemoryEntry.round_number == record.number
                    )
                ).first()
                if memory is not None:
                    session.delete(memory)
                session.delete(earlier)
                session.flush()
            else:
                story.rounds += 1
            if record.clock is not None:  # the story's time is where its newest round ended
                story.clock = record.clock
            attempt.status = "accepted"
            session.add_all([record, attempt, story, *calls])
            session.commit()
            return record

    # Rounds, memory and model calls

    def rounds(self, story_id: str, after: int = 0, last: int | None = None) -> list[RoundRecord]:
        """Accepted rounds numbered above `after`, oldest first; `last` keeps only the newest few."""
        with self.session() as session:
            query = select(RoundRecord).where(RoundRecord.story_id == story_id, RoundRecord.number > after)
            if last is not None:
                newest = list(session.exec(query.order_by(col(RoundRecord.number).desc()).limit(last)))
                return newest[::-1]
            return list(session.exec(query.order_by(col(RoundRecord.number))))

    def round(self, story_id: str, number: int) -> RoundRecord | None:
        with self.session() as session:
            query = select(RoundRecord).where(RoundRecord.story_id == story_id, RoundRecord.number == number)
            return session.exec(query).first()

    def add_memory(self, entry: MemoryEntry) -> None:
        """Store a round's memory and mark the round remembered, in one transaction."""
        with self.session() as session:
            record = session.exec(
                select(RoundRecord).where(
                    RoundRecord.story_id == entry.story_id, RoundRecord.number == entry.round_number
                )
            ).first()
            if record is None:
                return  # the round was regenerated meanwhile; its new version gets its own memory
            record.memory_written = True
            session.add_all([entry, record])
            session.commit()

    def memories(self, story_id: str, after: int = 0) -> list[MemoryEntry]:
        with self.session() as session:
            query = select(MemoryEntry).where(MemoryEntry.story_id == story_id, MemoryEntry.round_number > after)
            return list(session.exec(query.order_by(col(MemoryEntry.round_number))))

    def unremembered(self, story_id: str) -> list[RoundRecord]:
        with self.session() as session:
            query = select(RoundRecord).where(
                RoundRecord.story_id == story_id, col(RoundRecord.memory_written).is_(False)
            )
            return list(session.exec(query.order_by(col(RoundRecord.number))))

    def fold_summary(self, story_id: str, summary: str, through: int) -> None:
        with self.session() as session:
            story = session.get(Story, story_id)
            if story is None:
                raise StoryNotFound(story_id)
            story.summary, story.summary_through = summary, through
            session.add(story)
            session.commit()

    def add_model_calls(self, calls: Sequence[ModelCall]) -> None:
        with self.session() as session:
            session.add_all(list(calls))
            session.commit()

    def model_calls(self, story_id: str) -> list[ModelCall]:
        with self.session() as session:
            query = select(ModelCall).where(ModelCall.story_id == story_id).order_by(col(ModelCall.id))
            return list(session.exec(query))
