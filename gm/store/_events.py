"""A story's events, for the pages watching it live: written in order, kept for a while, and announced.

When something happens in a story that another viewer should see at once (a player's action arrives,
a roll is made, a round is accepted or fails, a round waits for dice), the web layer writes an event
here (`publish_event`); the pages watching the story read the events after the last one they have
(`events_after`). Each event has the story's next `seq`, taken as MAX + 1 under the unique (story_id,
seq) index; on PostgreSQL the publishers of one story take turns on a transaction-scoped advisory lock
(so they never collide at the index), and on SQLite, whose writers take turns anyway, a writer that
finds another was first tries again. So a story's events commit in the
order of their numbers, and a reader that has seen event N has seen every event before it.

On PostgreSQL the transaction also sends `NOTIFY gm_story_events, '<story> <seq>'`, delivered at commit
to every process listening on the database (`notifications`). There the whole transaction (the turn, the
event numbered in SQL, the announcement, BEGIN and COMMIT) is one batch (gm.store._batch): one round trip,
and, its caller asking for no sync (`Hub.publish`), a commit that does not wait for the disk: an event is
a page's nudge, and a power cut that loses one loses nothing a page cannot read again from the story.
Before, each event was six round trips and a synced commit: half the database threads' time under
1,000 stories (docs/performance.md): each `gm serve` process wakes the
streams of that story it serves, whichever process wrote the event. On SQLite nothing is announced
across processes: the process that writes an event wakes its own streams (gm.web._live), which is
enough for SQLite's one serving process.

Kept: the newest `KEEP_EVENTS` of each story, older ones deleted as new ones come (every
`PRUNE_EVERY`th). A stream resumed from an event no longer kept is told to read the story again
(`EventsRead.missed`). Events are deleted with their story.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from sqlalchemy import String, bindparam, cast, delete, func, insert, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from gm._text import unstorable
from gm.store._base import Tables, table_of
from gm.store._batch import Batch, Sent
from gm.store.records import Story, StoryEvent

log = logging.getLogger(__name__)

OWNER_AUDIENCE = "owner"  # the story's own token in an event's audience (a seat is named by its id)
EVENTS_CHANNEL = "gm_story_events"  # the PostgreSQL channel every gm serve process listens on
KEEP_EVENTS = 1000  # a story's newest events kept for streams that resume (Last-Event-ID)
PRUNE_EVERY = 100  # events are pruned when a story's seq reaches a multiple of this
READ_AT_MOST = 200  # events read for one stream at once; the rest come on the next read
TRIES = 50  # times a publish takes the next seq again after another process took the same one

EVENTS = table_of(StoryEvent)
STORIES = table_of(Story)


Event = tuple[str, dict[str, Any], list[str] | None]  # its kind, what it says, who may see it (None: all)


Stage = Literal["opening", "roll", "acceptance"]  # the transaction of a round its events may ride in


class Rider(Protocol):
    """A round's live events not yet written (gm.web._live.Relay), which may go with its opening, a roll of it, or
    its acceptance."""

    story_id: str

    def take(self, stage: Stage) -> list[Event] | None:
        """The events to write with the round's opening (its action), one of its rolls or its acceptance (those
        queued so far, before the roll's or the round's own); None if none may (one is on its way: they would come
        before it)."""

    def ridden(self, taken: list[Event], written: bool, last: Event | None = None) -> None:
        """The transaction committed (`written`: `taken` with it, and `last`, the roll's or the round's own event,
        after them) or failed (`taken` are the rider's again)."""


# The round's rider, set by the web layer in the task that plays the round; its opening and acceptance read it in
# their thread (gm.store._workers copies the caller's context variables). A weak reference: the tasks a round starts
# copy the context, and must not keep its relay (and its store) alive after it.
RIDER: ContextVar[weakref.ref[Rider] | None] = ContextVar("gm_rider", default=None)


@dataclass(slots=True)
class Ride:
    """A round's events written in the transaction that opens or accepts it, after its data (PostgreSQL): a
    transaction and a round trip fewer than in one of their own, announced as it commits (no viewer hears of the
    round before it is there), and given back to the rider if it fails."""

    rider: Rider
    taken: list[Event]
    last: Event | None
    written: list[Sent]
    landed: bool = False  # committed: set by the caller once its commit is done

    @classmethod
    def board(
        cls, batch: Batch, story_id: str, stage: Stage, last: Event | Callable[[], Event] | None = None
    ) -> Ride | None:
        """Add the rider's events for `stage` (and `last`, the roll's or the round's own, after them; made only once
        the rider gave its events) to `batch`: the story's turn, each event, the announcement. None where nothing
        rides (`last` included)."""
        if (rider := riding(batch, story_id)) is None or (taken := rider.take(stage)) is None:
            return None
        try:
            final = last() if callable(last) else last
        except BaseException:
            rider.ridden(taken, written=False)
            raise
        events = [*taken, final] if final is not None else taken
        if not events:
            rider.ridden(taken, written=True)
            return None
        return cls(rider, taken, final, _add_events(batch, story_id, events))

    def end(self, tables: Tables) -> None:
        self.rider.ridden(self.taken, self.landed, self.last)
        if self.landed:
            try:
                prune(tables, self.rider.story_id, self.written)
            except Exception:  # the round is written: old events stay till the next prune
                log.exception("could not prune the events of story %s", self.rider.story_id)


def riding(batch: Batch, story_id: str) -> Rider | None:
    """The rider of the round playing `story_id` in this task, if its events may ride in `batch`'s transaction
    (PostgreSQL's: on SQLite the relay writes them, in its database thread's commit groups)."""
    ref = RIDER.get()
    rider = ref() if ref is not None else None
    if batch.connection.dialect.name != "postgresql" or rider is None or rider.story_id != story_id:
        return None
    return rider


def _add_events(batch: Batch, story_id: str, events: list[Event]) -> list[Sent]:
    at = now()
    batch.add(_TURN, {"story": story_id})  # publishers of one story take turns (till the commit)
    written = [
        batch.add(_NUMBERED, {"story": story_id, "kind": k, "audience": a, "data": d, "created_at": at})
        for k, d, a in events
    ]
    batch.add(_ANNOUNCE, {"story": story_id, "channel": EVENTS_CHANNEL})
    return written


def prune(tables: Tables, story_id: str, written: list[Sent]) -> int:
    """After a story's events were written (`written`, their INSERTs' results): its old ones deleted now and then
    (when the seqs passed a multiple of `PRUNE_EVERY`), in a transaction of its own; the newest seq."""
    first, seq = int(written[0].scalar()), int(written[-1].scalar())
    if seq > KEEP_EVENTS and any(number % PRUNE_EVERY == 0 for number in range(first, seq + 1)):
        with tables.transaction() as connection:
            connection.execute(_PRUNE, {"story": story_id, "through": seq - KEEP_EVENTS})
    return seq


def now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class LiveEvent:
    """One event as a stream sends it: its place in the story, its kind, who may see it, and what it says."""

    seq: int
    kind: str
    audience: list[str] | None
    data: dict[str, Any]

    def seen_by(self, audience: str) -> bool:
        """Whether a viewer may see it: `audience` is its seat's id, or `OWNER_AUDIENCE` for the story's own token."""
        return self.audience is None or audience in self.audience


@dataclass(frozen=True, slots=True)
class EventsRead:
    """What a stream reads at once: the events after its last, the story's newest seq, and whether the story
    still exists (and its token hash, so the stream checks its viewer may still read it)."""

    events: list[LiveEvent]
    newest: int
    missed: bool  # events after the last one seen are no longer kept: the viewer must read the story again
    exists: bool
    token_hash: str | None


class EventTables(Tables):
    """The events of each story, in order."""

    def publish_event(self, story_id: str, kind: str, data: dict[str, Any], audience: list[str] | None = None) -> int:
        """Write the story's next event and announce it (PostgreSQL); its seq, or 0 if the story is gone."""
        return self.publish_events(story_id, [(kind, data, audience)])

    def publish_events(self, story_id: str, events: list[tuple[str, dict[str, Any], list[str] | None]]) -> int:
        """Write the story's next events (kind, data, audience), in order, and announce the last (PostgreSQL):
        one transaction, and on PostgreSQL one round trip, for all of them (a round's events that queued while
        the one before was written: gm.web._live.Relay). The last one's seq, or 0 if the story is gone."""
        if not events:
            return 0
        if self.engine.dialect.name == "postgresql":
            return self._publish_batched(story_id, events)
        seq = 0
        for kind, data, audience in events:
            seq = self._publish_one(story_id, kind, data, audience)
        return seq

    def _publish_one(self, story_id: str, kind: str, data: dict[str, Any], audience: list[str] | None) -> int:
        """SQLite's: the next seq taken as MAX + 1, again if another connection took it first."""
        for _ in range(TRIES):
            try:
                with self.transaction() as connection:
                    newest = connection.execute(_NEWEST, {"story": story_id}).scalar_one()
                    seq = int(newest) + 1
                    connection.execute(
                        insert(EVENTS),
                        {
                            "story_id": story_id,
                            "seq": seq,
                            "kind": kind,
                            "audience": audience,
                            "data": data,
                            "created_at": now(),
                        },
                    )
                    if seq > KEEP_EVENTS and seq % PRUNE_EVERY == 0:
                        connection.execute(_PRUNE, {"story": story_id, "through": seq - KEEP_EVENTS})
                return seq
            except IntegrityError:
                if not self._story_exists(story_id):
                    return 0  # deleted meanwhile: nobody is left to tell
            except OperationalError:  # SQLite: another connection wrote first (gm serve writes from one thread)
                time.sleep(0.01)
        raise RuntimeError(f"story {story_id}: no event number was free after {TRIES} tries")

    def _publish_batched(self, story_id: str, events: list[tuple[str, dict[str, Any], list[str] | None]]) -> int:
        """PostgreSQL's `publish_events`: the turn, each event (numbered by the statement that writes it, which
        sees the ones before it), the announcement of the last and the commit in one round trip; the story's
        old events pruned now and then after it."""
        try:
            with self.transaction() as connection:
                batch = Batch(connection)
                written = _add_events(batch, story_id, events)
                batch.send(commit=True)
        except IntegrityError:
            if not self._story_exists(story_id):
                return 0  # deleted meanwhile: nobody is left to tell
            raise
        return prune(self, story_id, written)

    def events_after(self, story_id: str, after: int) -> EventsRead:
        """The story's events after seq `after` (at most `READ_AT_MOST`), oldest first, with the story's state."""
        if unstorable(story_id):
            return EventsRead([], 0, False, False, None)
        with self.reading() as connection:
            story = connection.execute(_TOKEN, {"story": story_id}).first()
            if story is None:
                return EventsRead([], 0, False, False, None)
            rows = connection.execute(_AFTER, {"story": story_id, "after": after}).all()
            bounds = connection.execute(_BOUNDS, {"story": story_id}).first()
        oldest, newest = (int(bounds[0] or 0), int(bounds[1] or 0)) if bounds is not None else (0, 0)
        events = [LiveEvent(row.seq, row.kind, row.audience, row.data) for row in rows]
        missed = after > newest or (oldest > 0 and after < oldest - 1)
        return EventsRead(events, newest, missed, True, story[0])

    def newest_event(self, story_id: str) -> int:
        """The seq of the story's newest event, 0 before any."""
        with self.reading() as connection:
            return int(connection.execute(_NEWEST, {"story": story_id}).scalar_one())

    def _story_exists(self, story_id: str) -> bool:
        with self.reading() as connection:
            return connection.execute(_TOKEN, {"story": story_id}).first() is not None


_NEWEST = select(func.coalesce(func.max(EVENTS.c.seq), 0)).where(EVENTS.c.story_id == bindparam("story"))
_PRUNE = delete(EVENTS).where(EVENTS.c.story_id == bindparam("story"), EVENTS.c.seq <= bindparam("through"))
# PostgreSQL's: the turn (an advisory lock the transaction holds), the event written as the story's next, and the
# announcement of the newest event (the one just written: the turn keeps every other publisher of the story out).
_TURN = select(func.pg_advisory_xact_lock(func.hashtext(bindparam("story", type_=String))))
_NUMBERED = (
    insert(EVENTS)
    .from_select(
        ["story_id", "seq", "kind", "audience", "data", "created_at"],
        select(
            bindparam("story", type_=String),
            _NEWEST.scalar_subquery() + 1,
            bindparam("kind", type_=String),
            bindparam("audience", type_=EVENTS.c.audience.type),
            bindparam("data", type_=EVENTS.c.data.type),
            bindparam("created_at", type_=EVENTS.c.created_at.type),
        ),
    )
    .returning(EVENTS.c.seq)
)
_ANNOUNCE = select(
    func.pg_notify(
        bindparam("channel", type_=String),
        bindparam("story", type_=String) + " " + cast(_NEWEST.scalar_subquery(), String),
    )
)
_TOKEN = select(STORIES.c.token_hash).where(STORIES.c.id == bindparam("story"))
_AFTER = (
    select(EVENTS.c.seq, EVENTS.c.kind, EVENTS.c.audience, EVENTS.c.data)
    .where(EVENTS.c.story_id == bindparam("story"), EVENTS.c.seq > bindparam("after"))
    .order_by(EVENTS.c.seq)
    .limit(READ_AT_MOST)
)
_BOUNDS = select(func.min(EVENTS.c.seq), func.max(EVENTS.c.seq)).where(EVENTS.c.story_id == bindparam("story"))


def listen_url(engine: Engine) -> str:
    """The libpq address of `engine`'s PostgreSQL database, for a listening connection of its own."""
    return engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


async def notifications(url: str) -> AsyncIterator[tuple[str, int]]:
    """The (story, seq) of every event any process announces on the database at `url`, as they commit.

    One connection, in autocommit, listening on `EVENTS_CHANNEL`; it ends (with the connection's error) when
    the connection does, and the caller listens again (gm.web._live)."""
    import psycopg  # the postgres extra: imported only where PostgreSQL is used

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        await connection.execute(f"LISTEN {EVENTS_CHANNEL}")
        async for note in connection.notifies():
            story, _, seq = note.payload.partition(" ")
            if seq.isdigit():
                yield story, int(seq)
