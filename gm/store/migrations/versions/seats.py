"""seats: a shared table. Seats (one player character each, with its own token's hash), the chained messages
seats send (table_messages, with the chain's length and head on the story), and a round's actions and whispers.

Revision ID: seats
Revises: growth_indexes (the branch said table_dice; the chain's head is growth_indexes)
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "seats"
down_revision: str | Sequence[str] | None = "sheets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("stories") as batch:  # a plain ALTER TABLE ... ADD COLUMN, on SQLite too
        batch.add_column(sa.Column("messages", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("messages_head", sa.String(), nullable=True))
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("actions", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("whispers", sa.JSON(), nullable=True))
    op.create_table(
        "seats",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("character", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("dice", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
    )
    op.create_index("ix_seats_story_id", "seats", ["story_id"])
    op.create_index("ix_seats_token_hash", "seats", ["token_hash"], unique=True)
    op.create_table(
        "table_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("seat_id", sa.String(), nullable=True),
        sa.Column("character", sa.String(), nullable=False),
        sa.Column("text", sa.String(), nullable=False),
        sa.Column("gathered", sa.Boolean(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=True),
        sa.Column("dropped", sa.Boolean(), nullable=False),
        sa.Column("prev_hash", sa.String(), nullable=False),
        sa.Column("hash", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
        sa.ForeignKeyConstraint(["seat_id"], ["seats.id"]),
        sa.UniqueConstraint("story_id", "seq"),
    )
    op.create_index("ix_table_messages_story_id", "table_messages", ["story_id"])


def downgrade() -> None:
    op.drop_index("ix_table_messages_story_id", table_name="table_messages")
    op.drop_table("table_messages")
    op.drop_index("ix_seats_token_hash", table_name="seats")
    op.drop_index("ix_seats_story_id", table_name="seats")
    op.drop_table("seats")
    # Not in batch mode: that would copy the tables other tables' foreign keys refer to (as story_token's).
    op.drop_column("rounds", "whispers")
    op.drop_column("rounds", "actions")
    op.drop_column("stories", "messages_head")
    op.drop_column("stories", "messages")
