"""table_dice: rounds paused for dice rolled at the table (paused_rounds), rolls.typed for faces a player typed,
and secret rolls: the reveals of them (reveals) and the end of a story, which reveals them all (stories.ended_at).

Revision ID: table_dice
Revises: table_rules
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_dice"
down_revision: str | Sequence[str] | None = "table_rules"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every roll made before this revision was rolled by the engine.
    with op.batch_alter_table("rolls") as batch:  # a plain ALTER TABLE ... ADD COLUMN, on SQLite too
        batch.add_column(sa.Column("typed", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("salt", sa.String(), nullable=True))
    with op.batch_alter_table("stories") as batch:
        batch.add_column(sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "reveals",
        sa.Column("roll_id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("roll_id"),
        sa.ForeignKeyConstraint(["roll_id"], ["rolls.id"]),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
    )
    op.create_index("ix_reveals_story_id", "reveals", ["story_id"])
    op.create_table(
        "paused_rounds",
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("attempt_id", sa.String(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("player_text", sa.String(), nullable=False),
        sa.Column("regenerating", sa.Boolean(), nullable=False),
        sa.Column("judged", sa.Boolean(), nullable=False),
        sa.Column("messages", sa.JSON(), nullable=False),
        sa.Column("pending", sa.JSON(), nullable=False),
        sa.Column("rolls", sa.JSON(), nullable=False),
        sa.Column("told", sa.JSON(), nullable=False),
        sa.Column("earlier", sa.JSON(), nullable=False),
        sa.Column("refusals", sa.JSON(), nullable=False),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("clock", sa.BigInteger(), nullable=True),
        sa.Column("question", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("story_id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"]),
    )


def downgrade() -> None:
    op.drop_table("paused_rounds")
    op.drop_index("ix_reveals_story_id", table_name="reveals")
    op.drop_table("reveals")
    op.drop_column("stories", "ended_at")
    op.drop_column("rolls", "salt")
    op.drop_column("rolls", "typed")
