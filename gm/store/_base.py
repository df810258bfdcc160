"""What every part of the store shares: the engine, a session, a Core transaction, and the store's errors.

`gm.store.Store` is made of the parts in gm/store/_stories.py (stories, the round lease),
gm/store/_rolls.py (attempts, rolls and their chain, seeds) and gm/store/_rounds.py (an attempt's
opening and accepted round in one transaction each, rounds, memory, model calls). The round's own
path uses SQLAlchemy Core on one connection per transaction: the ORM's unit of work, identity map and
a session per read cost more CPU than the statements themselves.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property
from typing import Any, TypeVar, cast

from sqlalchemy import Table, inspect
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import ClassManager, configure_mappers
from sqlmodel import Session, SQLModel

import gm.store.records  # noqa: F401  (every table is mapped before the mappers are configured below)
from gm.store._commit_groups import current_group

Row = TypeVar("Row", bound=SQLModel)

LEASE_LOST = (
    "the round outlived its hold on the story, which another round may have taken meanwhile, so it was not saved"
    " (its rolls are kept); try again"
)
ABANDONED = "the server playing this attempt stopped before it ended, so the next round marked it abandoned"
SHORT_ID = 6  # the fewest characters of a story's id that may stand for it
ID_PREFIX = re.compile(r"^[0-9a-f]+$")


class Tables:
    """The engine every part of the store works on, and the two ways to work on it."""

    engine: Engine

    # On SQLite's database thread each of the three joins the group of work being committed together
    # (gm.store._commit_groups): its writes are the same, and durable by the time the work's caller hears of them.

    @contextmanager
    def session(self) -> Iterator[Session]:
        """An ORM session, for the store's less frequent work (and for tests that look inside)."""
        group = current_group()
        if group is not None and group.serves(self.engine):
            with group.session(self.engine) as session:
                yield session
            return
        with Session(self.engine, expire_on_commit=False) as session:
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One Core transaction on one connection: committed at the end of the block, rolled back on an error."""
        group = current_group()
        if group is not None and group.serves(self.engine):
            with group.transaction(self.engine) as connection:
                yield connection
            return
        with self.engine.begin() as connection:
            yield connection

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """One connection for reads only: nothing to commit (the pool rolls it back as it takes it back).

        On a database server its statements run outside any transaction (`reader_of`)."""
        group = current_group()
        if group is not None and group.serves(self.engine):
            with group.reading(self.engine) as connection:
                yield connection
            return
        with self._reader.connect() as connection:
            yield connection

    @cached_property
    def _reader(self) -> Engine:
        return reader_of(self.engine)


def reader_of(engine: Engine) -> Engine:
    """The engine `Tables.reading` reads through: on PostgreSQL, the same pool with each statement committing
    on its own (AUTOCOMMIT); on SQLite, the engine itself.

    Why: a read-only transaction on PostgreSQL is two round trips more than its statements (BEGIN, and
    the ROLLBACK of the connection's return to the pool), each a wait for the server and for the GIL
    in a loaded `gm serve`. It buys nothing: at PostgreSQL's READ COMMITTED, the level gm uses, every
    statement sees the database as of its own start, in a transaction or not. SQLite's reads keep
    their transaction, whose snapshot does hold across statements. The pool sets a connection back to
    transactions as it takes it back, without a round trip.
    """
    if engine.dialect.name == "sqlite":
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def row_of(model: type[Row], mapping: Mapping[Any, Any]) -> Row:
    """A table row read with Core, as the model the rest of gm reads.

    Built as the ORM builds the rows it loads, without running `__init__` (the values are the
    database's own, every column of the row): a fifth of the cost of `gm.store.records.Built`'s.
    """
    manager = _managers.get(model)
    if manager is None:
        manager = _managers[model] = inspect(model).class_manager
    record: Row = manager.new_instance()
    record.__dict__.update(mapping)
    return record


# Each table model's ClassManager (`Mapper.class_manager`: what gives a mapped object its ORM state), looked up once.
_managers: dict[type, ClassManager[Any]] = {}


def values_of(record: SQLModel, *leave_out: str) -> dict[str, Any]:
    """A record's columns as values for a Core INSERT; an unset primary key is left to the database."""
    found = record.__dict__  # read as the ORM stores it: going through each attribute's descriptor cost twice as much
    values = {
        name: found[name] if name in found else getattr(record, name)
        for name in type(record).model_fields
        if name not in leave_out
    }
    if values.get("id", 0) is None:
        del values["id"]
    return values


configure_mappers()  # `row_of` builds rows without a session, which a mapper must be configured for


def table_of(model: type[SQLModel]) -> Table:
    """The table a record class is written to."""
    return cast(Table, model.__table__)  # type: ignore[attr-defined]
