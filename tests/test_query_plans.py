"""The reads of every round find their rows through an index that also gives their order, so a round's cost does
not grow with its story (gm/migrations/versions/growth_indexes.py). SQLite only: its planner has no statistics,
so which index it takes follows from the indexes there are; PostgreSQL's chooses by the statistics it keeps."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Executable
from sqlalchemy.dialects import sqlite

from gm.store import Store
from gm.store_rolls import _UNFINISHED_AT, OF_ROUND
from gm.store_rounds import _UNREMEMBERED


def plan(store: Store, statement: Executable) -> str:
    compiled = statement.compile(dialect=sqlite.dialect())
    with store.reading() as connection:
        driver = connection.connection.driver_connection
        assert driver is not None
        rows = driver.execute(f"EXPLAIN QUERY PLAN {compiled.string}", [None] * len(compiled.positiontup or []))
        return "; ".join(row[3] for row in rows)


@pytest.mark.parametrize(
    ("statement", "search"),
    [
        (OF_ROUND, "SEARCH rolls USING INDEX ix_rolls_story_round (story_id=? AND round_number=?)"),
        (_UNREMEMBERED, "SEARCH rounds USING INDEX ix_rounds_unremembered (story_id=? AND memory_written=?)"),
        (_UNFINISHED_AT, "SEARCH attempts USING INDEX ix_attempts_story_round (story_id=? AND round_number=?)"),
    ],
    ids=["a round's rolls", "rounds to remember", "a round's unfinished attempts"],
)
def test_a_rounds_reads_search_by_an_index_that_holds_their_order(
    tmp_path: Path, statement: Executable, search: str
) -> None:
    store = Store(f"sqlite:///{tmp_path / 'gm.db'}")
    found = plan(store, statement)
    assert found == search, found  # one search, no scan of the story's rows and no sort afterwards
    store.engine.dispose()
