"""round_indexes: two indexes a round's opening reads by, so its cost does not grow with the story.

Opening an attempt marks a story's running attempts abandoned (attempts by story and status) and
reads the round's earlier rolls (rolls by story and round); with only the story's index, both read
every attempt or roll the story ever had (about 0.5 ms each at round 1,000 on the bench machine).

Revision ID: round_indexes
Revises: table_dice
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "round_indexes"
down_revision: str | Sequence[str] | None = "table_dice"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_attempts_story_status", "attempts", ["story_id", "status"])
    op.create_index("ix_rolls_story_round", "rolls", ["story_id", "round_number"])


def downgrade() -> None:
    op.drop_index("ix_rolls_story_round", table_name="rolls")
    op.drop_index("ix_attempts_story_status", table_name="attempts")
