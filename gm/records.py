"""The database's tables: stories, attempts, rolls, rounds, memory and model calls (sqlmodel).

Named in families as the rest of the code reads them: `StoryBase` holds what a story is made from,
`Story` is the table. `gm.store` is the one place that reads and writes them.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, Column, DateTime, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

if TYPE_CHECKING:
    from gm.model import Completion


def _now() -> datetime:
    return datetime.now(UTC)


def _json(nullable: bool = False) -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=nullable))


def _moment() -> Any:
    return Field(default_factory=_now, sa_column=Column(DateTime(timezone=True), nullable=False))


class StoryBase(SQLModel):
    """What a story is made from: its title and the world's definitions, copied in at the start."""

    title: str
    world_data: dict[str, Any] = _json()
    dice_data: dict[str, Any] | None = _json(nullable=True)
    settings: dict[str, Any] = _json()


class Story(StoryBase, table=True):
    """A story: the copied world, the running summary of its older rounds, and the round lease."""

    __tablename__ = "stories"
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True)
    created_at: datetime = _moment()
    rounds: int = 0  # accepted rounds so far
    summary: str = ""  # the memory keeper's running summary of folded rounds
    summary_through: int = 0  # the last round folded into `summary`
    lease_holder: str | None = None
    lease_expires: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))
    token_hash: str | None = None  # sha256 of the story's secret token, for the web API; None for local stories


class Attempt(SQLModel, table=True):
    """One try at playing a round; `status` is running, accepted or failed."""

    __tablename__ = "attempts"
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    round_number: int
    status: str = "running"
    error: str | None = None
    regenerating: bool = False
    started_at: datetime = _moment()


class RollRecord(SQLModel, table=True):
    """One roll, written when rolled and never changed: the number lives here and only here."""

    __tablename__ = "rolls"
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    attempt_id: str = Field(foreign_key="attempts.id", index=True)
    round_number: int
    kind: str  # check | dice | player
    character: str | None = None
    check_key: str | None = None
    notation: str
    reason: str = ""
    target: int | None = None
    modifier: int = 0
    faces: list[list[int]] = _json()
    total: int
    successes: int | None = None
    value: int | None = None  # what the bands read
    band: str | None = None
    result: str | None = None
    critical: bool = False
    void: bool = False
    line: str = ""  # the itemised roll, e.g. "1d20 (14) = 14"
    created_at: datetime = _moment()


class RoundRecord(SQLModel, table=True):
    """An accepted round: the player's text, the narration, outcomes, refusals seen, rolls copied in."""

    __tablename__ = "rounds"
    # The second index finds rounds still to remember without reading every round of a long story.
    __table_args__ = (
        UniqueConstraint("story_id", "number"),
        Index("ix_rounds_unremembered", "story_id", "memory_written"),
    )
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    number: int
    attempt_id: str = Field(foreign_key="attempts.id")
    player_text: str
    narration: str
    outcomes: list[dict[str, Any]] = _json()
    rolls: list[dict[str, Any]] = _json()
    refusals: list[str] = _json()
    judgement: dict[str, Any] | None = _json(nullable=True)  # the judge's verdicts and model; None if not judged
    memory_written: bool = False
    created_at: datetime = _moment()


class MemoryEntry(SQLModel, table=True):
    """The memory keeper's summary of one round, with that round's rolls and outcomes copied by code."""

    __tablename__ = "memory"
    __table_args__ = (UniqueConstraint("story_id", "round_number"),)
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    round_number: int
    summary: str
    rolls: list[dict[str, Any]] = _json()
    outcomes: list[dict[str, Any]] = _json()
    created_at: datetime = _moment()


class ModelCall(SQLModel, table=True):
    """One call to the model: tokens in and out, latency, HTTP attempts, refusals it drew."""

    __tablename__ = "model_calls"
    id: int | None = Field(default=None, primary_key=True)
    story_id: str = Field(foreign_key="stories.id", index=True)
    attempt_id: str | None = None
    purpose: str  # game_master | judge | memory
    prompt_tokens: int
    completion_tokens: int
    estimated: bool
    latency_ms: float
    http_attempts: int
    refusals: int = 0
    finish_reason: str | None = None
    structured: str | None = None  # a judge call: how its answer was asked for (json_schema, tool or text)
    created_at: datetime = _moment()


def model_call_from(completion: Completion, purpose: str, story_id: str = "") -> ModelCall:
    """The record of one model call, from what the model client measured."""
    return ModelCall(
        story_id=story_id,
        purpose=purpose,
        prompt_tokens=completion.usage.prompt_tokens,
        completion_tokens=completion.usage.completion_tokens,
        estimated=completion.usage.estimated,
        latency_ms=completion.latency_ms,
        http_attempts=completion.attempts,
        finish_reason=completion.finish_reason,
    )
