"""A round's one way to fail (gm.engine._machine): the attempt marked failed with its model calls, and the error
a caller may see, one sentence and never a traceback (a database's own error, which a route answers with a 503)."""

from __future__ import annotations

import asyncio
import logging

from gm.engine._attempt import AttemptState, bind
from gm.engine._loose_ends import loose_ends, outage
from gm.errors import GmError, RoundFailed
from gm.store import Store

log = logging.getLogger(__name__)

UNFORESEEN = "the round could not be finished because of an internal error (it has been logged); "
UNFORESEEN += "nothing was changed, try again"
STOPPED = "the round was stopped before it ended"
DATABASE = "the round could not be finished because the database could not be used ({reason}); try again"


async def failed_attempt(store: Store, story_id: str, state: AttemptState, error: BaseException) -> BaseException:
    """Mark the attempt failed with its model calls, and return the error to raise in place of `error`.

    A `GmError` is raised as it is, and so is a database out of reach (`outage`: a route answers it with a 503
    and one sentence, gm.web.app); any other error is logged and becomes a `RoundFailed`, so no traceback reaches a
    player and no web request answers 500; a round cancelled or interrupted is marked and stopped all the
    same. A database that cannot even mark the attempt is logged too, and the attempt is marked failed as
    soon as it answers again (gm.engine._loose_ends).
    """
    raised: BaseException
    if isinstance(error, GmError):
        sentence, raised = str(error), error
    elif outage(error):
        reason = " ".join(str(getattr(error, "orig", None) or error).split())[:120].rstrip(".")
        log.warning("round attempt %s failed: the database could not be used (%s)", state.attempt_id, reason)
        sentence, raised = DATABASE.format(reason=reason or type(error).__name__), error
    elif isinstance(error, Exception):
        log.error("round attempt %s failed unforeseen", state.attempt_id, exc_info=error)
        sentence, raised = UNFORESEEN, RoundFailed(UNFORESEEN)
    else:  # cancelled, interrupted, exiting: marked, and stopped all the same
        sentence, raised = STOPPED, error
    calls = list(bind(state.calls, story_id, state.attempt_id))
    try:
        await asyncio.shield(store.off_loop(store.fail_attempt, state.attempt_id, sentence, calls))
    except Exception as failed:
        if not outage(failed):  # refused, not out of reach: trying again would only repeat it
            log.exception(
                "attempt %s could not be marked failed; the story's next round marks it abandoned", state.attempt_id
            )
            return raised
        log.warning(
            "attempt %s could not be marked failed (%s); it is once the database answers", state.attempt_id, failed
        )
        loose_ends(store).fail_later(story_id, state.attempt_id, sentence, calls)
    return raised
