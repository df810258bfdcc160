"""The store's stories: written, found by a whole or shortened id, listed, and the round lease on each.

Two rounds of one story never run at once: a lease on the story row, taken with one conditional
UPDATE, holds across processes on SQLite and PostgreSQL alike (gm.engine.lease); while its round runs
it is kept by its process's row (gm.store._leases), whose heartbeat keeps all of the process's leases.
A round takes it in the transaction that opens its attempt and lets it go in the one that accepts the
round (gm.store._rounds); the methods here take, renew and release it each in a short transaction of
their own, for the heartbeat, for work done under the lease outside a round (a reveal, an end, an abandon) and for a
round that failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, delete, text, update
from sqlalchemy import select as sql_select
from sqlmodel import col, select

from gm._text import unstorable
from gm.errors import AmbiguousStory, Conflict, StoryBusy, StoryNotFound
from gm.store._base import ID_PREFIX, SHORT_ID, Tables, row_of, table_of
from gm.store._events import EVENTS_CHANNEL
from gm.store._leases import HOLDERS, LEASE_FREE, LEASE_HELD, PROCESS_BEAT
from gm.store.records import (
    Attempt,
    MemoryEntry,
    ModelCall,
    PausedRound,
    RevealRecord,
    RollRecord,
    RoundRecord,
    SeatRecord,
    SeedRecord,
    SheetChangeRecord,
    Story,
    StoryEvent,
    TableMessage,
)


@dataclass(frozen=True, slots=True)
class Claim:
    """Who takes a story's lease, and for how long from the moment it is taken (`holder` is unique per round);
    `process`, whose row keeps it after that (gm.store._leases; None: nothing keeps it but renewals)."""

    holder: str
    seconds: float
    process: str | None = None

    def values(self, story_id: str) -> dict[str, Any]:
        """The parameters of `LEASE_TAKE`, timed now: in the worker thread, as the transaction runs."""
        now = datetime.now(UTC)
        until = now + timedelta(seconds=self.seconds)
        return {"story": story_id, "now": now, "holder": self.holder, "until": until, "process": self.process}


class StoryTables(Tables):
    """Stories and their round lease."""

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
        with self.reading() as connection:  # Core: the memory keeper and every web request read a story
            found = connection.execute(_STORY, {"story": story_id}).mappings().first()
        if found is None:
            raise StoryNotFound(story_id)
        return row_of(Story, found)

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
            if not ID_PREFIX.match(wanted):
                raise StoryNotFound(typed)
            if len(wanted) < SHORT_ID:
                raise AmbiguousStory(
                    f"'{wanted}' is too short to name a story; type at least {SHORT_ID} characters of its id"
                )
            query = select(Story.id).where(col(Story.id).startswith(wanted)).order_by(col(Story.id)).limit(2)
            found = list(session.exec(query))
        if not found:
            raise StoryNotFound(typed)
        if len(found) > 1:
            raise AmbiguousStory(
                f"'{wanted}' is the start of more than one story's id ({found[0]}, {found[1]}...); type more of it"
            )
        return found[0]

    def recent_stories(self, title: str, since: datetime, limit: int) -> list[Story]:
        """The newest stories (at most `limit`) with this title started after `since`, newest first: the few a chat
        front end's request may belong to when its history carries no marker (gm.web.compat.routes)."""
        query = (
            select(Story)
            .where(Story.title == title, col(Story.created_at) > since)
            .order_by(col(Story.created_at).desc())
            .limit(limit)
        )
        with self.session() as session:
            return list(session.exec(query))

    def delete_story(self, story_id: str, *, force: bool = False) -> None:
        """Remove the story and everything kept of it (rounds, memory, model calls, rolls and their chain, seeds)
        in one transaction. Refused with `StoryBusy` while a round holds its lease, unless `force` (a story whose
        first round never finished, removed by the request that started it); an unknown id raises
        `StoryNotFound`."""
        now = datetime.now(UTC)
        with self.transaction() as connection:
            # The story's row locked first: a write of the memory keeper (or any other) that names the story
            # waits for this delete and then finds it gone, where it would otherwise make the delete fail.
            found = connection.execute(_STORY_LOCKED, {"story": story_id}).mappings().first()
            if found is None:
                raise StoryNotFound(story_id)
            if not force and connection.execute(_IS_HELD, {"story": story_id, "now": now}).first() is not None:
                raise StoryBusy("a round of this story is being played right now; delete it when that round is done")
            forks = list((found["settings"] or {}).get("forks") or [])
            if forks and (kept := connection.execute(sql_select(STORIES.c.id).where(STORIES.c.id.in_(forks))).first()):
                raise Conflict(f"story {kept[0]} was forked from this one and goes on from its rolls; delete it first")
            for record in (
                SheetChangeRecord,
                StoryEvent,
                TableMessage,
                SeatRecord,
                RevealRecord,
                PausedRound,
                MemoryEntry,
                ModelCall,
                RoundRecord,
                RollRecord,
                Attempt,
                SeedRecord,
            ):
                table = table_of(record)
                connection.execute(delete(table).where(table.c.story_id == story_id))
            connection.execute(delete(STORIES).where(STORIES.c.id == story_id))
            if connection.dialect.name == "postgresql":  # every process's live streams of it end (gm.store._events)
                connection.execute(GONE, {"payload": f"{story_id} 0"})

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

    # The round lease: one conditional UPDATE each, built once (building a statement costs more than running it).

    def take_lease(self, story_id: str, holder: str, seconds: float) -> bool:
        """Take the story's round lease unless someone else holds an unexpired one; True if taken."""
        with self.transaction() as connection:
            return connection.execute(LEASE_TAKE, Claim(holder, seconds).values(story_id)).rowcount == 1

    def renew_lease(self, story_id: str, holder: str, seconds: float) -> bool:
        """Extend `holder`'s own time on the lease to `seconds` from now (one story row; a round's lease is kept
        by its process's beat instead, `beat`); False (and nothing changed) if it holds it no more."""
        values = {"story": story_id, "holder": holder, "until": datetime.now(UTC) + timedelta(seconds=seconds)}
        with self.transaction() as connection:
            return connection.execute(_RENEW, values).rowcount == 1

    def beat(
        self, process: str, seconds: float, held: dict[str, str] | None = None, let_go: dict[str, str] | None = None
    ) -> set[str]:
        """A process's heartbeat: every lease it took as `process` kept `seconds` from now, by one statement that
        touches no story row (gm.store._leases); and which holders of `held` (story id: holder) still hold
        their story's lease (a round whose lease was let go or taken meanwhile is not among them). The leases of
        `let_go` (story id: holder; rounds whose own release failed) are let go in the same transaction."""
        until = datetime.now(UTC) + timedelta(seconds=seconds)
        with self.transaction() as connection:
            for story, holder in (let_go or {}).items():
                connection.execute(_RELEASE, {"story": story, "holder": holder})
            connection.execute(PROCESS_BEAT[connection.dialect.name], {"process": process, "until": until})
            if not held:
                return set()
            found = connection.execute(HOLDERS, {"stories": list(held)})
            return {holder for story, holder in found if holder is not None and held.get(story) == holder}

    def release_lease(self, story_id: str, holder: str) -> None:
        with self.transaction() as connection:
            connection.execute(_RELEASE, {"story": story_id, "holder": holder})


STORIES = table_of(Story)
GONE = text(f"SELECT pg_notify('{EVENTS_CHANNEL}', :payload)")
_STORY = sql_select(STORIES).where(STORIES.c.id == bindparam("story"))
_STORY_LOCKED = _STORY.with_for_update()
_HELD = (STORIES.c.id == bindparam("story")) & (STORIES.c.lease_holder == bindparam("holder"))
_IS_HELD = sql_select(STORIES.c.id).where(STORIES.c.id == bindparam("story"), LEASE_HELD)
# Taken only if nobody holds it, or both the holder's time and its process's ran out; a round's opening adds
# RETURNING (gm.store._rounds).
LEASE_TAKE = (
    update(STORIES)
    .where(STORIES.c.id == bindparam("story"), LEASE_FREE)
    .values(lease_holder=bindparam("holder"), lease_expires=bindparam("until"), lease_process=bindparam("process"))
)
_RENEW = update(STORIES).where(_HELD).values(lease_expires=bindparam("until"))
_RELEASE = update(STORIES).where(_HELD).values(lease_holder=None, lease_expires=None, lease_process=None)
