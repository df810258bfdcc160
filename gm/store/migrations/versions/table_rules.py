"""table_rules: rolls.edge, opponent, opponent_modifier, natural_text and stepped_from (issue 16's table rules).

Revision ID: table_rules
Revises: calendar
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_rules"
down_revision: str | Sequence[str] | None = "calendar"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = ("edge", "opponent", "opponent_modifier", "natural_text", "stepped_from")


def upgrade() -> None:
    # All nullable, so rolls written before keep their meaning (no edge, no opponent, no natural).
    with op.batch_alter_table("rolls") as batch:  # a plain ALTER TABLE ... ADD COLUMN, on SQLite too
        batch.add_column(sa.Column("edge", sa.String(), nullable=True))
        batch.add_column(sa.Column("opponent", sa.String(), nullable=True))
        batch.add_column(sa.Column("opponent_modifier", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("natural_text", sa.String(), nullable=True))
        batch.add_column(sa.Column("stepped_from", sa.String(), nullable=True))


def downgrade() -> None:
    for column in reversed(COLUMNS):
        op.drop_column("rolls", column)
