"""lease_processes: a row per process whose heartbeat keeps all of its rounds' leases (issue 40, part 1).

A round's lease is kept by its process's row (gm.store._leases) instead of by renewing the story's
row every beat. Stories get `lease_process`, the process that took their lease; a lease taken
before this revision has none, and holds until its own time runs out, as it did.

Revision ID: lease_processes
Revises: live
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "lease_processes"
down_revision: str | Sequence[str] | None = "live"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "lease_processes",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("stories") as stories:
        stories.add_column(sa.Column("lease_process", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("stories") as stories:
        stories.drop_column("lease_process")
    op.drop_table("lease_processes")
