"""Alembic's environment for gm: `gm.store.migrations.upgrade` runs it on the store's own connection.

The connection comes in `config.attributes`, already inside the transaction that holds the
migration lock, so Alembic neither opens its own transaction nor re-reads a database URL. Nothing
here configures logging: Alembic's messages go wherever the application sends them.
"""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import gm.store.records  # noqa: F401  (the tables, for autogenerate to compare the database with)


def run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError(
            "gm's migrations run on a connection from gm.store.migrations.config(), not from alembic.ini"
        )
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=True,  # SQLite changes most columns by copying the table; autogenerate should write that
    )
    with context.begin_transaction():
        context.run_migrations()


# Alembic runs this file by its path; imported as a module of the package (as pytest's doctest
# collection does), it only defines.
if __name__ != "gm.store.migrations.env":
    run()
