"""Live stories: what a `gm serve` process does so that every page watching a story sees its rounds as they happen.

Publishing. Whatever a viewer should see at once is written as a story event (gm.store._events):
a player's action arriving (`action`), each roll as it is made (`roll`, never a sealed secret roll's
card), a round waiting for dice (`asking`), the accepted round (`round`), a round that failed or was
abandoned (`failed`, `abandoned`), the story's end (`ended`). The routes hand a round's events to a
`Relay`, which writes them in the order they happened, one after the other, off the event loop.

Delivering. Each process keeps, per story, the streams it serves (`Hub.watching`), each with an
`asyncio.Event` to wake it. On PostgreSQL one connection per process LISTENs to the events' channel,
opened with the first stream and kept open: every event any process writes wakes that story's
streams here, which then read the events after their last one from the database. On SQLite the
process that writes an event wakes its own streams; SQLite is served by one process, so that is every
stream there is. A stream also reads every `HEARTBEAT_SECONDS` as it sends its keep-alive, so an
announcement lost with a broken listening connection delays an event by that much at most (and the
listener, once connected again, wakes every stream at once).

Bounds. At most `MAX_VIEWERS` streams of one story in one process (`TooManyViewers`, a 409, beyond):
a table is a handful of players, and each stream costs a read per event.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import signal
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gm.errors import TooManyViewers
from gm.store import RIDER, Event, Stage, Store, listen_url, notifications

log = logging.getLogger(__name__)

MAX_VIEWERS = 64  # streams of one story one process serves at once
HEARTBEAT_SECONDS = 15.0  # a stream's keep-alive, and its read of the database if nothing woke it
RETRY_SECONDS = (0.5, 10.0)  # the listener's first and longest wait before listening again after a broken connection

# What of a round's events (gm.engine.results.RoundEvents) other viewers are told, under which kind.
RELAYED = {"roll": "roll", "asking": "asking"}


@dataclass
class Hub:
    """The streams of each story this process serves, and the listening connection that wakes them."""

    store: Store
    _watching: dict[str, set[asyncio.Event]] = field(default_factory=dict)
    _listener: asyncio.Task[None] | None = None
    closing: bool = False  # the server is stopping: every stream ends, and its page reconnects (to a server up)

    @property
    def announced(self) -> bool:
        """Whether events reach every process through the database (PostgreSQL), not only this one."""
        return self.store.engine.dialect.name == "postgresql"

    def admit(self, story_id: str) -> None:
        """Refuse, before any stream starts, one stream too many for the story (`TooManyViewers`)."""
        if len(self._watching.get(story_id, ())) >= MAX_VIEWERS:
            raise TooManyViewers(
                f"this story already has {MAX_VIEWERS} live streams on this server; close one and try again"
            )

    @contextmanager
    def watching(self, story_id: str) -> Iterator[asyncio.Event]:
        """A stream of the story, for as long as the block runs: the event is set whenever the story has news."""
        self.admit(story_id)
        self._listen()
        woken = asyncio.Event()
        self._watching.setdefault(story_id, set()).add(woken)
        try:
            yield woken
        finally:
            streams = self._watching.get(story_id)
            if streams is not None:
                streams.discard(woken)
                if not streams:
                    del self._watching[story_id]

    def viewers(self, story_id: str) -> int:
        return len(self._watching.get(story_id, ()))

    def wake(self, story_id: str) -> None:
        for woken in self._watching.get(story_id, ()):
            woken.set()

    def wake_all(self) -> None:
        for streams in self._watching.values():
            for woken in streams:
                woken.set()

    def close_all(self) -> None:
        """End every stream (the server is stopping: it waits for open responses to end before it stops)."""
        self.closing = True
        self.wake_all()

    def end_streams_on_exit(self) -> None:
        """Have the signals that stop the server (SIGINT, SIGTERM) end every stream first, in the loop's thread.

        uvicorn's handlers set its `should_exit`, then it waits for every open response to end: a stream
        would hold a stopping server until its viewer left. Called in the server's loop as it starts (the
        app's lifespan); where that is not the main thread (a server in a test's thread), nothing is done."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            before = signal.getsignal(number)

            def ending(signum: int, frame: Any, before: Any = before) -> None:
                loop.call_soon_threadsafe(self.close_all)
                if callable(before):
                    before(signum, frame)

            signal.signal(number, ending)

    async def publish(self, story_id: str, kind: str, data: dict[str, Any], audience: list[str] | None = None) -> int:
        """Write the story's next event and wake its streams (here; on PostgreSQL, in every process)."""
        return await self.publish_all(story_id, [(kind, data, audience)])

    async def publish_all(self, story_id: str, events: list[tuple[str, dict[str, Any], list[str] | None]]) -> int:
        """Write the story's next events, in order, in one transaction, and wake its streams; the last one's seq."""
        seq = await self.store.off_loop(self.store.publish_events, story_id, events, durable=False)
        if not self.announced:
            self.wake(story_id)  # on PostgreSQL the announcement comes back to this process as to the others
        return seq

    def _listen(self) -> None:
        if self.announced and (self._listener is None or self._listener.done()):
            self._listener = asyncio.get_running_loop().create_task(self._keep_listening())

    async def _keep_listening(self) -> None:
        url = listen_url(self.store.engine)
        wait = RETRY_SECONDS[0]
        while True:
            try:
                async for story_id, _seq in notifications(url):
                    if story_id:
                        self.wake(story_id)
                    else:  # listening (again): whatever was announced before, every stream reads now
                        wait = RETRY_SECONDS[0]
                        self.wake_all()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the connection broke: listen again, and meanwhile streams read by heartbeat
                log.warning("listening for story events failed (%s); listening again in %.1f s", error, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_SECONDS[1])

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None


class Relay:
    """A round's events for the other viewers, written in the order they happen (`RoundEvents`-compatible).

    The engine tells its events from the event loop and from its database thread alike; each is queued
    here on the loop and written after the one before. `settled` waits until all are written.

    It is also the round's rider (`gm.store.RIDER`, set for the task that makes it): on PostgreSQL the round's
    opening writes its action, each roll the events queued before it and its own, and its acceptance the events
    still queued and the `round` event, in their own transactions (`take`, `ridden`), unless an event is on its way
    then (they would come before it)."""

    def __init__(
        self,
        hub: Hub,
        story_id: str,
        player_text: str | None,
        *,
        regenerating: bool = False,
        character: str | None = None,
    ) -> None:
        self.hub, self.story_id = hub, story_id
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()
        self.action: dict[str, Any] | None = (
            {"player_text": player_text, "character": character, "regenerating": regenerating}
            if player_text is not None
            else None
        )
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._lock = threading.Lock()  # the queue and the two below, shared with the acceptance's thread
        self._writing = False  # the writer has events on their way: nothing may be written before they are
        self._riding: Stage | None = None  # the transaction events ride in now: what comes meanwhile waits for its end
        self.round_told = False  # the `round` event was written with the acceptance
        self._rolls_told: set[Any] = set()  # the ids of the rolls whose events were written with them
        RIDER.set(weakref.ref(self))  # in the request's task: its round's opening and acceptance read it

    @property
    def started(self) -> bool:
        """Whether the round's action was told (the round started), or it had none to tell (it went on)."""
        return self.action is None

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        """An event of the round, from the event loop or from its database thread: queued at once, in the order told
        (a roll's transaction, in that thread, takes what queued before it), and written from the loop."""
        if kind == "working":  # the round has started: its action is known to all (unless it went with the opening)
            with self._lock:
                action, self.action = self.action, None
            if action is None:
                return
            kind, data = "action", action
        elif kind in RELAYED:
            kind = RELAYED[kind]
        else:
            return
        with self._lock:
            if kind == "roll" and data.get("id") in self._rolls_told:  # written with the roll (`ridden`)
                self._rolls_told.discard(data.get("id"))
                return
            self._queue.append((kind, data))
        if threading.get_ident() == self.loop_thread:
            self._start()
        else:
            self.loop.call_soon_threadsafe(self._start)

    def tell(self, kind: str, data: dict[str, Any]) -> None:
        """An event of the relay's own kinds (`round`, `failed`, ...), after those of the round so far."""
        with self._lock:
            self._queue.append((kind, data))
        self._start()

    def _start(self) -> None:
        if self._queue and (self._writer is None or self._writer.done()):
            context = contextvars.copy_context()  # without the rider: a task holding its relay would be a cycle
            context.run(RIDER.set, None)
            self._writer = self.loop.create_task(self._write(), context=context)

    async def _write(self) -> None:
        """Write what queued, in order: the events that queued while the one before was written go together, in
        one transaction (under load a round's events wait on the database threads, and come in twos and threes)."""
        while True:
            with self._lock:
                if not self._queue or self._riding:  # the ride's end starts the writer again
                    self._writing = False
                    return
                queued, self._queue, self._writing = self._queue, [], True
            try:
                await self.hub.publish_all(self.story_id, [(kind, data, None) for kind, data in queued])
            except Exception:  # a viewer misses an event (and sees it when they read the story): the round goes on
                kinds = ", ".join(kind for kind, _ in queued)
                log.exception("could not publish the %s events of story %s", kinds, self.story_id)

    def take(self, stage: Stage) -> list[Event] | None:
        """For the round's opening (the action), one of its rolls or its acceptance (the events queued), in its
        database thread; None while an event is on its way, or with nothing for the opening."""
        with self._lock:
            action = self.action
            opening = stage == "opening"
            if self._writing or self._riding or self.round_told or (opening and action is None):
                return None
            if action is not None and opening:
                taken, self.action, self._riding = [("action", action)], None, stage
            else:
                taken, self._queue, self._riding = self._queue, [], stage
        return [(kind, data, None) for kind, data in taken]

    def ridden(self, taken: list[Event], written: bool, last: Event | None = None) -> None:
        """The transaction's end: the events written with it, or (it failed) the rider's again."""
        with self._lock:
            stage, self._riding = self._riding, None
            if written:
                self.round_told = self.round_told or stage == "acceptance"
                if stage == "roll" and last is not None:  # the engine tells it next, to every listener: not again here
                    self._rolls_told.add(last[1].get("id"))
            elif stage == "opening":
                self.action = taken[0][1]
            else:
                self._queue[:0] = [(kind, data) for kind, data, _ in taken]
        with suppress(RuntimeError):  # the loop closed meanwhile: nobody is left to tell
            self.loop.call_soon_threadsafe(self._start)

    async def settled(self) -> None:
        # The engine's last events may still be on their way from its thread: let them land first.
        await asyncio.sleep(0)
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)


# Writes to a story other than its rounds' (which a Relay tells), told to its viewers as `changed` with what
# changed, so their pages read the story again: a seat joined or was revoked (a revoked seat's stream ends at
# that read), a together round closed, a setting changed, a secret roll revealed.
CHANGES = re.compile(r"^/api/stories/(?P<story>[^/]+)/(?P<what>seats(?:/[^/]+)?|seat|round/close|settings|reveal)$")
WRITES = frozenset({"POST", "PUT", "DELETE"})


class StoryChanges:
    """ASGI middleware: after a successful write of `CHANGES`, a `changed` event of the story (ids only)."""

    def __init__(self, app: ASGIApp, hub: Hub) -> None:
        self.app, self.hub = app, hub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = CHANGES.match(scope.get("path", "")) if scope["type"] == "http" else None
        if found is None or scope.get("method") not in WRITES:
            await self.app(scope, receive, send)
            return
        statuses: list[int] = []

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
            await send(message)

        await self.app(scope, receive, sending)
        if statuses and 200 <= statuses[0] < 300:
            what = found["what"].split("/")[0]
            try:
                await self.hub.publish(found["story"], "changed", {"what": what})
            except Exception:
                log.exception("could not publish a change of story %s", found["story"])
