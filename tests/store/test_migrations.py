"""Schema migrations: a database made by an older gm opens in this one, and the models never drift
from the migrations. On SQLite, and on PostgreSQL when GM_TEST_POSTGRES_URL is set."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Column, MetaData, String, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import SQLModel

from gm.store import Store, Story, make_engine
from gm.store.migrations import FOLDER, HEAD, INITIAL, config, upgrade

COLUMNS_OF_JUDGE = [("rounds", "judgement"), ("model_calls", "structured")]  # added by the judge revision
COLUMNS_OF_CALENDAR = [("stories", "clock"), ("rounds", "clock"), ("memory", "clock")]  # added by the calendar revision
COLUMNS_OF_TABLE_DICE = [
    ("rolls", "typed"),
    ("rolls", "salt"),
    ("stories", "ended_at"),
]  # added by the table_dice revision, with the paused_rounds table
COLUMNS_OF_LEASE_PROCESSES = [("stories", "lease_process")]
COLUMNS_OF_SEATS = [
    ("stories", "messages"),
    ("stories", "messages_head"),
    ("rounds", "actions"),
    ("rounds", "whispers"),
]  # added by the seats revision, with the seats and table_messages tables

COLUMNS_OF_SHEETS = [
    ("stories", "sheet"),
    ("stories", "sheet_length"),
    ("stories", "sheet_head"),
    ("rounds", "sheet_hash"),
]  # added by the sheets revision, with the sheet_changes table (and paused_rounds.sheet)
INDEXES_OF_ROUND_INDEXES = ["ix_attempts_story_status", "ix_rolls_story_round"]  # added by the round_indexes revision
INDEXES_OF_GROWTH_INDEXES = ["ix_attempts_story_round"]  # added by the growth_indexes revision (which remakes two more)

# A story as the gm of the initial schema wrote it: no token_hash.
OLD_STORY = """
    INSERT INTO stories (id, title, world_data, dice_data, settings, created_at, rounds, summary, summary_through)
    VALUES ('old', 'Old', '{"title": "Old"}', NULL, '{"dice": "shown"}', '2025-01-02 03:04:05', 2, 'So far.', 1)
"""


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    made = make_engine(database_url)
    yield made
    made.dispose()


def revision_of(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def drift(engine: Engine, metadata: MetaData = SQLModel.metadata) -> list[Any]:
    """What Alembic's autogenerate would write to bring the database to `metadata`: nothing, if they agree."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return [change for change in compare_metadata(context, metadata) if not _is_alembic_version(change)]


def _is_alembic_version(change: Any) -> bool:
    return bool(change[0] == "remove_table" and change[1].name == "alembic_version")


def assert_old_story_reads(store: Store) -> None:
    story = store.story("old")
    assert (story.title, story.world_data, story.settings, story.rounds, story.summary) == (
        "Old",
        {"title": "Old"},
        {"dice": "shown"},
        2,
        "So far.",
    )
    assert story.token_hash is None
    assert story.clock is None  # made before calendars: its world has none


def test_the_newest_revision_is_the_head() -> None:
    """A new revision must move HEAD here; a branch (two heads) would fail too."""
    script = ScriptDirectory(str(FOLDER))
    assert script.get_heads() == [HEAD]
    assert [revision.revision for revision in script.walk_revisions()] == [
        HEAD,
        "live",
        "seats",
        "sheets",
        "growth_indexes",
        "round_indexes",
        "table_dice",
        "table_rules",
        "calendar",
        "integrity",
        "judge",
        "story_token",
        INITIAL,
    ]


def test_a_database_at_initial_opens_upgraded(database_url: str, engine: Engine) -> None:
    upgrade(engine, INITIAL)
    with engine.begin() as connection:
        connection.execute(text(OLD_STORY))
    store = Store(database_url)
    assert revision_of(store.engine) == HEAD
    assert_old_story_reads(store)
    newer = store.create_story(Story(title="New", world_data={}, settings={}, token_hash="ab" * 32))
    assert store.story(newer.id).token_hash == "ab" * 32
    store.engine.dispose()


def test_the_migrated_database_matches_the_models(engine: Engine) -> None:
    upgrade(engine)
    assert drift(engine) == []


def test_a_model_change_without_a_migration_is_seen(engine: Engine) -> None:
    """The comparison above is not blind: a column in a model and not in a migration shows up."""
    upgrade(engine)
    models = MetaData()
    for table in SQLModel.metadata.sorted_tables:
        table.to_metadata(models)
    models.tables["stories"].append_column(Column("mood", String, nullable=True))
    [change] = drift(engine, models)
    assert change[0] == "add_column" and change[2] == "stories" and change[3].name == "mood"


def drop_integrity(connection: Connection) -> None:
    """Take out what the integrity revision adds, leaving the tables as create_all made them before it."""
    connection.execute(text("DROP INDEX ix_rolls_story_seq"))
    connection.execute(text("DROP TABLE seeds"))
    for column in (
        "seq",
        "prev_hash",
        "seed_epoch",
        "edge",
        "opponent",
        "opponent_modifier",
        "natural_text",
        "stepped_from",
    ):
        connection.execute(text(f"ALTER TABLE rolls DROP COLUMN {column}"))
    for column in ("chain_length", "chain_head", "legacy_rolls", "fair", "player_seed", "seed_epoch"):
        connection.execute(text(f"ALTER TABLE stories DROP COLUMN {column}"))


@pytest.mark.parametrize("made_by", ["before the story API", "with the story API"])
def test_a_database_made_before_migrations_is_stamped_and_upgraded(
    database_url: str, engine: Engine, made_by: str
) -> None:
    """Before gm had migrations, `Store` made its tables with create_all: the initial schema, or that
    plus stories.token_hash once the story API came (one commit made that column with create_all)."""
    SQLModel.metadata.create_all(engine)
    with engine.begin() as connection:
        connection.execute(text("DROP TABLE table_messages"))
        connection.execute(text("DROP TABLE seats"))
        connection.execute(text("DROP TABLE paused_rounds"))
        connection.execute(text("DROP TABLE reveals"))
        connection.execute(text("DROP TABLE story_events"))  # added by the live revision
        connection.execute(text("DROP TABLE lease_processes"))  # added by the lease_processes revision
        connection.execute(text("DROP TABLE sheet_changes"))
        for index in INDEXES_OF_ROUND_INDEXES + INDEXES_OF_GROWTH_INDEXES:  # create_all makes today's indexes too
            connection.execute(text(f"DROP INDEX {index}"))
        added_since = COLUMNS_OF_JUDGE + COLUMNS_OF_CALENDAR + COLUMNS_OF_TABLE_DICE + COLUMNS_OF_SHEETS
        for table, column in added_since + COLUMNS_OF_SEATS + COLUMNS_OF_LEASE_PROCESSES:  # create_all makes today's
            connection.execute(text(f"ALTER TABLE {table} DROP COLUMN {column}"))
        drop_integrity(connection)  # create_all makes today's tables; no gm of those days had these
        if made_by == "before the story API":
            connection.execute(text("ALTER TABLE stories DROP COLUMN token_hash"))
        connection.execute(text(OLD_STORY))
    assert revision_of(engine) is None
    store = Store(database_url)
    assert revision_of(store.engine) == HEAD
    assert drift(store.engine) == []
    assert_old_story_reads(store)
    store.engine.dispose()


def test_the_story_token_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text(OLD_STORY))
        command.downgrade(config(connection), INITIAL)
    assert revision_of(engine) == INITIAL
    store = Store(database_url)
    assert_old_story_reads(store)
    store.engine.dispose()


def test_opening_a_database_twice(database_url: str) -> None:
    first = Store(database_url)
    story = first.create_story(Story(title="T", world_data={}, settings={}))
    second = Store(database_url)
    assert second.story(story.id).title == "T"
    assert revision_of(second.engine) == HEAD
    first.engine.dispose()
    second.engine.dispose()


def test_a_database_at_the_head_opens_without_alembic_and_an_older_one_with_it(
    database_url: str, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade(engine, "story_token")
    ran: list[str] = []
    with monkeypatch.context() as patched:
        patched.setattr(command, "upgrade", lambda settings, revision: ran.append(revision))
        Store(database_url).close()
    assert ran == ["head"]  # behind the head: Alembic upgrades it
    upgrade(engine)
    with monkeypatch.context() as patched:
        patched.setattr(command, "upgrade", lambda settings, revision: ran.append(revision))
        Store(database_url).close()
    assert ran == ["head"]  # at the head: one read, no lock, no Alembic


@pytest.mark.subprocess
def test_a_process_opening_a_database_at_the_head_imports_no_alembic(database_url: str) -> None:
    Store(database_url).close()
    code = f"import sys; from gm.store import Store; Store({database_url!r}).close(); print('alembic' in sys.modules)"
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (opened.returncode, opened.stdout) == (0, "False\n"), opened.stderr


@pytest.mark.subprocess
def test_processes_opening_a_fresh_database_at_once_all_succeed(database_url: str, tmp_path: Path) -> None:
    """Server processes starting together all migrate the same new database: one at a time."""
    processes = 4
    ready = tmp_path / "ready"
    ready.mkdir()
    script = textwrap.dedent(
        f"""
        import os, pathlib, time
        from gm.store import Store
        ready = pathlib.Path({str(ready)!r})
        (ready / str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(list(ready.iterdir())) < {processes} and time.monotonic() < deadline:
            time.sleep(0.001)
        store = Store({database_url!r})
        print(len(store.stories()))
        """
    )
    started = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    outcomes = [process.communicate(timeout=120) for process in started]
    for process, (out, err) in zip(started, outcomes):
        assert process.returncode == 0 and out.strip() == "0", err
    engine = make_engine(database_url)
    assert revision_of(engine) == HEAD
    assert drift(engine) == []
    engine.dispose()


def test_opening_a_store_leaves_logging_and_output_alone(database_url: str, capfd: pytest.CaptureFixture[str]) -> None:
    root, alembic = logging.getLogger(), logging.getLogger("alembic")
    before = (list(root.handlers), root.level, list(alembic.handlers), alembic.level, alembic.propagate)
    Store(database_url).engine.dispose()
    assert (list(root.handlers), root.level, list(alembic.handlers), alembic.level, alembic.propagate) == before
    assert capfd.readouterr() == ("", "")


@pytest.mark.slow
def test_the_calendar_revision_goes_down_and_up_again_keeping_the_clock_out_of_old_stories(
    database_url: str, engine: Engine
) -> None:
    """Down to integrity the clock columns go; up again, old stories read with no clock, new ones keep theirs."""
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text(OLD_STORY))
        command.downgrade(config(connection), "integrity")
    assert revision_of(engine) == "integrity"
    for table, _ in COLUMNS_OF_CALENDAR:
        assert "clock" not in {column["name"] for column in inspect(engine).get_columns(table)}
    store = Store(database_url)
    assert revision_of(store.engine) == HEAD
    assert_old_story_reads(store)
    later = 40 * 24 * 60 * 365 * 3000  # three thousand years of minutes: more than a 32-bit column holds
    newer = store.create_story(Story(title="New", world_data={}, settings={}, clock=later))
    assert store.story(newer.id).clock == later
    store.engine.dispose()


def test_the_table_rules_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    """Down to calendar the rolls lose the table rules' columns; up again, an old story still reads."""
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text(OLD_STORY))
        command.downgrade(config(connection), "calendar")
    assert revision_of(engine) == "calendar"
    columns = {column["name"] for column in inspect(engine).get_columns("rolls")}
    assert not columns & {"edge", "opponent", "opponent_modifier", "natural_text", "stepped_from"}
    store = Store(database_url)
    assert revision_of(store.engine) == HEAD
    assert drift(store.engine) == []
    assert_old_story_reads(store)
    store.engine.dispose()


def index_columns(engine: Engine, table: str) -> dict[str, list[str]]:
    return {index["name"]: index["column_names"] for index in inspect(engine).get_indexes(table)}


def down_to(engine: Engine, revision: str) -> None:
    """The newest schema with an old story in it, migrated down to `revision`."""
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text(OLD_STORY))
        command.downgrade(config(connection), revision)
    assert revision_of(engine) == revision


def up_again(database_url: str) -> Store:
    """A Store opened on the database: migrated to the head, its schema the models', the old story readable."""
    store = Store(database_url)
    assert revision_of(store.engine) == HEAD
    assert drift(store.engine) == []
    assert_old_story_reads(store)
    return store


def test_the_round_indexes_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    """Down to table_dice the two indexes a round's opening reads by are gone; up again they are back."""
    down_to(engine, "table_dice")
    assert "ix_attempts_story_status" not in index_columns(engine, "attempts")
    assert "ix_rolls_story_round" not in index_columns(engine, "rolls")
    store = up_again(database_url)
    assert "ix_attempts_story_status" in index_columns(store.engine, "attempts")
    assert "ix_rolls_story_round" in index_columns(store.engine, "rolls")
    store.engine.dispose()


def test_the_growth_indexes_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    """Down to round_indexes the indexes are the two-column ones again; up again each ends with its order."""
    down_to(engine, "round_indexes")
    assert index_columns(engine, "rolls")["ix_rolls_story_round"] == ["story_id", "round_number"]
    assert index_columns(engine, "rounds")["ix_rounds_unremembered"] == ["story_id", "memory_written"]
    assert "ix_attempts_story_round" not in index_columns(engine, "attempts")
    store = up_again(database_url)
    assert index_columns(store.engine, "rolls")["ix_rolls_story_round"] == ["story_id", "round_number", "seq"]
    assert index_columns(store.engine, "rounds")["ix_rounds_unremembered"] == ["story_id", "memory_written", "number"]
    assert index_columns(store.engine, "attempts")["ix_attempts_story_round"] == ["story_id", "round_number"]
    store.engine.dispose()


def test_the_sheets_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    """Down to growth_indexes the sheet_changes table and the sheet columns are gone; up again they are back."""
    down_to(engine, "growth_indexes")
    schema = inspect(engine)
    assert "sheet_changes" not in schema.get_table_names()
    assert "sheet" not in {column["name"] for column in schema.get_columns("stories")}
    assert "sheet_hash" not in {column["name"] for column in schema.get_columns("rounds")}
    store = up_again(database_url)
    schema = inspect(store.engine)
    assert "sheet_changes" in schema.get_table_names()
    assert {"sheet", "sheet_length", "sheet_head"} <= {column["name"] for column in schema.get_columns("stories")}
    assert store.story("old").sheet is None and store.story("old").sheet_length == 0


def test_the_live_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    """Down to seats there is no story_events table; up again it is there, and empty."""
    down_to(engine, "seats")
    assert "story_events" not in inspect(engine).get_table_names()
    store = up_again(database_url)
    assert "story_events" in inspect(store.engine).get_table_names()
    assert store.newest_event("no-such-story") == 0
    store.engine.dispose()


def test_the_seats_revision_goes_down_and_up_again(database_url: str, engine: Engine) -> None:
    """Down to sheets the seats, the table's messages and the new columns are gone; up again they are back."""
    down_to(engine, "sheets")
    tables = inspect(engine).get_table_names()
    assert "seats" not in tables and "table_messages" not in tables
    assert "actions" not in [column["name"] for column in inspect(engine).get_columns("rounds")]
    store = up_again(database_url)
    tables = inspect(store.engine).get_table_names()
    assert "seats" in tables and "table_messages" in tables
    assert {"messages", "messages_head"} <= {column["name"] for column in inspect(store.engine).get_columns("stories")}
    assert index_columns(store.engine, "seats")["ix_seats_token_hash"] == ["token_hash"]
    store.engine.dispose()
