"""live: the story events the pages watching a story read live (story_events).

Revision ID: live
Revises: seats
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "live"
down_revision: str | Sequence[str] | None = "seats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "story_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("audience", sa.JSON(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
        sa.UniqueConstraint("story_id", "seq"),
    )


def downgrade() -> None:
    op.drop_table("story_events")
