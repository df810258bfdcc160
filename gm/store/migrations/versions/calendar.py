"""calendar: the story's time on its world's calendar (stories.clock), and each round's end time (rounds.clock,
copied to memory.clock); minutes since the story began, None for a story whose world has no calendar.

Revision ID: calendar
Revises: integrity
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "calendar"
down_revision: str | Sequence[str] | None = "integrity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("stories", "rounds", "memory")


def upgrade() -> None:
    # Stories made before calendars keep None: their worlds could not have one.
    for table in _TABLES:
        with op.batch_alter_table(table) as batch:  # a plain ALTER TABLE ... ADD COLUMN, on SQLite too
            batch.add_column(sa.Column("clock", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    # Not in batch mode, which would copy the tables; SQLite 3.35+ and PostgreSQL drop a column in place.
    for table in reversed(_TABLES):
        op.drop_column(table, "clock")
