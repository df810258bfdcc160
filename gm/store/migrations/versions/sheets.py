"""sheets: the characters' sheets a story changes (gm.world.sheet): the changes each round made (sheet_changes),
the sheets now with the changes' count and last hash (stories), each round's last change hash (rounds), and a
paused round's changes (paused_rounds).

Based on growth_indexes, the head when it was written (the brief named table_dice, which growth_indexes already
follows: basing it there would make two heads).

Revision ID: sheets
Revises: growth_indexes
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "sheets"
down_revision: str | Sequence[str] | None = "growth_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A story started before sheets has none: its world's sheet is read from its start values (gm.engine._sheets).
    with op.batch_alter_table("stories") as batch:
        batch.add_column(sa.Column("sheet", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("sheet_length", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("sheet_head", sa.String(), nullable=True))
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("sheet_hash", sa.String(), nullable=True))
    with op.batch_alter_table("paused_rounds") as batch:
        batch.add_column(sa.Column("sheet", sa.JSON(), nullable=True))
    op.create_table(
        "sheet_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("attempt_id", sa.String(), nullable=False),
        sa.Column("round_number", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("character", sa.String(), nullable=False),
        sa.Column("variable", sa.String(), nullable=False),
        sa.Column("action", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=True),
        sa.Column("item", sa.String(), nullable=True),
        sa.Column("condition", sa.String(), nullable=True),
        sa.Column("reason", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("roll_id", sa.Integer(), nullable=True),
        sa.Column("before", sa.JSON(), nullable=True),
        sa.Column("after", sa.JSON(), nullable=True),
        sa.Column("clamped", sa.Boolean(), nullable=False),
        sa.Column("prev_hash", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"]),
    )
    op.create_index("ix_sheet_changes_story_seq", "sheet_changes", ["story_id", "seq"], unique=True)
    op.create_index("ix_sheet_changes_story_round", "sheet_changes", ["story_id", "round_number"])


def downgrade() -> None:
    op.drop_index("ix_sheet_changes_story_round", table_name="sheet_changes")
    op.drop_index("ix_sheet_changes_story_seq", table_name="sheet_changes")
    op.drop_table("sheet_changes")
    with op.batch_alter_table("paused_rounds") as batch:
        batch.drop_column("sheet")
    with op.batch_alter_table("rounds") as batch:
        batch.drop_column("sheet_hash")
    with op.batch_alter_table("stories") as batch:
        batch.drop_column("sheet_head")
        batch.drop_column("sheet_length")
        batch.drop_column("sheet")
