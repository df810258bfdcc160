"""A story's round lease while a round runs: taken as the round opens, renewed by a heartbeat, let go as it ends.

Two rounds of one story never run at once, even in two processes sharing a database: a round takes
the story's lease in the transaction that opens its attempt (`Store.open_attempt`, or
`Store.take_paused` for a round taken up again), with one conditional UPDATE that comes first,
so a story another round holds is refused before anything else is read or written (`LeaseBusy`);
the round waits and tries again for `wait_seconds`, then `StoryBusy`. The lease is short - by
default 20 s - and a heartbeat renews it every 5 s for as long as the round runs, so a round
may take as long as its model calls need (8 calls of up to 120 s each), while a process killed
mid-round (`kill -9`, a lost machine) holds its story at most `lease_seconds` after its last
renewal. The next round of the story then marks the dead process's attempt abandoned.

The heartbeat is the process's, not each round's (`Heartbeat`): one task per event loop, store and
lease times, whose beat keeps every lease its rounds hold with one statement that touches no story row
(`Store.beat`: its process's row in lease_processes, gm.store._leases; a round takes its lease naming
that process). Each round used to renew its own story row every beat: at 1,000 stories that was 200
transactions a second through the database threads, more as rounds queued and held their leases
longer, each a new version of a story row (docs/performance.md).

A process can still lose its lease while alive (paused longer than the lease, or cut off from the
database while another took it over), so the lease also fences the round's end: the transaction
that writes the accepted round (`Store.accept_round(..., holder=...)`) or keeps a round paused for
dice (`Store.keep_paused`) writes it only if this round still holds the lease, else it raises
`LeaseLost` and the round fails with one sentence, its rolls kept. That same transaction lets the
lease go. A round that ends any other way (a refusal as it opens, a model error, a cancel, a lost
lease, a bug) lets it go in a transaction of its own (`RoundLease.release`), as does a round whose
opening failed after its lease was taken. If the database cannot do that just then (a full disk, a
server gone), the lease is let go as soon as it answers again (gm.engine._loose_ends): at the latest
first thing when the story's next round opens, so the story is not held by a round that is over.

The times are `RoundSettings.lease_seconds` and `.heartbeat_seconds`; `gm serve` reads them from
`GM_LEASE_SECONDS` and `GM_HEARTBEAT_SECONDS`. The heartbeat must beat at least twice a lease, so
one slow renewal does not lose it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from gm.engine._loose_ends import loose_ends, outage
from gm.engine.observe import observer
from gm.engine.settings import RoundSettings
from gm.errors import LeaseBusy, SettingsError
from gm.store import Claim, Store

log = logging.getLogger(__name__)

T = TypeVar("T")


def check_settings(settings: RoundSettings) -> None:
    """Refuse lease times that cannot work: a heartbeat must come at least twice in every lease."""
    if settings.lease_seconds <= 0 or settings.heartbeat_seconds <= 0:
        raise SettingsError("the lease and its heartbeat must both last more than 0 seconds")
    if settings.heartbeat_seconds * 2 > settings.lease_seconds:
        raise SettingsError(
            f"the heartbeat ({settings.heartbeat_seconds:g} s) must beat at least twice in each lease"
            f" ({settings.lease_seconds:g} s)"
        )


class RoundLease:
    """One round's hold on its story: taken by the transaction that opens the round, renewed while it runs."""

    def __init__(self, store: Store, story_id: str, settings: RoundSettings) -> None:
        check_settings(settings)
        self.store, self.story_id, self.settings = store, story_id, settings
        self.beating = heartbeat_for(store, settings)  # the process's, which keeps this lease once it is taken
        self.claim = Claim(uuid.uuid4().hex, settings.lease_seconds, self.beating.process)
        self.ending = False  # set as the round's last transaction (which lets the lease go) is handed over
        self._heartbeat: Heartbeat | None = None

    @property
    def holder(self) -> str:
        return self.claim.holder

    async def open(self, work: Callable[..., T], *arguments: Any) -> T:
        """`work(*arguments)` in a worker thread (`Store.off_loop`): work that takes the lease with `self.claim`
        first thing, raising `LeaseBusy` if it is held. Tried again every 50 ms for `wait_seconds`, then
        `StoryBusy`. Once it has returned, the heartbeat renews the lease until the round ends. The story's loose
        ends, if a round of it failed while the database was out of reach, are written first."""
        await loose_ends(self.store).settle(self.story_id)
        deadline = time.monotonic() + self.settings.wait_seconds
        while True:
            try:
                # Not synced by itself (`durable=False`): a power cut may lose an opening that nobody was told of;
                # the round's first roll or its accepted round syncs it with them (gm.store._commit_groups).
                opened = await self.store.off_loop(work, *arguments, durable=False)
            except LeaseBusy:  # nothing was done: the lease is another round's
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.05)
                continue
            except BaseException:  # refused, or failed after it was taken: never left held
                await self.release()
                raise
            self._heartbeat = self.beating
            self._heartbeat.add(self)
            observer().lease_taken()
            return opened

    async def stop(self) -> None:
        """Stop renewing: the round's last transaction let the lease go (or it is let go next)."""
        if self._heartbeat is not None:
            observer().lease_let_go()
            # A renewal already running may still match this holder; it only extends a lease that is let go
            # next, and matches nothing once it is (holders are never reused).
            self._heartbeat.remove(self)
            self._heartbeat = None

    async def release(self) -> None:
        """Stop renewing and let the lease go, in a transaction of its own: for a round that did not end in one
        that let it go. Only the holder's lease is let go: one another round took meanwhile stays its own."""
        await self.stop()
        try:
            await self.store.off_loop(self.store.release_lease, self.story_id, self.holder, durable=False)
        except BaseException as error:  # the round's own error is the one to tell; the next beat lets it go
            # (the process's row would keep it as long as the process lives: it does not run out by itself), and
            # after an outage the loose ends let it go as soon as the database answers, sooner than a beat
            self.beating.release_later(self)
            if not isinstance(error, Exception):
                raise
            if outage(error):
                log.warning(
                    "story %s: its lease could not be let go (%s); it is once the database answers",
                    self.story_id,
                    error,
                )
                loose_ends(self.store).release_later(self.story_id, self.holder)
            else:
                log.exception("story %s: its lease could not be let go; the next beat will", self.story_id)

    def lost(self) -> None:
        """The heartbeat found this round's lease let go or taken: a lost lease is left to the fence at the end."""
        if not self.ending:  # not let go by the round's own last transaction, but taken
            log.warning("story %s: this round lost its lease, so it will not be saved", self.story_id)


class Heartbeat:
    """Every lease a process's rounds hold on one store, kept together every `heartbeat_seconds` by its
    process's row (`process`): one statement however many rounds run, and a read of which rounds still hold
    theirs. Its task runs while it has leases to keep."""

    def __init__(self, store: Store, settings: RoundSettings) -> None:
        self.store, self.settings = store, settings
        self.process = uuid.uuid4().hex
        self.leases: dict[str, RoundLease] = {}  # by holder
        self.let_go: dict[str, str] = {}  # story: holder, of rounds whose own release failed
        self._task: asyncio.Task[None] | None = None

    def add(self, lease: RoundLease) -> None:
        self.leases[lease.holder] = lease
        self._start()

    def remove(self, lease: RoundLease) -> None:
        self.leases.pop(lease.holder, None)

    def release_later(self, lease: RoundLease) -> None:
        """Let `lease` go with the next beat: its round's release failed, and this process's row keeps it."""
        self.remove(lease)
        self.let_go[lease.story_id] = lease.holder
        self._start()

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._beat(), name="heartbeat")

    async def _beat(self) -> None:
        """Renew every lease held, every `heartbeat_seconds`, until none is left (and none is left to let go)."""
        try:
            while self.leases or self.let_go:
                await asyncio.sleep(self.settings.heartbeat_seconds)
                held, let_go = dict(self.leases), dict(self.let_go)
                if not held and not let_go:
                    return
                stories = {lease.story_id: holder for holder, lease in held.items()}
                try:
                    kept = await self.store.off_loop(
                        self.store.beat, self.process, self.settings.lease_seconds, stories, let_go, durable=False
                    )
                except Exception:  # the database is out of reach for now: try again at the next beat
                    log.warning("%d leases could not be renewed; trying again", len(held), exc_info=True)
                    continue
                for story, holder in let_go.items():
                    if self.let_go.get(story) == holder:
                        del self.let_go[story]
                for holder, lease in held.items():
                    if holder not in kept and self.leases.pop(holder, None) is not None:
                        lease.lost()
        finally:
            # A finished task holds its loop: let it go, so that the heartbeats of a loop that has closed (and the
            # stores they hold) are dropped with it (`_heartbeats` is keyed by the loop, weakly).
            if self._task is asyncio.current_task():
                self._task = None


# One heartbeat per event loop, store and lease times (a test runs several loops in turn, each with its own).
_heartbeats: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Store, float, float], Heartbeat]] = (
    weakref.WeakKeyDictionary()
)


def heartbeat_for(store: Store, settings: RoundSettings) -> Heartbeat:
    """The running loop's heartbeat for `store` and these lease times."""
    mine = _heartbeats.setdefault(asyncio.get_running_loop(), {})
    key = (store, settings.lease_seconds, settings.heartbeat_seconds)
    found = mine.get(key)
    if found is None:
        found = mine[key] = Heartbeat(store, settings)
    return found
