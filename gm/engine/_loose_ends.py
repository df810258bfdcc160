"""What a round that failed while the database was out of reach could not write: written once it answers again.

A round whose database fails mid-round (a full disk, a server gone) fails like any other
(gm.engine._failing), but the two writes that end it - its attempt marked failed, its lease let go
(gm.engine.lease) - fail too. Left so, the attempt stays `running` and the story answers 409 until the
lease runs out, long after the database is back (issue 40, hole 4). So each write that fails is
remembered here, in the process, per store and per story, and written again:

- by a task that tries every story's loose ends with a short backoff (0.1 s doubling to 2 s) until
  the database answers, and
- first thing when the story's next round opens (`RoundLease.open`), so the first request after the
  database is back never finds the story held by a round that is over. While the database is still
  out of reach, that request fails as the database does (a 503 over the API).

An attempt is marked failed before its lease is let go: the round that opens next then finds it failed,
with its sentence and model calls, not running. Bounded: at most `MAX_STORIES` stories' loose ends are
kept; past that the oldest are dropped (logged), and their story waits for the lease to run out, its next
round marking the attempt abandoned, as after a process killed mid-round. Another process sharing the
database knows nothing of them, and does just that.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from gm.store import ModelCall, Store

log = logging.getLogger(__name__)

MAX_STORIES = 1024
FIRST_DELAY = 0.1  # seconds before the first try again; doubled after each failed try, up to LAST_DELAY
LAST_DELAY = 2.0


def outage(error: BaseException) -> bool:
    """Whether a database error is the database out of reach or out of room (a full disk, a server or connection
    gone), which passes, rather than a write it refuses (a constraint, a bug), which a retry would only repeat."""
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(error, (OperationalError, InterfaceError))


@dataclass(frozen=True, slots=True)
class Failure:
    """An attempt to mark failed, with its sentence and the model calls it made."""

    attempt_id: str
    sentence: str
    calls: list[ModelCall]


@dataclass(slots=True)
class StoryEnds:
    """One story's loose ends, in the order they are written: the failures first, then the leases let go."""

    failures: list[Failure] = field(default_factory=list)
    holders: list[str] = field(default_factory=list)

    def extend(self, later: StoryEnds) -> None:
        self.failures += later.failures
        self.holders += later.holders


class LooseEnds:
    """One store's loose ends, story by story, and the task that writes them once the database answers."""

    def __init__(self, store: Store) -> None:
        self._store = weakref.ref(store)
        self._ends: OrderedDict[str, StoryEnds] = OrderedDict()
        self._lock = threading.Lock()  # a store may serve several event loops (one per thread)
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._ends)

    def fail_later(self, story_id: str, attempt_id: str, sentence: str, calls: list[ModelCall]) -> None:
        """Remember to mark the attempt failed, its write having failed now."""
        self._keep(story_id, StoryEnds(failures=[Failure(attempt_id, sentence, calls)]))

    def release_later(self, story_id: str, holder: str) -> None:
        """Remember to let `holder`'s lease of the story go (after any failure of the story remembered)."""
        self._keep(story_id, StoryEnds(holders=[holder]))

    async def settle(self, story_id: str) -> None:
        """Write the story's loose ends now, if it has any; the database's error if it still cannot (they stay)."""
        with self._lock:
            ends = self._ends.pop(story_id, None)
        if ends is None:
            return
        store = self._store()
        if store is None:
            return
        try:  # each write on its own, let go of once committed: none is written twice
            while ends.failures:
                failure = ends.failures[0]
                await store.off_loop(store.fail_attempt, failure.attempt_id, failure.sentence, failure.calls)
                ends.failures.pop(0)
            while ends.holders:  # changes nothing if the holder holds the lease no more
                await store.off_loop(store.release_lease, story_id, ends.holders[0], durable=False)
                ends.holders.pop(0)
        except BaseException as error:
            if outage(error) or not isinstance(error, Exception):
                self._keep(story_id, ends, first=True)
                raise
            # refused, not out of reach: never tried again (the lease runs out, the attempt is marked abandoned)
            log.error("story %s: a round's loose ends cannot be written; they are dropped", story_id, exc_info=error)
            return
        log.info("story %s: a round that failed while the database was down is ended now", story_id)

    def _keep(self, story_id: str, ends: StoryEnds, *, first: bool = False) -> None:
        with self._lock:
            kept = self._ends.setdefault(story_id, StoryEnds())
            if first:  # loose ends put back: before any remembered meanwhile
                ends.extend(kept)
                kept.failures, kept.holders = ends.failures, ends.holders
            else:
                kept.extend(ends)
            while len(self._ends) > MAX_STORIES:
                dropped, _ = self._ends.popitem(last=False)
                log.warning("story %s: too many loose ends to keep; its lease runs out by itself", dropped)
        self._start()

    def _start(self) -> None:
        """The task that tries again, on the running loop (none outside one: the next round settles them)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = self._task
        if task is not None and not task.done() and task.get_loop() is loop:
            return
        self._task = loop.create_task(self._try_again(), name="loose ends")

    async def _try_again(self) -> None:
        delay = FIRST_DELAY
        while True:
            await asyncio.sleep(delay)
            with self._lock:
                stories = list(self._ends)
            if not stories:
                return
            try:
                for story_id in stories:
                    await self.settle(story_id)
            except Exception as error:  # still out of reach: try again a little later
                log.info("loose ends not written yet (%s); trying again in %g s", type(error).__name__, delay)
                delay = min(delay * 2, LAST_DELAY)


_BY_STORE: weakref.WeakKeyDictionary[Store, LooseEnds] = weakref.WeakKeyDictionary()
_BY_STORE_LOCK = threading.Lock()


def loose_ends(store: Store) -> LooseEnds:
    """The store's loose ends (one set per store in this process)."""
    with _BY_STORE_LOCK:
        found = _BY_STORE.get(store)
        if found is None:
            found = _BY_STORE[store] = LooseEnds(store)
        return found
