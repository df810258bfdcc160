"""Statements that refuse on the server: a transaction's checks made where they run, so its COMMIT can go in the
same round trip as its statements (PostgreSQL).

A transaction whose statements might refuse it (a row that was not there, a lease another holds, a place in a
chain another took) used to read their results in Python before committing: two round trips. A guarded statement
fails on the server when it wrote no row, and PostgreSQL then skips the rest of the pipeline, the COMMIT included
(gm.store._pipeline), so the transaction that commits is the one the checks would have let commit. The caller
recognises a guard that fired (`fired`), lets its block roll back, and does the work the plain way, which says
why it is refused as it always did: a refusal is rare, a round trip is not.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Insert, Select, Update, func, literal_column
from sqlalchemy import select as sql_select
from sqlalchemy.exc import DBAPIError

DIVISION_BY_ZERO = "22012"  # PostgreSQL's SQLSTATE for a guard that fired (and for nothing else a round runs)


def guarded(statement: Update | Insert, *kept: str) -> Select[Any]:
    """`statement` (PostgreSQL's, with RETURNING) made to fail on the server when it writes no row: a SELECT over it
    as a CTE that divides by the rows written (PostgreSQL's `division_by_zero`), returning the `kept` columns of the
    row it wrote (their largest: it writes at most one) and the one quotient. The division is not a constant, so it
    is made as the statement runs, never as it is planned. Its one row, when it returns, says the statement wrote."""
    done = statement.cte("done")
    return sql_select(*(func.max(done.c[name]) for name in kept), literal_column("1 / count(*)")).select_from(done)


def fired(error: DBAPIError) -> bool:
    """Whether `error` is a guard's: its statement wrote nothing, and its transaction committed nothing."""
    return getattr(error.orig, "sqlstate", None) == DIVISION_BY_ZERO
