"""The PostgreSQL server the tests may use beside SQLite, how to count the round trips made to it, and a played story
to read from either."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from gm.store import RoundRecord, Store, Story

POSTGRES_URL = os.environ.get("GM_TEST_POSTGRES_URL")  # unset: the PostgreSQL tests skip, saying so
NO_POSTGRES = "GM_TEST_POSTGRES_URL is not set"  # the skip reason, which the summary counts


@contextmanager
def round_trips(engine: Engine) -> Iterator[Callable[[], int]]:
    """Round trips to PostgreSQL made by `engine`'s connections while the block runs, read when the returned
    function is called: each Sync (the extended protocol, a pipeline's included) or Query (the simple protocol:
    psycopg's BEGIN and COMMIT) the client sent, from libpq's trace of every connection.

    The pool is emptied as the block starts, so every connection it then hands out is a new, traced one, and again
    as it ends, so none stays traced."""
    trace = tempfile.TemporaryFile()  # noqa: SIM115 (closed as the block ends)

    def traced(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.pgconn.trace(trace.fileno())

    engine.dispose()
    event.listen(engine, "connect", traced)

    def count() -> int:
        trace.seek(0)
        lines = trace.read().split(b"\n")
        return sum(1 for line in lines if b"\tF\t" in line and (b"\tSync" in line or b"\tQuery\t" in line))

    try:
        yield count
    finally:
        event.remove(engine, "connect", traced)
        engine.dispose()
        trace.close()


def a_story_with_rounds(store: Store, count: int) -> str:
    """A story whose rounds hold JSON, a timestamp, booleans and a missing value, as a played story's do."""
    story = store.create_story(Story(title="t", world_data={"calendar": None}, settings={"judge": "off"}))
    for number in range(1, count + 1):
        attempt = store.start_attempt(story.id, number)
        record = RoundRecord(
            story_id=story.id,
            number=number,
            attempt_id=attempt.id,
            player_text=f"I wait, {number}.",
            narration="Rain ✓ on the quay.",
            outcomes=[{"character": "Mara", "result": "Failure", "roll": None}],
            rolls=[{"id": 7, "faces": [[1, 6]], "nested": {"a": [True, None, 1.5]}}],
            refusals=["one", "two"],
            judgement={"verdicts": []} if number % 2 else None,
            clock=90 * number if number % 2 else None,
        )
        store.accept_round(attempt.id, record)
    return story.id
