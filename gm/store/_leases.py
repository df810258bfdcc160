"""The lease of each process that plays rounds: one row a process, whose heartbeat keeps all its rounds' leases.

A round takes its story's lease with one conditional UPDATE of the story row (gm.store._stories), which
names the round (`lease_holder`), a time of its own (`lease_expires`, the round's lease length from the
take) and the process playing it (`lease_process`). While the round runs, its lease holds as long as
either time is ahead: its own, or its process's row here (`expires`). The process's heartbeat renews that
one row (`PROCESS_BEAT`: one statement a beat, however many rounds the process plays), so a long round
needs no update of its story's row to keep its lease, and a process killed mid-round holds every story it
was playing at most a lease length after its last beat. Before, each round renewed its own story row
every beat: at 1,000 stories, 200 transactions a second through the database threads, each a new version
of a story row (docs/performance.md).

A process row is made at its first beat and left behind when its process ends: a row whose time ran out
keeps no story, and the next beat of a process with that id (there is none: ids are random) would take
it up again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, DateTime, String, Table, bindparam, exists, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import SQLModel

from gm.store._base import table_of
from gm.store.records import Story

LEASE_PROCESSES = Table(
    "lease_processes",
    SQLModel.metadata,
    Column("id", String, primary_key=True),
    Column("expires", DateTime(timezone=True), nullable=False),
)
STORIES = table_of(Story)

# The story's round lease still holds at :now through its process (a row of this table whose time is ahead).
PROCESS_ALIVE = exists().where(
    LEASE_PROCESSES.c.id == STORIES.c.lease_process, LEASE_PROCESSES.c.expires >= bindparam("now")
)
# Nobody holds the story's lease at :now: no round took it, or both the round's own time and its process's ran out.
LEASE_FREE = STORIES.c.lease_holder.is_(None) | ((STORIES.c.lease_expires < bindparam("now")) & ~PROCESS_ALIVE)
LEASE_HELD = ~LEASE_FREE


# A process's beat: its row's time moved to :until (the row made at its first).
def _beat(insert: Any) -> Any:
    made = insert(LEASE_PROCESSES).values(id=bindparam("process"), expires=bindparam("until"))
    return made.on_conflict_do_update(index_elements=[LEASE_PROCESSES.c.id], set_={"expires": made.excluded.expires})


PROCESS_BEAT = {"postgresql": _beat(postgresql_insert), "sqlite": _beat(sqlite_insert)}
# Which of the stories a beat keeps are still held by the rounds that took them (by primary key).
HOLDERS = select(STORIES.c.id, STORIES.c.lease_holder).where(STORIES.c.id.in_(bindparam("stories", expanding=True)))
