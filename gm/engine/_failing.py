"""How an attempt at a round that cannot finish ends: marked failed, with its model calls, and one sentence.

Whatever stops a round - the game master giving up, a model that cannot be reached, a lost lease, a
database that refuses a write, or a bug - its attempt is marked failed (never left `running`) with
the model calls it made, its rolls stay as they are, and the caller gets a `GmError` with a sentence
to show. An error gm did not foresee is logged with its traceback and becomes a `RoundFailed`, so no
traceback reaches a player and no web request answers 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from gm.errors import GmError, RoundFailed
from gm.store import ModelCall, Store

log = logging.getLogger(__name__)

UNFORESEEN = (
    "the round could not be finished because of an internal error (it has been logged); nothing was changed, try again"
)
STOPPED = "the round was stopped before it ended"


async def end_failed(store: Store, attempt_id: str, calls: Sequence[ModelCall], error: BaseException) -> BaseException:
    """Mark the attempt failed with its model calls, and return the error to raise in place of `error`.

    A `GmError` is raised as it is; any other error is logged and becomes a `RoundFailed`; a round
    cancelled or interrupted is marked and stopped all the same. A database that cannot even mark the
    attempt is logged too: the next round of the story marks it abandoned (`Store.start_attempt`).
    """
    raised: BaseException
    if isinstance(error, GmError):
        sentence, raised = str(error), error
    elif isinstance(error, Exception):
        log.error("round attempt %s failed unforeseen", attempt_id, exc_info=error)
        sentence, raised = UNFORESEEN, RoundFailed(UNFORESEEN)
    else:  # cancelled, interrupted, exiting: marked, and stopped all the same
        sentence, raised = STOPPED, error
    try:
        await asyncio.shield(store.off_loop(store.fail_attempt, attempt_id, sentence, list(calls)))
    except Exception:
        log.exception("attempt %s could not be marked failed; the story's next round marks it abandoned", attempt_id)
    return raised
