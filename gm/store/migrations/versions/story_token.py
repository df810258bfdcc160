"""story token: stories.token_hash, the sha256 of a web story's secret token (None for local stories).

Revision ID: story_token
Revises: initial
Create Date: 2025-01-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "story_token"
down_revision: str | Sequence[str] | None = "initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("stories") as batch:  # a plain ALTER TABLE ... ADD COLUMN, on SQLite too
        batch.add_column(sa.Column("token_hash", sa.String(), nullable=True))


def downgrade() -> None:
    # Not in batch mode: that would copy `stories`, which the other tables' foreign keys refer to.
    # SQLite (3.35 and later) and PostgreSQL both drop a column in place.
    op.drop_column("stories", "token_hash")
