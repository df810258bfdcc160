"""A story's round lease while a round runs: taken (or waited for), renewed by a heartbeat, then released.

Two rounds of one story never run at once, even in two processes sharing a database: a round takes
the story's lease first (`Store.take_lease`, one conditional UPDATE). The lease is short - by default
20 s - and a heartbeat task renews it every 5 s for as long as the round runs, so a round may take
as long as its model calls need (8 calls of up to 120 s each), while a process killed mid-round
(`kill -9`, a lost machine) holds its story at most `lease_seconds` after its last renewal. The next
round of the story then marks the dead process's attempt abandoned (`Store.start_attempt`).

A process can still lose its lease while alive (paused longer than the lease, or cut off from the
database while another took it over), so the lease also fences the accepted round:
`Store.accept_round(..., holder=...)` writes the round only if this round still holds the lease,
else it raises `LeaseLost` and the round fails with one sentence, its rolls kept.

The times are `RoundSettings.lease_seconds` and `.heartbeat_seconds`; `gm serve` reads them from
`GM_LEASE_SECONDS` and `GM_HEARTBEAT_SECONDS`. The heartbeat must beat at least twice a lease, so
one slow renewal does not lose it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from gm.errors import StoryBusy
from gm.store import Store

if TYPE_CHECKING:
    from gm.round import RoundSettings

log = logging.getLogger(__name__)

BUSY = "another round of this story is being played right now; try again when it is done"


def check_settings(settings: RoundSettings) -> None:
    """Refuse lease times that cannot work: a heartbeat must come at least twice in every lease."""
    if settings.lease_seconds <= 0 or settings.heartbeat_seconds <= 0:
        raise ValueError("the lease and its heartbeat must both last more than 0 seconds")
    if settings.heartbeat_seconds * 2 > settings.lease_seconds:
        raise ValueError(
            f"the heartbeat ({settings.heartbeat_seconds:g} s) must beat at least twice in each lease"
            f" ({settings.lease_seconds:g} s)"
        )


@contextlib.asynccontextmanager
async def held_lease(store: Store, story_id: str, holder: str, settings: RoundSettings) -> AsyncIterator[None]:
    """Hold the story's lease for the block as `holder`, renewed by a heartbeat; `StoryBusy` if it cannot be had."""
    check_settings(settings)
    await _take(store, story_id, holder, settings)
    heartbeat = asyncio.create_task(_heartbeat(store, story_id, holder, settings), name=f"heartbeat {story_id}")
    try:
        yield
    finally:
        heartbeat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heartbeat
        await store.off_loop(store.release_lease, story_id, holder)


async def _take(store: Store, story_id: str, holder: str, settings: RoundSettings) -> None:
    deadline = time.monotonic() + settings.wait_seconds
    while not await store.off_loop(store.take_lease, story_id, holder, settings.lease_seconds):
        if time.monotonic() >= deadline:
            raise StoryBusy(BUSY)
        await asyncio.sleep(0.05)


async def _heartbeat(store: Store, story_id: str, holder: str, settings: RoundSettings) -> None:
    """Renew the lease every `heartbeat_seconds` until cancelled; a lost lease is left to the accept's fence."""
    while True:
        await asyncio.sleep(settings.heartbeat_seconds)
        try:
            renewed = await store.off_loop(store.renew_lease, story_id, holder, settings.lease_seconds)
        except Exception:  # the database is out of reach for now: try again at the next beat
            log.warning("the lease of story %s could not be renewed; trying again", story_id, exc_info=True)
            continue
        if not renewed:
            log.warning("story %s: this round lost its lease, so it will not be saved", story_id)
            return
