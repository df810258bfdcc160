"""growth_indexes: the indexes a round reads by also give the order it reads in, so SQLite uses them.

round_indexes added rolls by (story, round), but a round's opening reads a round's rolls in chain
order (`ORDER BY seq`), and SQLite's planner, with no statistics, read them through the (story, seq)
index instead: every roll of the story, in order, to keep a round's few. So did the memory keeper's
read of the rounds still to remember (by number, through the (story, number) key), and a paused
round's read of its round's unfinished attempts (through the story's index). Each read grew with the
story: a rolled round cost about 2 ms more CPU at round 1,000 than at round 1 (bench/cpu_bench.py).
With the order's column last in each index, each read finds its rows and their order in the index.

Revision ID: growth_indexes
Revises: round_indexes
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "growth_indexes"
down_revision: str | Sequence[str] | None = "round_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_rolls_story_round", table_name="rolls")
    op.create_index("ix_rolls_story_round", "rolls", ["story_id", "round_number", "seq"])
    op.drop_index("ix_rounds_unremembered", table_name="rounds")
    op.create_index("ix_rounds_unremembered", "rounds", ["story_id", "memory_written", "number"])
    op.create_index("ix_attempts_story_round", "attempts", ["story_id", "round_number"])


def downgrade() -> None:
    op.drop_index("ix_attempts_story_round", table_name="attempts")
    op.drop_index("ix_rounds_unremembered", table_name="rounds")
    op.create_index("ix_rounds_unremembered", "rounds", ["story_id", "memory_written"])
    op.drop_index("ix_rolls_story_round", table_name="rolls")
    op.create_index("ix_rolls_story_round", "rolls", ["story_id", "round_number"])
