"""Several statements of one transaction sent together: on PostgreSQL in one round trip, on SQLite one by one.

A round's transactions are a few statements each, most of which need nothing from the one before. On
PostgreSQL each statement sent alone is a round trip to the server, and in `gm serve` each round trip
lets the GIL go and waits to take it back behind the event loop and the other database threads: under
1,000 players (bench/serve_bench.py) a PostgreSQL worker spent some 450 µs of CPU a round trip, and a
round made 19 of them. A `Batch` queues statements (`add`) and sends what is queued at once (`send`):
on PostgreSQL through libpq's pipeline mode (gm.store._pipeline), every queued statement (and the
transaction's BEGIN) in one round trip; on SQLite, where a statement is a call into the library, each
runs as it is added (as on PostgreSQL where the driver has no pipeline mode: `_can_pipeline`).
Either way the statements run in the order added, in the caller's transaction, and each one's
result (`Sent`) is read once the batch is sent.

The statements are the store's SQLAlchemy Core statements, compiled once for the connection's dialect
and run on the driver's own connection with SQLAlchemy's bind processing (JSON, booleans), so a row
read here is the row `Connection.execute` reads, and a value written the value it writes
(`tests/store/test_batch.py` holds both). On SQLite too (`_run_direct`): SQLAlchemy's execution around
a statement cost several times the statement itself. Statements with an expanding IN
(`bindparam(..., expanding=True)`) are not batched: their SQL depends on their values.

On PostgreSQL a transaction a batch opens for work handed over with `durable=False` (`Store.off_loop`:
a round's opening, the memory keeper's notes) commits with `synchronous_commit` off, asked for in the
same round trip: its commit does not wait for the server's log to reach the disk, which the next
synced commit (the round's roll, or the round itself) brings about anyway, the log being written in
order (docs/durability.md).

An error of a queued statement is raised by `send` (on SQLite by `add`), as `Connection.execute` raises
it (SQLAlchemy's wrapped DBAPI error, an `IntegrityError` say); the statements queued after it did not
run, and the caller's transaction rolls back as it leaves its block.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Connection, CursorResult, Dialect, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import Delete, Executable, Insert, Select, TextualSelect, Update

from gm._lru import LRU
from gm.store import _pipeline as store_pipeline
from gm.store._workers import DURABLE

Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]]
IDLE = 0  # psycopg.pq.TransactionStatus.IDLE (psycopg is not imported where only SQLite is used)


@dataclass
class Sent:
    """One statement's result, read once its batch is sent: the rows it returned and the rows it changed.

    `done` says the result is in: at once where statements run as they are added (SQLite), which a caller
    may use to leave out statements it then knows it does not need (`RoundTables.accept_round`)."""

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = -1
    done: bool = False

    def first(self) -> tuple[Any, ...] | None:
        self._check()
        return self.rows[0] if self.rows else None

    def scalar(self) -> Any:
        found = self.first()
        return None if found is None else found[0]

    def mappings(self) -> Iterator[dict[str, Any]]:
        self._check()
        return (dict(zip(self.columns, row, strict=True)) for row in self.rows)

    def _check(self) -> None:
        if not self.done:
            raise RuntimeError("a batched statement's result was read before its batch was sent")

    def take(self, result: CursorResult[Any]) -> None:
        """Keep what SQLAlchemy's result holds (where statements run as they are added)."""
        if result.returns_rows:
            self.columns = list(result.keys())
            self.rows = [tuple(row) for row in result]
        self.rowcount = result.rowcount
        self.done = True


class Batch:
    """Statements of one transaction on `connection`, sent together on PostgreSQL (see the module's docstring)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.pipelined = connection.dialect.name == "postgresql" and _can_pipeline(connection)
        self.direct = connection.dialect.name == "sqlite"  # see `_run_direct`
        self._queued: list[tuple[Executable, Parameters, Sent]] = []

    def add(self, statement: Executable, parameters: Parameters) -> Sent:
        """Queue a statement (a list of parameter sets runs it once per set); its result is read after `send`."""
        sent = Sent()
        if self.pipelined:
            self._queued.append((statement, parameters, sent))
        elif self.direct:
            _run_direct(self.connection, statement, parameters, sent)
        else:
            sent.take(self.connection.execute(statement, parameters))
        return sent

    def send(self, *, commit: bool = False) -> None:
        """Run what is queued, in order, in one round trip (PostgreSQL); nothing to do where statements ran as added.

        With `commit`, the transaction is committed in the same round trip on PostgreSQL (the caller's block
        then has nothing left to commit): only when nothing after it may still refuse the transaction. On
        SQLite the block's end commits, as ever."""
        queued, self._queued = self._queued, []
        if not queued:
            return
        driver = self.connection.connection.driver_connection
        assert driver is not None
        statements = [_prepared(self.connection, statement, parameters) for statement, parameters, _ in queued]
        opening = [begin] if (begin := _open_here(self.connection, driver)) else []
        if opening and not DURABLE.get():  # work a power cut may lose with no harm (`Store.off_loop(durable=False)`)
            opening.append(b"SET LOCAL synchronous_commit TO OFF")
        dbapi_error = self.connection.dialect.loaded_dbapi.Error
        info = self.connection.connection.info  # lives as long as the driver's connection (SQLAlchemy's pool)
        if (transformer := info.get(_TRANSFORMER)) is None:
            transformer = info[_TRANSFORMER] = store_pipeline.transformer_for(driver)
        try:
            outcomes = store_pipeline.send(driver, statements, opening=opening, commit=commit, transformer=transformer)
        except dbapi_error as error:
            gone = bool(driver.closed or self.connection.dialect.is_disconnect(error, driver, None))
            if gone:  # the pool replaces the connection; the caller's block rolls back the rest
                self.connection.invalidate(error)
            raise DBAPIError.instance(None, None, error, dbapi_error, connection_invalidated=gone) from error
        except BaseException:
            if driver.closed:  # closed with its pipeline half-read (gm.store._pipeline): the pool replaces it
                self.connection.invalidate()
            raise
        for outcome, (_, _, sent) in zip(outcomes, queued, strict=True):
            if outcome.columns is not None:
                sent.columns, sent.rows = outcome.columns, outcome.rows
            sent.rowcount = outcome.rowcount
            sent.done = True


def _can_pipeline(connection: Connection) -> bool:
    """Whether the connection's driver has a pipeline mode: psycopg 3 over libpq 14 or later (psycopg's binary
    package brings its own). Without one, a batch runs its statements one by one, as on SQLite."""
    if connection.dialect.driver != "psycopg":
        return False
    import psycopg  # here, not at the top: where only SQLite is used psycopg is never imported

    return bool(psycopg.Pipeline.is_supported())


_OPENED_HERE = "gm.store._batch: BEGIN sent by a batch"  # marks a pooled connection whose transactions a batch opened
_TRANSFORMER = "gm.store._batch: psycopg's adapters"  # a pooled connection's (gm.store._pipeline's `transformer_for`)


def _open_here(connection: Connection, driver: Any) -> bytes | None:
    """The BEGIN a batch sends itself, in its first round trip, when the transaction is not open yet (else None).

    psycopg opens a transaction by sending BEGIN as a round trip of its own, before the first statement,
    pipeline or not. So a batch that starts a transaction sends it instead, queued before the statements:
    the connection is switched to autocommit (psycopg then sends no BEGIN of its own) and the BEGIN is
    the batch's first statement. The transaction is the same: psycopg's commit and rollback (the block's
    end) send COMMIT or ROLLBACK to a transaction the server says is open, autocommit or not, and the
    connection is switched back as it returns to the pool (`reset_batched_connections`). A connection
    in autocommit of its own (`Tables.reading` on PostgreSQL) gets no BEGIN: its statements commit each; one
    a batch switched, held by its caller for another transaction, gets one again.
    """
    if driver.info.transaction_status != IDLE:
        return None
    if driver.autocommit and not connection.connection.info.get(_OPENED_HERE):
        return None
    driver.autocommit = True
    connection.connection.info[_OPENED_HERE] = True
    parts = [b"BEGIN"]  # as psycopg would have sent it (`Connection._get_tx_start_command`)
    if driver.isolation_level is not None:
        parts += [b"ISOLATION LEVEL", driver.isolation_level.name.replace("_", " ").encode()]
    if driver.read_only is not None:
        parts.append(b"READ ONLY" if driver.read_only else b"READ WRITE")
    if driver.deferrable is not None:
        parts.append(b"DEFERRABLE" if driver.deferrable else b"NOT DEFERRABLE")
    return b" ".join(parts)


def reset_batched_connections(engine: Engine) -> None:
    """Switch a PostgreSQL connection a batch put in autocommit (`_open_here`) back as it returns to the pool.

    By then the pool has rolled back whatever was left open, so the connection is idle and may be
    switched; one that is not (broken meanwhile) is closed, and the pool replaces it at its next checkout."""

    @event.listens_for(engine, "checkin")
    def _checkin(dbapi_connection: Any, record: Any) -> None:
        if dbapi_connection is None or not record.info.pop(_OPENED_HERE, False):
            return
        try:
            dbapi_connection.autocommit = False
        except Exception:  # not idle: never handed out again in autocommit
            dbapi_connection.close()


# A statement compiled for each set of keys it was given. The store's statements are built once, at import, so
# these are a few dozen; the cap only bounds a caller that builds statements as it goes.
COMPILED_STATEMENTS = 256


@dataclass(frozen=True)
class _Compiled:
    """A statement compiled for one dialect and one set of keys, with the bind processor of each of its parameters
    (as SQLAlchemy's execution applies them: a JSON column's value to JSON text, say)."""

    compiled: SQLCompiler
    processors: Mapping[str, Any]


# Keyed by the dialect object, not its name: its bind and result processors follow its engine's settings (a JSON
# column's serializer and deserializer, say), which two engines of one database may set differently. Each entry
# keeps the statement and the dialect it was made for, so an id reused by a new object is never mistaken for them.
_compiled: LRU[tuple[int, int, tuple[str, ...]], tuple[Executable, Dialect, _Compiled]] = LRU(COMPILED_STATEMENTS)


def _compile(connection: Connection, statement: Executable, keys: tuple[str, ...]) -> _Compiled:
    """The statement compiled for the connection's dialect and these parameter keys (an INSERT's columns), once."""
    dialect = connection.dialect
    key = (id(dialect), id(statement), keys)
    found = _compiled.get(key)
    if found is None or found[0] is not statement or found[1] is not dialect:
        compiled: SQLCompiler = statement.compile(dialect=dialect, column_keys=list(keys))  # type: ignore[attr-defined]
        processors = {
            name: process
            for name, bind in compiled.binds.items()
            if (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
        }
        found = (statement, dialect, _Compiled(compiled, processors))
        _compiled.put(key, found)
    return found[2]


def _prepared(
    connection: Connection, statement: Executable, parameters: Parameters
) -> tuple[str, list[MutableMapping[str, Any]]]:
    """The statement's SQL for the connection's dialect (compiled once for each set of keys an INSERT is given)
    and its parameters as the driver takes them: named as compiled, with SQLAlchemy's bind processors applied."""
    sets = [parameters] if isinstance(parameters, Mapping) else list(parameters)
    found = _compile(connection, statement, tuple(sorted(sets[0])))
    rows = []
    for values in sets:
        row = found.compiled.construct_params(values)
        for name, process in found.processors.items():
            if name in row:  # None too, as in SQLAlchemy's execution: a JSON column's None is written as JSON's null
                row[name] = process(row[name])
        rows.append(row)
    return found.compiled.string, rows


@dataclass(frozen=True)
class _Direct:
    """How a statement runs on the sqlite3 driver itself: its SQL, its positional parameters' names and bind
    processors, and the processors of the columns it returns (None: it needs SQLAlchemy's own execution)."""

    sql: str
    compiled: SQLCompiler
    binds: tuple[tuple[str, Any], ...]  # each positional parameter's name and bind processor (or None)
    results: tuple[tuple[int, Any], ...]  # the returned columns that have a result processor: position, processor


_direct: LRU[tuple[int, int, tuple[str, ...]], tuple[Executable, Dialect, _Direct | None]] = LRU(COMPILED_STATEMENTS)


def _direct_plan(connection: Connection, statement: Executable, keys: tuple[str, ...]) -> _Direct | None:
    """The statement compiled once for SQLite and the given keys, ready for the driver; None where SQLAlchemy's
    execution does more than bind and run it: values it computes (Python-side defaults), expanding or literal
    parameters, a schema map, or rows it matches to columns by name (text, and anything but a plain SELECT,
    INSERT, UPDATE or DELETE)."""
    dialect = connection.dialect
    key = (id(dialect), id(statement), keys)  # by the dialect object, as `_compiled` is
    found = _direct.get(key)
    if found is not None and found[0] is statement and found[1] is dialect:
        return found[2]
    returned = _returned_columns(statement)
    if returned is None:
        _direct.put(key, (statement, dialect, None))
        return None
    compiled = _compile(connection, statement, keys)
    plan: _Direct | None = None
    plain = not (
        compiled.compiled.insert_prefetch
        or compiled.compiled.update_prefetch
        or compiled.compiled.literal_execute_params
        or compiled.compiled.post_compile_params
        or compiled.compiled.schema_translate_map
    )
    if plain and compiled.compiled.positional and compiled.compiled.positiontup is not None:
        plan = _Direct(
            sql=compiled.compiled.string,
            compiled=compiled.compiled,
            binds=tuple((name, compiled.processors.get(name)) for name in compiled.compiled.positiontup),
            results=tuple(
                (position, process)
                for position, column in enumerate(returned)
                if (process := column.type.dialect_impl(dialect).result_processor(dialect, None)) is not None
            ),
        )
    _direct.put(key, (statement, dialect, plan))
    return plan


def _returned_columns(statement: Executable) -> Sequence[Any] | None:
    """The columns a statement returns, in order (none for an INSERT, UPDATE or DELETE without RETURNING); None
    for a statement whose rows SQLAlchemy matches to its columns by name rather than by position (text)."""
    if isinstance(statement, TextualSelect):
        return None
    if isinstance(statement, Select):
        return list(statement.selected_columns)
    if isinstance(statement, Insert | Update | Delete):
        return list(statement.exported_columns)
    return None


def _run_direct(connection: Connection, statement: Executable, parameters: Parameters, sent: Sent) -> None:
    """Run a statement on SQLite's driver connection, in the caller's transaction, as `Connection.execute` would.

    Why: on SQLite a statement is a call into the library, a few microseconds, and SQLAlchemy's execution
    around it (an execution context, its result and row objects, the events) cost three to four times as
    much CPU on the database thread (a py-spy profile of bench/cpu_bench.py's rounds). Here the statement is
    compiled once, its values bound with SQLAlchemy's own bind processors, and its rows read with its result
    processors, so what is written and read is what `Connection.execute` writes and reads
    (tests/store/test_batch.py holds that); an error is SQLAlchemy's wrapped DBAPI error, as it raises it."""
    sets = [parameters] if isinstance(parameters, Mapping) else list(parameters)
    plan = _direct_plan(connection, statement, tuple(sorted(sets[0])))
    if plan is None:
        sent.take(connection.execute(statement, parameters))
        return
    rows = []
    for values in sets:
        bound = plan.compiled.construct_params(values, escape_names=False)
        # Every value goes through its processor, None too, as in SQLAlchemy's execution (a JSON column's None
        # is written as JSON's null, say).
        rows.append(tuple(bound[name] if process is None else process(bound[name]) for name, process in plan.binds))
    driver = connection.connection.driver_connection
    assert driver is not None
    cursor = driver.cursor()
    try:
        if isinstance(parameters, Mapping):
            cursor.execute(plan.sql, rows[0])
        else:
            cursor.executemany(plan.sql, rows)
        if cursor.description is not None:
            sent.columns = [column[0] for column in cursor.description]
            sent.rows = cursor.fetchall()
            if plan.results:
                sent.rows = [_processed(row, plan.results) for row in sent.rows]
        sent.rowcount = cursor.rowcount
    except connection.dialect.loaded_dbapi.Error as error:
        dbapi_error = connection.dialect.loaded_dbapi.Error
        raise DBAPIError.instance(
            plan.sql, rows, error, dbapi_error, hide_parameters=True, dialect=connection.dialect
        ) from error
    finally:
        cursor.close()
    sent.done = True


def _processed(row: tuple[Any, ...], results: tuple[tuple[int, Any], ...]) -> tuple[Any, ...]:
    values = list(row)
    for position, process in results:
        values[position] = process(values[position])
    return tuple(values)
