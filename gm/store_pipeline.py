"""A batch's statements sent on PostgreSQL through libpq's pipeline mode by psycopg's libpq binding: one write,
one round trip.

psycopg's own pipeline (`Connection.pipeline()`, a cursor a statement) waits on the socket twice a statement,
writes each statement in a packet of its own, and builds a cursor, a query and a result reader for each: in a
py-spy profile of `gm serve` on PostgreSQL under 1,000 players (bench/serve_bench.py) psycopg's own Python code
was a fifth of the process's GIL time, most of it there. Here a batch's values are dumped with psycopg's own
adapters (a `Transformer` on the connection, as each cursor makes one: a value is written as a cursor writes
it), the statements queued on libpq (`PGconn.send_query_params`) and sent with the Sync in one write, and
their results read with the same adapters; an error is psycopg's own, built from the result as a cursor
builds it. A micro-benchmark of five statements: about half the CPU of psycopg's pipeline (bench/HISTORY.md).

Statements go unnamed: the server parses each as it comes (psycopg prepares a statement after its fifth run on
a connection). That leaves nothing on a connection that a pooler in transaction mode (PgBouncer) could hand to
another client, and nothing to go stale when a migration changes a table.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gm.lru import LRU

# psycopg's names for what a generator waits for and what a wait returns (psycopg.waiting.Wait and Ready), and a
# result's status (psycopg.pq.ExecStatus); written out so that where only SQLite is used psycopg is not imported.
_WAIT_R, _WAIT_RW = 1, 3
_READY_R = 1
_TUPLES_OK, _FATAL_ERROR, _PIPELINE_SYNC = 2, 7, 10

# SQLAlchemy's pyformat placeholders, `%(name)s`, and its escaped `%`, `%%`; a `%` alone is neither.
_PLACEHOLDER = re.compile(r"%\((?P<name>[^)]+)\)s|%%|%")


@dataclass(frozen=True)
class Numbered:
    """A statement's SQL with PostgreSQL's own placeholders (`$1`, `$2`, ...), encoded, and the names of the
    parameters they stand for, in order."""

    sql: bytes
    names: tuple[str, ...]


_numbered: LRU[tuple[str, str], Numbered] = LRU(256)  # keyed by the compiled SQL: a few dozen statements


def numbered(sql: str, encoding: str) -> Numbered:
    """`sql` as SQLAlchemy compiled it for psycopg (pyformat) rewritten with PostgreSQL's placeholders, once; a
    name used twice is one parameter, as psycopg makes it. A `%` that is neither placeholder nor escape is a
    mistake of the statement's author (ValueError)."""
    found = _numbered.get((sql, encoding))
    if found is not None:
        return found
    names: list[str] = []

    def placed(match: re.Match[str]) -> str:
        if (name := match.group("name")) is None:
            if match.group(0) == "%%":
                return "%"
            raise ValueError(f"a lone '%' at character {match.start() + 1} of a batched statement: {sql[:200]!r}")
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    found = Numbered(_PLACEHOLDER.sub(placed, sql).encode(encoding), tuple(names))
    _numbered.put((sql, encoding), found)
    return found


@dataclass
class Outcome:
    """What one statement returned: its columns' names (None: it returns no rows), its rows, the rows it changed."""

    columns: list[str] | None = None
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = -1


def send(
    driver: Any,
    statements: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    opening: Sequence[bytes] = (),
    commit: bool = False,
) -> list[Outcome]:
    """Run `statements` (each its SQL as compiled and one or more sets of parameters) on psycopg connection
    `driver`, after the `opening` commands and before a COMMIT if asked, in one round trip; each one's outcome.

    The first statement that fails raises psycopg's error for it, as a cursor would, and the server skips the
    rest, the COMMIT included: the transaction is left failed, for the caller to roll back. Everything is
    dumped before anything is sent, so a value psycopg cannot write raises with nothing sent."""
    from psycopg import errors
    from psycopg.adapt import PyFormat, Transformer

    encoding = driver.info.encoding
    transformer = Transformer(driver)
    queries: list[tuple[bytes, Any, Any, Any]] = [(command, None, None, None) for command in opening]
    for sql, parameter_sets in statements:
        plan = numbered(sql, encoding)
        formats = [PyFormat.AUTO] * len(plan.names)  # each value's type as a cursor chooses it
        for values in parameter_sets:
            dumped = transformer.dump_sequence([values[name] for name in plan.names], formats)
            queries.append((plan.sql, dumped, transformer.types, transformer.formats))
    if commit:
        queries.append((b"COMMIT", None, None, None))
    pgconn = driver.pgconn
    with driver.lock:
        pgconn.enter_pipeline_mode()
        try:
            for sql_bytes, dumped, types, formats in queries:
                pgconn.send_query_params(sql_bytes, dumped, param_types=types, param_formats=formats)
            pgconn.pipeline_sync()
            results = driver.wait(_exchange(pgconn))
        except BaseException:
            driver.close()  # a pipeline left half-read cannot be used again: the pool replaces the connection
            raise
        pgconn.exit_pipeline_mode()
    for result in results:
        if result.status == _FATAL_ERROR:
            raise errors.error_from_result(result, encoding=encoding)
    return _outcomes(transformer, results[len(opening) :], statements, encoding)


def _exchange(pgconn: Any) -> Generator[int, int, list[Any]]:
    """A psycopg generator (run by `Connection.wait`): write what is queued, then read every result up to the
    Sync's. libpq separates one statement's results from the next one's by a None."""
    while pgconn.flush():  # the socket took only part of it: wait until it takes more (reading, lest both wait)
        if (yield _WAIT_RW) & _READY_R:
            pgconn.consume_input()
    results: list[Any] = []
    ended = False  # a None just read: one more, with nothing to wait for, and the Sync would never come
    while True:
        if pgconn.is_busy():
            if (yield _WAIT_R) & _READY_R:
                pgconn.consume_input()
            continue
        result = pgconn.get_result()
        if result is None:
            if ended:
                raise RuntimeError("libpq's pipeline ran out of results before its Sync")
            ended = True
            continue
        ended = False
        if result.status == _PIPELINE_SYNC:
            return results
        results.append(result)


def _outcomes(
    transformer: Any,
    results: Sequence[Any],
    statements: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    encoding: str,
) -> list[Outcome]:
    """Each statement's outcome from its results (one per set of parameters), as psycopg's cursor reports it: rows
    read with the connection's adapters, a read's rowcount its rows, a write's the rows it changed (summed over
    its sets of parameters, as `executemany` sums them)."""
    outcomes = []
    start = 0
    for _, parameter_sets in statements:
        mine, start = results[start : start + len(parameter_sets)], start + len(parameter_sets)
        outcome = Outcome()
        if (columns := column_names(mine[0], encoding)) is not None:
            outcome.columns = columns
            for result in mine:
                transformer.set_pgresult(result)
                outcome.rows += transformer.load_rows(0, result.ntuples, tuple)
        if len(mine) == 1 and mine[0].status == _TUPLES_OK:
            outcome.rowcount = mine[0].ntuples
        else:
            counts = [result.command_tuples for result in mine if result.command_tuples is not None]
            outcome.rowcount = sum(counts) if counts or len(mine) > 1 else -1
        outcomes.append(outcome)
    return outcomes


def column_names(result: Any, encoding: str) -> list[str] | None:
    """The names of the columns a statement's result holds, or None where it returned no rows: what psycopg's
    `Cursor.description` says, read without the `Column` objects it builds each time it is asked."""
    if not result or not (result.nfields or result.status == _TUPLES_OK):
        return None
    return [result.fname(index).decode(encoding) for index in range(result.nfields)]
