"""The reads of every round find their rows through an index that also gives their order, so a round's cost does
not grow with its story (gm/store/migrations/versions/growth_indexes.py). SQLite only: its planner has no statistics,
so which index it takes follows from the indexes there are; PostgreSQL's chooses by the statistics it keeps."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Executable, event

from gm.store import Store
from gm.store._memory import _LATE_ROUNDS, _MARK_REMEMBERED, _UNREMEMBERED
from gm.store._rolls import _UNFINISHED_AT, OF_ROUND


def plan(store: Store, statement: Executable, parameters: dict[str, Any]) -> str:
    """SQLite's plan for `statement` as SQLAlchemy sends it with these parameters (run, then rolled back)."""
    sent: list[tuple[str, Any]] = []

    def keep(_connection: Any, _cursor: Any, sql: str, values: Any, *_: Any) -> None:
        sent.append((sql, values))

    event.listen(store.engine, "before_cursor_execute", keep)
    try:
        with store.reading() as connection:  # nothing is committed
            connection.execute(statement, parameters)
            sql, values = sent[-1]
            return "; ".join(row[3] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", values))
    finally:
        event.remove(store.engine, "before_cursor_execute", keep)


@pytest.mark.parametrize(
    ("statement", "parameters", "search"),
    [
        (
            OF_ROUND,
            {"story": "s", "number": 2},
            "SEARCH rolls USING INDEX ix_rolls_story_round (story_id=? AND round_number=?)",
        ),
        (
            _UNREMEMBERED,
            {"story": "s"},
            "SEARCH rounds USING INDEX ix_rounds_unremembered (story_id=? AND memory_written=?)",
        ),
        (
            _UNFINISHED_AT,
            {"story": "s", "number": 2},
            "SEARCH attempts USING INDEX ix_attempts_story_round (story_id=? AND round_number=?)",
        ),
        (
            _MARK_REMEMBERED,
            {"story": "s", "round_no": 3, "attempt": "a"},
            "SEARCH rounds USING INDEX sqlite_autoindex_rounds_1 (story_id=? AND number=?)",
        ),
        (
            _LATE_ROUNDS,
            {"story": "s", "after": 1, "before": 5, "count": 2},
            "SEARCH rounds USING INDEX sqlite_autoindex_rounds_1 (story_id=? AND number>? AND number<?); "
            "CORRELATED SCALAR SUBQUERY 1; "
            "SEARCH memory USING COVERING INDEX sqlite_autoindex_memory_1 (story_id=? AND round_number=?)",
        ),
    ],
    ids=[
        "a round's rolls",
        "rounds to remember",
        "a round's unfinished attempts",
        "rounds marked remembered",
        "rounds standing in for notes",
    ],
)
def test_a_rounds_reads_search_by_an_index_that_holds_their_order(
    sqlite_url: str, statement: Executable, parameters: dict[str, Any], search: str
) -> None:
    store = Store(sqlite_url)  # at the newest schema, as migrated
    found = plan(store, statement, parameters)
    assert found == search, found  # one search, no scan of the story's rows and no sort afterwards
    store.engine.dispose()
