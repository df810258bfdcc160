"""The rounds a `Game` is playing now, so a server can drain: stop starting rounds, let those in flight end.

`Game._round` plays each round inside `RoundsInFlight.track`. `drain(seconds)` closes the door (a round
asked for from then on raises `ServerStopping`, before anything is read or written), waits until the
rounds in flight have ended or `seconds` have passed, then stops those still running: each is cancelled,
and its state machine fails it as any stopped round (the attempt marked failed with its model calls, its
rolls kept, the lease let go: gm.engine._machine), and its caller gets `RoundFailed` with one sentence
instead of the cancellation (a streamed round: a `failed` event). `gm serve` drains on SIGTERM
(gm.web._health).

`ROUND` holds the story id and the round's number (once its attempt is open) for the code running it, so a
log line written in a round can say which (gm.web._logs).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from gm.errors import RoundFailed, ServerStopping

STOPPED_BY_DRAIN = "the server stopped before this round ended; nothing was changed, try again"
CLOSED = "this server is shutting down and starts no new round; try again in a moment"
SETTLE_SECONDS = 10.0  # after the stopped rounds are cancelled, how long their failing may take at most

# What the running code is about: {"story": id, "round": number}; None outside a round.
ROUND: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar("gm_round", default=None)


@dataclass(frozen=True)
class Drained:
    """What a drain found and did: the rounds in flight as it began, how many of them finished (accepted or
    paused) and how many failed (stopped at the deadline, or failing on their own), and how long it took."""

    in_flight: int
    finished: int
    failed: int
    stopped: int  # of the failed: cancelled at the deadline
    seconds: float


class RoundsInFlight:
    """The round tasks running now, each tracked while it plays."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()
        self._stopping: set[asyncio.Task[object]] = set()
        self.closed = False
        self._finished = self._failed = 0  # rounds that ended since the door closed

    def __len__(self) -> int:
        return len(self._tasks)

    @asynccontextmanager
    async def track(self, story_id: str) -> AsyncIterator[None]:
        """Play one round in the block; `ServerStopping` once the door is closed, `RoundFailed` if a drain stops it."""
        if self.closed:
            raise ServerStopping(CLOSED)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        token = ROUND.set({"story": story_id})
        ok = False
        try:
            yield
            ok = True
        except asyncio.CancelledError:
            if task not in self._stopping:
                raise
            task.uncancel()  # the drain's own cancel, answered as a failed round; any other stays a cancel
            raise RoundFailed(STOPPED_BY_DRAIN) from None
        finally:
            ROUND.reset(token)
            self._tasks.discard(task)
            self._stopping.discard(task)
            if self.closed:
                if ok:
                    self._finished += 1
                else:
                    self._failed += 1

    async def drain(self, seconds: float) -> Drained:
        """Close the door, wait up to `seconds` for the rounds in flight, then stop the rest and let them fail."""
        self.closed = True
        started, in_flight = time.monotonic(), len(self._tasks)
        self._finished = self._failed = 0
        deadline = started + seconds
        while self._tasks and time.monotonic() < deadline:
            await asyncio.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
        stopped = len(self._tasks)
        for task in list(self._tasks):
            self._stopping.add(task)
            task.cancel()
        settle_by = time.monotonic() + SETTLE_SECONDS
        while self._tasks and time.monotonic() < settle_by:
            await asyncio.sleep(0.02)
        return Drained(in_flight, self._finished, self._failed, stopped, round(time.monotonic() - started, 3))
