"""What the public shapes (gm.transcript.shapes) are built from: the store's rows, read through protocols so
that the shapes know no database."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol


class StoredRound(Protocol):
    """What a round's shape is built from: the store's row of it (`gm.store.records.RoundRecord`)."""

    number: int
    player_text: str
    narration: str
    outcomes: list[dict[str, Any]]
    rolls: list[dict[str, Any]]
    refusals: list[str]
    judgement: dict[str, Any] | None
    clock: int | None
    sheet_hash: str | None
    attempt_id: str


class StoredStory(Protocol):
    """What a story's shape is built from: the store's row of it (`gm.store.records.Story`)."""

    id: str
    title: str
    created_at: datetime
    rounds: int
    settings: dict[str, Any]
    fair: bool
    clock: int | None
    world_data: dict[str, Any]
    ended_at: datetime | None
    sheet: dict[str, Any] | None


class StoredSeed(Protocol):
    """What a seed's shape is built from: the store's row of it (`gm.store.records.SeedRecord`)."""

    epoch: int
    commitment: str
    seed: str
    first_roll: int
    last_roll: int | None
    committed_at: datetime
    revealed_at: datetime | None
