"""integrity: the hash chain over each story's rolls, and fair stories' seeds (gm.transcript.chain, gm.integrity.fair).

stories gain the chain's length and head, `legacy_rolls`, and a fair story's settings; rolls gain
their place in the chain (`seq`, unique per story), the hash of the roll before them and a fair roll's
seed epoch; `seeds` holds fair stories' seeds. Existing stories are chained from their first roll
onward, in the order their rolls were written, with the hashes gm.transcript.chain defines; their rolls count
as legacy rolls (made before a round's rolls were kept across attempts).

Revision ID: integrity
Revises: judge
Create Date: 2025-01-03
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from gm.transcript.chain import genesis, roll_hash
from gm.transcript.shapes import RollPublic

revision: str = "integrity"
down_revision: str | Sequence[str] | None = "judge"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STORY_COLUMNS = ("chain_length", "chain_head", "legacy_rolls", "fair", "player_seed", "seed_epoch")

_rolls = sa.table(
    "rolls",
    sa.column("id", sa.Integer),
    sa.column("story_id", sa.String),
    sa.column("attempt_id", sa.String),
    sa.column("round_number", sa.Integer),
    sa.column("kind", sa.String),
    sa.column("character", sa.String),
    sa.column("check_key", sa.String),
    sa.column("notation", sa.String),
    sa.column("reason", sa.String),
    sa.column("target", sa.Integer),
    sa.column("modifier", sa.Integer),
    sa.column("faces", sa.JSON),
    sa.column("total", sa.Integer),
    sa.column("successes", sa.Integer),
    sa.column("value", sa.Integer),
    sa.column("band", sa.String),
    sa.column("result", sa.String),
    sa.column("critical", sa.Boolean),
    sa.column("void", sa.Boolean),
    sa.column("line", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("prev_hash", sa.String),
    sa.column("seed_epoch", sa.Integer),
)
_stories = sa.table(
    "stories",
    sa.column("id", sa.String),
    sa.column("chain_length", sa.Integer),
    sa.column("chain_head", sa.String),
    sa.column("legacy_rolls", sa.Integer),
)


def upgrade() -> None:
    # Plain ALTER TABLE ... ADD COLUMN, on SQLite too (batch mode could copy `stories`, which the
    # other tables' foreign keys refer to, and SQLite would refuse to drop the old copy).
    op.add_column("stories", sa.Column("chain_length", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("stories", sa.Column("chain_head", sa.String(), nullable=True))
    op.add_column("stories", sa.Column("legacy_rolls", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("stories", sa.Column("fair", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.add_column("stories", sa.Column("player_seed", sa.String(), nullable=True))
    op.add_column("stories", sa.Column("seed_epoch", sa.Integer(), nullable=True))
    op.add_column("rolls", sa.Column("seq", sa.Integer(), nullable=True))
    op.add_column("rolls", sa.Column("prev_hash", sa.String(), nullable=True))
    op.add_column("rolls", sa.Column("seed_epoch", sa.Integer(), nullable=True))
    op.create_index("ix_rolls_story_seq", "rolls", ["story_id", "seq"], unique=True)
    op.create_table(
        "seeds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("story_id", sa.String(), nullable=False),
        sa.Column("epoch", sa.Integer(), nullable=False),
        sa.Column("seed", sa.String(), nullable=False),
        sa.Column("commitment", sa.String(), nullable=False),
        sa.Column("first_roll", sa.Integer(), nullable=False),
        sa.Column("last_roll", sa.Integer(), nullable=True),
        sa.Column("committed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revealed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("story_id", "epoch"),
        sa.ForeignKeyConstraint(["story_id"], ["stories.id"]),
    )
    op.create_index("ix_seeds_story_id", "seeds", ["story_id"])
    _chain_existing_rolls(op.get_bind())


def _chain_existing_rolls(connection: sa.Connection) -> None:
    """Chain every story's rolls, oldest first, as the store would have had it chained them when written."""
    rows = connection.execute(sa.select(_rolls).order_by(_rolls.c.story_id, _rolls.c.id)).mappings()
    story_id: str | None = None
    length, head = 0, ""
    for row in rows.all():
        if row["story_id"] != story_id:
            _close(connection, story_id, length, head)
            story_id, length, head = row["story_id"], 0, genesis(row["story_id"])
        length += 1
        stored = {**row, "seq": length, "prev_hash": head, "seed_epoch": None}
        connection.execute(
            sa.update(_rolls).where(_rolls.c.id == row["id"]).values(seq=length, prev_hash=head, seed_epoch=None)
        )
        head = roll_hash(RollPublic.from_stored(stored).model_dump(mode="json"))
    _close(connection, story_id, length, head)


def _close(connection: sa.Connection, story_id: str | None, length: int, head: str) -> None:
    if story_id is not None:
        connection.execute(
            sa.update(_stories)
            .where(_stories.c.id == story_id)
            .values(chain_length=length, chain_head=head, legacy_rolls=length)
        )


def downgrade() -> None:
    op.drop_index("ix_seeds_story_id", table_name="seeds")
    op.drop_table("seeds")
    op.drop_index("ix_rolls_story_seq", table_name="rolls")
    # In place, not in batch mode (which would copy `stories`, the table the others refer to).
    for column in ("seq", "prev_hash", "seed_epoch"):
        op.drop_column("rolls", column)
    for column in _STORY_COLUMNS:
        op.drop_column("stories", column)
