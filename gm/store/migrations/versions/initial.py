"""initial: the schema as SQLModel made it before gm had migrations.

A database made then is stamped with this revision instead of running it. Every table, column,
type, constraint and index here is as `SQLModel.metadata.create_all` made it, on SQLite and on
PostgreSQL alike: unnamed unique and foreign-key constraints (the database names them), `ix_`
indexes for the indexed columns, and VARCHAR without a length for every string.

Revision ID: initial
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "initial"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _moment(name: str, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "stories",
        sa.Column("title", sa.String(), nullable=False),
        sa.Column("world_data", sa.JSON(), nullable=False),
        sa.Column("dice_data", sa.JSON(), nullable=True),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        _moment("created_at"),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("summary", sa.String(), nullable=False),
        sa.Column("summary_through", sa.Integer(), nullable=False),
        sa.Column("lease_holder", sa.String(), nullable=True),
        _moment("lease_expires", nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "attempts",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("regenerating", sa.Boolean(), nullable=False),
        _moment("started_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
    )
    op.create_index("ix_attempts_story_id", "attempts", ["story_id"])
    op.create_table(
        "memory",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("summary", sa.String(), nullable=False),
        sa.Column("rolls", sa.JSON(), nullable=False),
        sa.Column("outcomes", sa.JSON(), nullable=False),
        _moment("created_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("story_id", "round_number"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
    )
    op.create_index("ix_memory_story_id", "memory", ["story_id"])
    op.create_table(
        "model_calls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("attempt_id", sa.String(), nullable=True),
        sa.Column("purpose", sa.String(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("estimated", sa.Boolean(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("http_attempts", sa.Integer(), nullable=False),
        sa.Column("refusals", sa.Integer(), nullable=False),
        sa.Column("finish_reason", sa.String(), nullable=True),
        _moment("created_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
    )
    op.create_index("ix_model_calls_story_id", "model_calls", ["story_id"])
    op.create_table(
        "rolls",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("attempt_id", sa.String(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("character", sa.String(), nullable=True),
        sa.Column("check_key", sa.String(), nullable=True),
        sa.Column("notation", sa.String(), nullable=False),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("target", sa.Integer(), nullable=True),
        sa.Column("modifier", sa.Integer(), nullable=False),
        sa.Column("faces", sa.JSON(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("successes", sa.Integer(), nullable=True),
        sa.Column("value", sa.Integer(), nullable=True),
        sa.Column("band", sa.String(), nullable=True),
        sa.Column("result", sa.String(), nullable=True),
        sa.Column("critical", sa.Boolean(), nullable=False),
        sa.Column("void", sa.Boolean(), nullable=False),
        sa.Column("line", sa.String(), nullable=False),
        _moment("created_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"]),
    )
    op.create_index("ix_rolls_attempt_id", "rolls", ["attempt_id"])
    op.create_index("ix_rolls_story_id", "rolls", ["story_id"])
    op.create_table(
        "rounds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.String(), nullable=False),
        sa.Column("player_text", sa.String(), nullable=False),
        sa.Column("narration", sa.String(), nullable=False),
        sa.Column("outcomes", sa.JSON(), nullable=False),
        sa.Column("rolls", sa.JSON(), nullable=False),
        sa.Column("refusals", sa.JSON(), nullable=False),
        sa.Column("memory_written", sa.Boolean(), nullable=False),
        _moment("created_at"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("story_id", "number"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"]),
    )
    op.create_index("ix_rounds_story_id", "rounds", ["story_id"])
    op.create_index("ix_rounds_unremembered", "rounds", ["story_id", "memory_written"])


def downgrade() -> None:
    for table in ("rounds", "rolls", "model_calls", "memory", "attempts", "stories"):
        op.drop_table(table)  # a table's indexes go with it
