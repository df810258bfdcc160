"""The audit of a fair story's seeds: each revealed seed hashes to its commitment, the seeds cover the rolls
one after another, and each roll's faces are those its seed derives (see gm.integrity.audit, gm.integrity.fair)."""

from __future__ import annotations

from dataclasses import dataclass

from gm import dice
from gm.integrity import fair
from gm.integrity._audit_report import AuditReport, Mismatch
from gm.transcript.shapes import RollPublic, TranscriptPublic


@dataclass(frozen=True, slots=True)
class SeedKey:
    """A fair story's seed as the audit derives faces from it: its key (None while the seed is secret), and the
    rolls it derives."""

    key: bytes | None  # None while the seed is secret
    first: int
    last: int | None


def seed_keys(transcript: TranscriptPublic, report: AuditReport) -> dict[int, SeedKey]:
    """Each seed epoch's key and rolls; mismatches for seeds that do not add up."""
    integrity = transcript.integrity
    assert integrity is not None
    keys: dict[int, SeedKey] = {}
    expected_first = 1
    for place, seed in enumerate(integrity.seeds):
        where = f"seed {seed.epoch}"
        if seed.epoch != place or seed.first_roll != expected_first:
            report.mismatches.append(
                Mismatch(
                    where, f"it should be seed {place} from roll {expected_first}, not from roll {seed.first_roll}"
                )
            )
        keys[seed.epoch] = SeedKey(None, seed.first_roll, seed.last_roll)
        if seed.seed is not None:
            try:
                key = fair.key_for(seed.seed, integrity.player_seed)
                matches = fair.commitment(seed.seed) == seed.commitment
            except ValueError:
                report.mismatches.append(Mismatch(where, "the revealed seed is not hex digits"))
                continue
            if not matches:
                report.mismatches.append(Mismatch(where, "the revealed seed does not hash to its commitment"))
                continue
            keys[seed.epoch] = SeedKey(key, seed.first_roll, seed.last_roll)
            expected_first = (seed.last_roll or 0) + 1
        elif place != len(integrity.seeds) - 1:
            report.mismatches.append(Mismatch(where, "a seed before the current one was never revealed"))
    return keys


def derived_mismatches(
    roll: RollPublic, story_id: str, is_fair: bool, keys: dict[int, SeedKey], legacy: int, report: AuditReport
) -> list[str]:
    """For a fair story, whether the roll's faces are those its seed derives (when the seed is revealed)."""
    if roll.seed_epoch is None:
        if is_fair and (roll.seq or 0) > legacy:
            return ["the story has fair dice, but this roll names no seed"]
        return []
    if not is_fair or roll.seed_epoch not in keys:
        return [f"it names seed {roll.seed_epoch}, which the story does not have"]
    seed = keys[roll.seed_epoch]
    place = roll.seq or 0
    if place < seed.first or (seed.last is not None and place > seed.last):
        return [f"seed {roll.seed_epoch} derives rolls {seed.first} to {seed.last or 'now'}, not roll {place}"]
    if seed.key is None:
        report.unrevealed += 1
        return []
    try:
        derived = fair.derive_faces(seed.key, story_id, place, roll.notation)
    except dice.DiceError:
        return []  # notation that does not parse is a mismatch already (see gm.integrity.audit)
    report.derived += 1
    if roll.faces != derived:
        return [f"its faces {roll.faces} are not those seed {roll.seed_epoch} derives for roll {roll.seq}"]
    return []
