"""A batch sent through libpq's pipeline on PostgreSQL (gm.store._pipeline): SQLAlchemy's placeholders rewritten as
PostgreSQL's, and what a batch leaves behind when a statement fails, a value cannot be written, or the server
goes away (the connection usable again, or replaced)."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, bindparam, insert, literal_column, select, text, update
from sqlalchemy.exc import DataError, DBAPIError, OperationalError, ProgrammingError

from gm.store import Store
from gm.store._base import table_of, values_of
from gm.store._batch import Batch
from gm.store._pipeline import numbered
from gm.store.records import Story

STORIES = table_of(Story)


def test_placeholders_become_postgresqls_a_name_used_twice_is_one_parameter() -> None:
    found = numbered("SELECT %(a)s, %(b_1)s WHERE x LIKE 'a%%' AND y = %(a)s", "utf-8")
    assert found.sql == b"SELECT $1, $2 WHERE x LIKE 'a%' AND y = $1"
    assert found.names == ("a", "b_1")
    assert numbered("SELECT 'é' || %(n)s", "latin-1").sql == "SELECT 'é' || $1".encode("latin-1")


def test_a_lone_percent_is_refused_with_where_it_stands() -> None:
    with pytest.raises(ValueError, match="a lone '%' at character 13"):
        numbered("SELECT 1 WH % 2", "utf-8")


@pytest.fixture
def postgres_store(store: Store) -> Store:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("libpq's pipeline: PostgreSQL only")
    return store


def titles(store: Store) -> list[str]:
    with store.reading() as connection:
        return list(connection.execute(select(STORIES.c.title).order_by(STORIES.c.title)).scalars())


def test_a_failing_statement_raises_psycopgs_error_and_the_connection_serves_the_next_transaction(
    postgres_store: Store,
) -> None:
    with postgres_store.transaction() as connection:
        used = connection.connection.driver_connection
        with pytest.raises(DataError, match="division by zero"):
            batch = Batch(connection)
            batch.add(insert(STORIES), values_of(Story(title="lost", world_data={}, settings={})))
            batch.add(select(literal_column("1") / (literal_column("0") * bindparam("n"))), {"n": 1})
            batch.add(insert(STORIES), values_of(Story(title="skipped", world_data={}, settings={})))
            batch.send(commit=True)
        connection.rollback()
    with postgres_store.transaction() as connection:
        assert connection.connection.driver_connection is used  # not closed: the pool handed it out again
        batch = Batch(connection)
        batch.add(insert(STORIES), values_of(Story(title="kept", world_data={}, settings={})))
        batch.send(commit=True)
    assert titles(postgres_store) == ["kept"]


def test_a_value_psycopg_cannot_write_is_refused_before_anything_is_sent(postgres_store: Store) -> None:
    with pytest.raises(ProgrammingError, match="cannot adapt"), postgres_store.transaction() as connection:
        batch = Batch(connection)
        batch.add(insert(STORIES), values_of(Story(title="first", world_data={}, settings={})))
        batch.add(text("SELECT :thing"), {"thing": object()})
        batch.send(commit=True)
    assert titles(postgres_store) == []
    with postgres_store.transaction() as connection:
        batch = Batch(connection)
        batch.add(insert(STORIES), values_of(Story(title="after", world_data={}, settings={})))
        batch.send()
    assert titles(postgres_store) == ["after"]


def test_a_statement_run_for_several_sets_counts_the_rows_of_all_as_connection_execute_does(
    postgres_store: Store,
) -> None:
    made = [Story(title=title, world_data={}, settings={}) for title in ("a", "b", "c")]
    renamed = update(STORIES).where(STORIES.c.id == bindparam("story")).values(title=bindparam("new"))
    with postgres_store.transaction() as connection:
        batch = Batch(connection)
        written = batch.add(insert(STORIES), [values_of(story) for story in made])
        batch.send()
        sets = [{"story": made[0].id, "new": "A"}, {"story": "none", "new": "-"}, {"story": made[2].id, "new": "C"}]
        renamed_sets = batch.add(renamed, sets)
        batch.send()
        executed = connection.execute(renamed, [{"story": made[1].id, "new": "B"}, {"story": "none", "new": "-"}])
    assert (written.rowcount, written.columns, written.rows) == (3, [], [])
    assert renamed_sets.rowcount == 2 and executed.rowcount == 1
    assert titles(postgres_store) == ["A", "B", "C"]


def the_next_transaction_writes_on_another_connection(store: Store, replaced: object) -> bool:
    """Whether the pool hands out another connection than `replaced`, on which a batch writes and commits."""
    with store.transaction() as connection:
        assert connection.connection.driver_connection is not replaced
        batch = Batch(connection)
        batch.add(insert(STORIES), values_of(Story(title="after", world_data={}, settings={})))
        batch.send(commit=True)
    return titles(store) == ["after"]


def test_a_server_that_goes_away_mid_batch_costs_that_connection_only(postgres_store: Store) -> None:
    with pytest.raises(DBAPIError) as raised, postgres_store.transaction() as connection:
        dropped = connection.connection.driver_connection
        assert dropped is not None
        with postgres_store.reading() as other:
            other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": dropped.info.backend_pid})
        batch = Batch(connection)
        batch.add(insert(STORIES), values_of(Story(title="lost", world_data={}, settings={})))
        batch.send(commit=True)
    assert isinstance(raised.value, OperationalError) and raised.value.connection_invalidated
    assert titles(postgres_store) == []
    assert the_next_transaction_writes_on_another_connection(postgres_store, dropped)


def test_a_batch_that_fails_while_its_results_are_read_closes_its_connection_for_the_pool_to_replace(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Results left unread in libpq's pipeline would be read as the next transaction's: that connection is never
    used again (here the failure is made, after the batch is written)."""
    import gm.store._pipeline

    exchange = gm.store._pipeline._exchange

    def failing(pgconn: object) -> object:
        while pgconn.flush():  # type: ignore[attr-defined]
            yield 3
        raise RuntimeError("interrupted")
        yield from exchange(pgconn)

    monkeypatch.setattr(gm.store._pipeline, "_exchange", failing)
    with pytest.raises(RuntimeError, match="interrupted"), postgres_store.transaction() as connection:
        used = connection.connection.driver_connection
        assert used is not None
        batch = Batch(connection)
        batch.add(insert(STORIES), values_of(Story(title="lost", world_data={}, settings={})))
        batch.send()  # (with its COMMIT the server would have committed it: the client failed, not the server)
    assert used.closed
    monkeypatch.setattr(gm.store._pipeline, "_exchange", exchange)
    assert titles(postgres_store) == []
    assert the_next_transaction_writes_on_another_connection(postgres_store, used)


def prepared_here(connection: Connection) -> list[str]:
    """The statements gm prepared on this connection's server session, as PostgreSQL lists them."""
    found = connection.exec_driver_sql("SELECT statement FROM pg_prepared_statements WHERE name LIKE '\\_gm\\_%%'")
    return sorted(found.scalars())


def test_a_statement_is_prepared_on_its_connection_once_and_runs_by_name_after(postgres_store: Store) -> None:
    titled = select(STORIES.c.title).where(STORIES.c.id == bindparam("story"))
    with postgres_store.transaction() as connection:
        batch = Batch(connection)
        story = Story(title="first", world_data={}, settings={})
        batch.add(insert(STORIES), values_of(story))
        batch.add(titled, {"story": story.id})
        batch.send()
        assert len(prepared_here(connection)) == 2
        for _ in range(3):
            read = batch.add(titled, {"story": story.id})
            batch.send()
            assert read.scalar() == "first"
        assert len(prepared_here(connection)) == 2


def test_a_statement_that_fails_to_parse_is_not_taken_for_prepared(postgres_store: Store) -> None:
    broken, fine = text("SELEC :n"), text("SELECT CAST(:n AS integer) + 1")
    for _ in range(2):  # the second time, were the first taken for prepared, PostgreSQL would not know its name
        with pytest.raises(ProgrammingError, match="syntax error"), postgres_store.transaction() as connection:
            batch = Batch(connection)
            batch.add(fine, {"n": 1})
            batch.add(broken, {"n": 1})
            batch.send()
    with postgres_store.transaction() as connection:
        batch = Batch(connection)
        read = batch.add(fine, {"n": 2})
        batch.send()
        assert read.scalar() == 3
        assert prepared_here(connection) == ["SELECT CAST($1 AS integer) + 1"]  # prepared in a failed transaction


def test_statements_gm_prepared_outlive_a_rollback_on_its_connection(postgres_store: Store) -> None:
    """psycopg deallocates every prepared statement at a rollback once it has prepared one of its own; gm's engines
    have it prepare none, so what gm prepared stays, and is found again by name."""
    story = postgres_store.create_story(Story(title="kept", world_data={}, settings={}))
    titled = select(STORIES.c.title).where(STORIES.c.id == bindparam("story"))
    with postgres_store.engine.connect() as connection:

        def read() -> str:
            with connection.begin():
                batch = Batch(connection)
                found = batch.add(titled, {"story": story.id})
                batch.send()
                return str(found.scalar())

        assert read() == "kept"
        with pytest.raises(ZeroDivisionError), connection.begin():
            batch = Batch(connection)
            batch.add(titled, {"story": story.id})
            batch.send()  # the batch opens the transaction, as a round's opening does
            for _ in range(6):  # past psycopg's default prepare_threshold (5)
                connection.execute(titled, {"story": story.id}).all()
            raise ZeroDivisionError
        assert read() == "kept"
        assert prepared_here(connection) == ["SELECT stories.title \nFROM stories \nWHERE stories.id = $1::VARCHAR"]


def test_where_psycopg_prepares_statements_itself_gm_prepares_none(postgres_store: Store) -> None:
    with postgres_store.transaction() as connection:
        driver = connection.connection.driver_connection
        assert driver is not None and driver.prepare_threshold is None  # as gm's engines make them
        driver.prepare_threshold = 5  # psycopg's default
        try:
            for _ in range(2):
                batch = Batch(connection)
                read = batch.add(text("SELECT CAST(:n AS integer) * 2"), {"n": 4})
                batch.send()
                assert read.scalar() == 8
            assert prepared_here(connection) == []
        finally:
            driver.prepare_threshold = None


def test_past_its_bound_a_connection_runs_new_statements_unnamed(
    postgres_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gm.store._pipeline

    monkeypatch.setattr(gm.store._pipeline, "PREPARED_PER_CONNECTION", 1)
    with postgres_store.transaction() as connection:
        batch = Batch(connection)
        sums = [batch.add(text(f"SELECT CAST(:n AS integer) + {plus}"), {"n": 1}) for plus in (1, 2, 3)]
        batch.send()
        assert [found.scalar() for found in sums] == [2, 3, 4]
        assert prepared_here(connection) == ["SELECT CAST($1 AS integer) + 1"]
