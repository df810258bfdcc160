"""judge: rounds.judgement (the judge's verdicts on an accepted narration) and model_calls.structured.

Revision ID: judge
Revises: story_token
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "judge"
down_revision: str | Sequence[str] | None = "story_token"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("rounds") as batch:  # a plain ALTER TABLE ... ADD COLUMN, on SQLite too
        batch.add_column(sa.Column("judgement", sa.JSON(), nullable=True))
    with op.batch_alter_table("model_calls") as batch:
        batch.add_column(sa.Column("structured", sa.String(), nullable=True))


def downgrade() -> None:
    # Not in batch mode, which would copy the tables; SQLite 3.35+ and PostgreSQL drop a column in place.
    op.drop_column("model_calls", "structured")
    op.drop_column("rounds", "judgement")
