"""A fair story's seeds over its life: drawn at the start, used roll by roll, revealed and replaced on demand.

The derivation itself is `gm.integrity.fair`; this module ties it to the store: the first seed written with the
story, the `FairDice` an attempt rolls with, and `reveal`, which publishes the seed used so far and
commits a fresh one. A reveal takes the story's round lease, so it never lands in the middle of a round.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from gm.dice import DiceSource
from gm.errors import StoryBusy
from gm.integrity import fair
from gm.store import Store, StoryState
from gm.store.records import RollRecord, SeedRecord, Story
from gm.transcript.shapes import SeedPublic

REVEAL_LEASE_SECONDS = 30.0


def first_seed() -> SeedRecord:
    """The seed a fair story starts with (written with the story: `Store.create_story`)."""
    return _drawn(epoch=0, first_roll=1)


def _drawn(epoch: int, first_roll: int) -> SeedRecord:
    seed = fair.new_seed()
    return SeedRecord(story_id="", epoch=epoch, seed=seed, commitment=fair.commitment(seed), first_roll=first_roll)


def dice_for(store: Store, story: Story, otherwise: DiceSource | None) -> DiceSource | None:
    """The dice an attempt at `story` rolls with: fair dice from its current seed, or `otherwise`.

    Read under the round's lease, so the seed and the next roll number stay as read until it ends.
    """
    return fair_dice(story, store.current_seed(story.id) if story.fair else None, otherwise)


def fair_dice(story: Story | StoryState, seed: SeedRecord | None, otherwise: DiceSource | None) -> DiceSource | None:
    """The dice an attempt rolls with, given the story's current seed as read under the lease (see `dice_for`)."""
    if not story.fair or seed is None:
        return otherwise
    return fair.FairDice(fair.key_for(seed.seed, story.player_seed), story.id, story.chain_length + 1, seed.epoch)


def stamped(source: DiceSource | None, record: RollRecord) -> RollRecord:
    """A roll about to be written, given the place and seed epoch fair dice derived it for."""
    if isinstance(source, fair.FairDice):
        record.seq, record.seed_epoch = source.take_number()
    return record


@dataclass(frozen=True, slots=True)
class Revealed:
    """What a reveal publishes: the seed used so far, and the commitment to the one that follows."""

    revealed: SeedPublic
    next: SeedPublic


def reveal(store: Store, story_id: str) -> Revealed:
    """Reveal a fair story's current seed and commit a fresh one; `StoryBusy` while a round is played."""
    store.story(story_id)  # StoryNotFound first, before any lease
    holder = uuid.uuid4().hex
    if not store.take_lease(story_id, holder, REVEAL_LEASE_SECONDS):
        raise StoryBusy("a round of this story is being played right now; reveal its seed when the round is done")
    try:
        revealed, fresh = store.reveal_seed(story_id, _drawn(epoch=0, first_roll=0))
    finally:
        store.release_lease(story_id, holder)
    return Revealed(SeedPublic.from_record(revealed), SeedPublic.from_record(fresh))
