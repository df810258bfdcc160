"""A round's one way to fail (gm.engine._machine): the attempt marked failed with its model calls, and the error
a caller may see, one sentence and never a traceback."""

from __future__ import annotations

import asyncio
import logging

from gm.engine._attempt import AttemptState, bind
from gm.errors import GmError, RoundFailed
from gm.store import Store

log = logging.getLogger(__name__)

UNFORESEEN = "the round could not be finished because of an internal error (it has been logged); "
UNFORESEEN += "nothing was changed, try again"
STOPPED = "the round was stopped before it ended"


async def failed_attempt(store: Store, story_id: str, state: AttemptState, error: BaseException) -> BaseException:
    """Mark the attempt failed with its model calls, and return the error to raise in place of `error`.

    A `GmError` is raised as it is; any other error is logged and becomes a `RoundFailed`, so no traceback
    reaches a player and no web request answers 500; a round cancelled or interrupted is marked and stopped
    all the same. A database that cannot even mark the attempt is logged too: the story's next round marks
    it abandoned (`Store.open_attempt`).
    """
    raised: BaseException
    if isinstance(error, GmError):
        sentence, raised = str(error), error
    elif isinstance(error, Exception):
        log.error("round attempt %s failed unforeseen", state.attempt_id, exc_info=error)
        sentence, raised = UNFORESEEN, RoundFailed(UNFORESEEN)
    else:  # cancelled, interrupted, exiting: marked, and stopped all the same
        sentence, raised = STOPPED, error
    calls = bind(state.calls, story_id, state.attempt_id)
    try:
        await asyncio.shield(store.off_loop(store.fail_attempt, state.attempt_id, sentence, list(calls)))
    except Exception:
        log.exception(
            "attempt %s could not be marked failed; the story's next round marks it abandoned", state.attempt_id
        )
    return raised
