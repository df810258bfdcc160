"""A batch's statements sent on PostgreSQL through libpq's pipeline mode by psycopg's libpq binding: one write,
one round trip.

Why not psycopg's own pipeline (`Connection.pipeline()`, a cursor a statement): it waits on the socket twice a
statement, writes each statement in a packet of its own, and builds a cursor, a query and a result reader for
each, so under many players psycopg's own Python code is a large part of the server's GIL time. Here a batch's
values are dumped with psycopg's own adapters (a `Transformer` on the connection, as each cursor makes one: a
value is written as a cursor writes it), the statements queued on libpq (`PGconn.send_query_params`) and sent
with the Sync in one write, and their results read with the same adapters; an error is psycopg's own, built
from the result as a cursor builds it. A round's database work then takes about two thirds of the CPU
(docs/decisions/postgresql-batches.md has the measurements).

Each statement is prepared on a connection the first time it runs there (its Parse rides in the same batch)
and runs by name after that, so the server plans it once: a statement sent unnamed is parsed and planned
every time. That is done only where psycopg prepares nothing itself (`prepare_threshold` None, as
`gm.store.make_engine` makes its connections): psycopg sends DEALLOCATE ALL at a rollback once it has prepared
a statement of its own, which would take gm's with it. Behind PgBouncer in transaction mode, prepared
statements need PgBouncer 1.21 or later with `max_prepared_statements` set (docs/serving.md, "Several processes").
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gm._lru import LRU

# psycopg's names for what a generator waits for and what a wait returns (psycopg.waiting.Wait and Ready), and a
# result's status (psycopg.pq.ExecStatus); written out so that where only SQLite is used psycopg is not imported.
_WAIT_R, _WAIT_RW = 1, 3
_READY_R = 1
_COMMAND_OK, _TUPLES_OK, _FATAL_ERROR, _PIPELINE_SYNC = 1, 2, 7, 10

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


Query = tuple[bytes, Any, tuple[int, ...], Any]  # SQL, dumped values (None: a command), their types and formats
Key = tuple[bytes, tuple[int, ...]]  # a prepared statement's: its SQL and its parameters' types


def send(
    driver: Any,
    statements: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    opening: Sequence[bytes] = (),
    commit: bool = False,
    transformer: Any = None,
) -> list[Outcome]:
    """Run `statements` (each its SQL as compiled and one or more sets of parameters) on psycopg connection
    `driver`, after the `opening` commands and before a COMMIT if asked, in one round trip; each one's outcome.

    `transformer` is the connection's (`transformer_for`), kept by the caller for as long as the connection
    lives, or None for a new one.

    The first statement that fails raises psycopg's error for it, as a cursor would, and the server skips the
    rest, the COMMIT included: the transaction is left failed, for the caller to roll back. Everything is
    dumped before anything is sent, so a value psycopg cannot write raises with nothing sent."""
    encoding = driver.info.encoding
    if transformer is None:
        transformer = transformer_for(driver)
    queries: list[Query] = [(command, None, (), None) for command in opening]
    queries += _dumped(transformer, statements, encoding)
    if commit:
        queries.append((b"COMMIT", None, (), None))
    known = _prepared_on(driver)
    pgconn = driver.pgconn
    with driver.lock:
        pgconn.enter_pipeline_mode()
        try:
            parses = _queue(pgconn, queries, known)
            pgconn.pipeline_sync()
            results = driver.wait(_exchange(pgconn))
            pgconn.exit_pipeline_mode()
        except BaseException:
            driver.close()  # a pipeline left half-read cannot be used again: the pool replaces the connection
            raise
        if known is not None:  # a Parse that succeeded is prepared, even in a transaction that then failed
            known.names.update((key, name) for key, (at, name) in parses.items() if results[at].status == _COMMAND_OK)
    results = _settled(results, parses, encoding)
    try:
        return _outcomes(transformer, results[len(opening) :], statements, encoding)
    finally:
        transformer.set_pgresult(None)  # a kept transformer holds no result past its batch


def transformer_for(driver: Any) -> Any:
    """psycopg's adapters for connection `driver` (a `Transformer`, as each cursor makes one). It keeps the dumpers
    and loaders it found by type, so one kept with its connection finds each once: a round's opening read of the
    past (three reads) took 296 µs of CPU against 312 µs with a new one each batch (2,000 batches). It holds the
    connection, so it is kept beside it (gm.store._batch keeps it in the pool's record of the connection), never in
    a table keyed by it."""
    from psycopg.adapt import Transformer

    return Transformer(driver)


def _dumped(
    transformer: Any, statements: Sequence[tuple[str, Sequence[Mapping[str, Any]]]], encoding: str
) -> list[Query]:
    """Each statement's SQL with PostgreSQL's placeholders and each set of its values dumped as a cursor dumps them."""
    from psycopg.adapt import PyFormat

    queries: list[Query] = []
    for sql, parameter_sets in statements:
        plan = numbered(sql, encoding)
        formats = [PyFormat.AUTO] * len(plan.names)  # each value's type as a cursor chooses it
        for values in parameter_sets:
            dumped = transformer.dump_sequence([values[name] for name in plan.names], formats)
            queries.append((plan.sql, dumped, tuple(transformer.types or ()), transformer.formats))
    return queries


def _queue(pgconn: Any, queries: Sequence[Query], known: _Prepared | None) -> dict[Key, tuple[int, bytes]]:
    """Queue the queries on libpq, each statement by its prepared name (with its Parse first, the first time it
    comes); the Parses queued, with where each one's result comes among the batch's results."""
    parses: dict[Key, tuple[int, bytes]] = {}
    position = 0  # of the next result
    for sql, dumped, types, formats in queries:
        name = None
        if known is not None and dumped is not None:
            key = (sql, types)
            name = known.names.get(key) or (parses[key][1] if key in parses else None)
            if name is None and len(known.names) + len(parses) < PREPARED_PER_CONNECTION:
                name, known.made = b"_gm_%d" % known.made, known.made + 1  # never given twice
                pgconn.send_prepare(name, sql, param_types=types)
                parses[key] = (position, name)
                position += 1
        if name is None:
            pgconn.send_query_params(sql, dumped, param_types=types, param_formats=formats)
        else:
            pgconn.send_query_prepared(name, dumped, param_formats=formats)
        position += 1
    return parses


def _settled(results: list[Any], parses: dict[Key, tuple[int, bytes]], encoding: str) -> list[Any]:
    """The statements' results without the Parses', once the first error is raised (a Parse's is its statement's)."""
    from psycopg import errors

    for result in results:
        if result.status == _FATAL_ERROR:
            raise errors.error_from_result(result, encoding=encoding)
    parsed = {position for position, _ in parses.values()}
    return [result for position, result in enumerate(results) if position not in parsed]


@dataclass
class _Prepared:
    """The statements prepared on one connection, named by their SQL and their parameters' types (as psycopg keys
    its own: a parameter's type is part of the statement PostgreSQL plans)."""

    names: dict[tuple[bytes, tuple[int, ...]], bytes] = field(default_factory=dict)
    made: int = 0  # names given so far, a Parse that failed included


PREPARED_PER_CONNECTION = 128  # past this, statements go unnamed: a bound for a caller that builds them as it goes
_prepared: weakref.WeakKeyDictionary[Any, _Prepared] = weakref.WeakKeyDictionary()
_prepared_lock = threading.Lock()


def _prepared_on(driver: Any) -> _Prepared | None:
    """What gm prepared on `driver`, or None where it must prepare nothing: where psycopg prepares statements of
    its own (`prepare_threshold` not None), for it deallocates every statement of the connection at a rollback."""
    if driver.prepare_threshold is not None:
        return None
    with _prepared_lock:
        found = _prepared.get(driver)
        if found is None:
            found = _prepared[driver] = _Prepared()
        return found


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
