"""Schema migrations: `Store` upgrades its database to the newest revision whenever it opens one.

The revisions live in `versions/`, one file each, named by revision id. A database made before gm
had migrations (it has a `stories` table but no `alembic_version`) is stamped as the revision whose
schema it already has, `initial` or `story_token`, and then upgraded. Every process that opens a
database runs the upgrade; one at a time does so, holding a lock for the whole migration
transaction (an advisory lock on PostgreSQL, the write lock of `BEGIN IMMEDIATE` on SQLite), and the
others then find nothing left to do.

A change to a table in gm/store/records.py needs a revision here too, or tests/store/test_migrations.py fails.
To draft one, upgrade a scratch database and let Alembic compare it with the models, then read
and correct what it wrote (SQLite alters tables through batch operations)::

    from alembic import command
    from gm.store.migrations import config, upgrade
    from gm.store import make_engine
    engine = make_engine("sqlite:////tmp/scratch.db")
    upgrade(engine)
    with engine.begin() as connection:
        command.revision(config(connection), "what changed", autogenerate=True, rev_id="what_changed")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine, Inspector

if TYPE_CHECKING:
    from alembic.config import Config

FOLDER = Path(__file__).parent
INITIAL = "initial"  # the schema as it was before gm had migrations
HEAD = "lease_processes"  # the newest revision in versions/: a new one moves it (tests/store/test_migrations.py)
# Any fixed number would do: every process migrating one PostgreSQL database takes this lock in turn.
LOCK_KEY = 0x676D5F6D6967  # "gm_mig"


def config(connection: Connection) -> Config:
    """Alembic's configuration, made in code: no alembic.ini, and env.py runs on `connection` as it is."""
    from alembic.config import Config

    made = Config()
    made.set_main_option("script_location", str(FOLDER).replace("%", "%%"))
    made.set_main_option("file_template", "%%(rev)s")  # a new revision's file is named by its id
    made.attributes["connection"] = connection
    return made


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database up to `revision`, in one transaction, one process at a time."""
    if revision == "head" and _at_head(engine):
        return
    from alembic import command  # Alembic is imported only to migrate

    with engine.begin() as connection:
        _lock(connection)
        settings = config(connection)
        schema = inspect(connection)
        tables = schema.get_table_names()
        if "stories" in tables and "alembic_version" not in tables:
            command.stamp(settings, _made_before_migrations(schema))
        command.upgrade(settings, revision)


def _at_head(engine: Engine) -> bool:
    """Whether the database is at the newest revision already, as it is every time but the first it is opened.

    One read, without the migration lock, Alembic, its environment or its revision files, which every process
    opening a store (each `gm` command, each `gm serve`) otherwise imports and runs. Revisions only move forward,
    so a database found at the head stays there; any other answer takes the locked path."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return False
        current = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    return current == [HEAD]


def _made_before_migrations(schema: Inspector) -> str:
    """The revision that a database made by `create_all`, before gm had migrations, already has.

    That was the initial schema, except that one commit (the story API's) had added
    stories.token_hash to the models before the story_token revision existed.
    """
    columns = {column["name"] for column in schema.get_columns("stories")}
    return "story_token" if "token_hash" in columns else INITIAL


def _lock(connection: Connection) -> None:
    """Wait for, then hold until the transaction ends, the right to migrate this database."""
    dialect = connection.dialect.name
    if dialect == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
    # pysqlite begins no transaction before DDL: begin one that takes the write lock now (waiting out
    # the busy timeout), so that the whole migration commits or rolls back as one.
    elif dialect == "sqlite" and not getattr(connection.connection.driver_connection, "in_transaction", True):
        connection.exec_driver_sql("BEGIN IMMEDIATE")
