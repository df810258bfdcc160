"""The audit of a story's dice: everything that can be checked from its transcript alone.

`audit(transcript)` takes the transcript's public shape (`gm show STORY --json`, the API's story, or
what `gm.engine.transcript.transcript` reads from the database) and checks, in this order:

1. each roll, in chain order: its faces fit its notation, and its total, successes, dice line,
   modifier, value, band, result, critical and void are what the dice and the dice.json copied into
   the story make of them (with its edge's dice, its opponent's modifier and its naturals:
   `gm.integrity._audit_checks`); in a fair story, its faces are those its revealed seed derives (gm.integrity.fair);
   and its `prev_hash` is the hash of the roll before it (gm.integrity.chain), so an edited, deleted or
   inserted roll breaks the chain. The last hash must be the story's chain head.
2. a fair story's seeds: each revealed seed hashes to its commitment, and the seeds cover the rolls
   one after another.
3. each accepted round: its copy of each roll is the roll in the chain; every outcome agrees with
   the roll it names (character and result); every check roll that fell in a band serves exactly one
   outcome; and no roll serves two rounds.
4. retries: no check was rolled twice for one character in one round (a round's rolls outlive its
   attempts), for the rolls made since gm kept that rule (`legacy_rolls` are older).

`since(earlier, later)` checks that a later transcript of a story keeps an earlier one's history:
the same rolls under the same hashes, and the same commitments (`gm audit --since`).

Pure: no I/O. What it cannot see is in the README ("Dice integrity").
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gm import dice
from gm._text import counted
from gm.integrity import fair
from gm.integrity._audit_checks import check_mismatches, expected_notation
from gm.integrity.chain import genesis, roll_hash
from gm.problems import ProblemsError
from gm.rules.checks import Rules, parse_rules
from gm.transcript.shapes import RollPublic, RoundPublic, TranscriptPublic

# The fields a round's copy of a roll must share with the roll in the chain (the chain's own
# fields, seq and prev_hash, are not in copies made before the chain existed).
COPIED = (
    "kind",
    "character",
    "check",
    "notation",
    "reason",
    "target",
    "modifier",
    "faces",
    "total",
    "successes",
    "value",
    "band",
    "result",
    "critical",
    "void",
    "dice",
    "round",
    "attempt",
    "edge",
    "opponent",
    "opponent_modifier",
    "natural",
    "stepped_from",
)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One thing that does not check out: where it is, and what is wrong, in one sentence."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class AuditReport:
    """What an audit found, and how much it checked."""

    story: str
    fair: bool
    rolls: int = 0  # rolls in the chain
    recomputed: int = 0  # rolls whose numbers were recomputed from their faces
    outcomes: int = 0  # outcomes checked against their rolls
    derived: int = 0  # fair rolls whose faces were derived again from a revealed seed
    unrevealed: int = 0  # fair rolls whose seed is still secret
    sealed: int = (
        0  # secret rolls not yet revealed (gm.integrity.secret): their place in the chain is checked, not their dice
    )
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def verdict(self) -> str:
        """One line: that the story checks out and what was checked, or how many mismatches there are."""
        if not self.ok:
            count = len(self.mismatches)
            return f"story {self.story} does NOT check out: {count} mismatch{'es' if count != 1 else ''}"
        said = (
            f"story {self.story} checks out: {counted(self.rolls, 'roll')} in an unbroken chain, "
            f"{self.recomputed} recomputed from dice.json, {counted(self.outcomes, 'outcome')} "
            f"{'agrees' if self.outcomes == 1 else 'agree'} with {'its roll' if self.outcomes == 1 else 'their rolls'}"
        )
        if self.sealed:
            said += f"; {counted(self.sealed, 'secret roll')} sealed until revealed"
        if self.fair:
            said += f"; {counted(self.derived, 'fair roll')} derived again from revealed seeds"
            if self.unrevealed:
                said += (
                    f", {self.unrevealed} more {'waits' if self.unrevealed == 1 else 'wait'} for a reveal (gm reveal)"
                )
        return said

    def to_json(self) -> dict[str, Any]:
        first = self.mismatches[0] if self.mismatches else None
        return {
            "story": self.story,
            "ok": self.ok,
            "verdict": self.verdict(),
            "fair": self.fair,
            "rolls": self.rolls,
            "recomputed": self.recomputed,
            "outcomes": self.outcomes,
            "derived": self.derived,
            "unrevealed": self.unrevealed,
            "sealed": self.sealed,
            "first_mismatch": {"where": first.where, "message": first.message} if first else None,
            "mismatches": [{"where": m.where, "message": m.message} for m in self.mismatches],
        }


def audit(transcript: TranscriptPublic) -> AuditReport:
    """Check a story's transcript as the module says; every mismatch found is in the report, in story order."""
    story = transcript.story
    report = AuditReport(story=story.id, fair=story.fair)
    integrity = transcript.integrity
    if integrity is None:
        report.mismatches.append(
            Mismatch("transcript", "it has no integrity section; export it again with this gm (gm show STORY --json)")
        )
        return report
    rules = _rules(integrity.dice, report)
    keys = _seed_keys(transcript, report)
    previous = genesis(story.id)
    for place, roll in enumerate(integrity.rolls, 1):
        where = f"roll {roll.seq if roll.seq is not None else '?'} (id {roll.id})"
        found: list[str] = []
        if roll.seq != place:
            found.append(
                f"it is number {roll.seq} in the chain but comes {place}; a roll before it was removed or added"
            )
        if roll.sealed:  # a secret roll's stub: its hash carries the chain, its dice are checked once revealed
            report.sealed += 1
        else:
            found += _recompute(roll, rules, integrity.modifiers, report)
            found += _derived(roll, story.id, integrity.fair, keys, integrity.legacy_rolls, report)
        if roll.prev_hash != previous:
            found.append("its prev_hash is not the hash of the roll before it: a roll was edited, removed or added")
        report.mismatches += [Mismatch(where, message) for message in found]
        previous = _hash_of(roll)
    report.rolls = len(integrity.rolls)
    if (integrity.rolls and previous != integrity.chain_head) or len(integrity.rolls) != integrity.chain_length:
        report.mismatches.append(
            Mismatch(
                "chain",
                f"the story says it has {integrity.chain_length} rolls ending in hash {integrity.chain_head}, "
                f"but there are {len(integrity.rolls)} ending in {previous}: the newest rolls were changed or removed",
            )
        )
    _check_rounds(transcript, report)
    _check_retries(integrity.rolls, integrity.legacy_rolls, report)
    return report


def _hash_of(roll: RollPublic) -> str:
    """A roll's chain hash: from its contents, or, for a sealed secret roll, the hash its stub carries."""
    return (roll.hash or "") if roll.sealed else roll_hash(roll.model_dump(mode="json"))


def _rules(data: dict[str, Any] | None, report: AuditReport) -> Rules | None:
    if data is None:
        return None
    try:
        return parse_rules(data)
    except ProblemsError as error:
        report.mismatches.append(Mismatch("dice.json", f"the copy in the story fails its check: {error}"))
        return None


def _recompute(
    roll: RollPublic, rules: Rules | None, modifiers: dict[str, dict[str, int]], report: AuditReport
) -> list[str]:
    """What does not follow from the roll's own faces (and, for a check, from dice.json)."""
    try:
        expression = dice.parse(roll.notation)
    except dice.DiceError as error:
        return [f"its notation does not parse ({error})"]
    try:  # faces in the order rolled, rerolls and explosions included, exactly as many as the notation rolls
        dice.replay(expression, roll.faces)
    except dice.DiceError:
        return [f"its faces {roll.faces} are not what {roll.notation} rolls"]
    check = None
    edge = None
    if roll.kind == "check":
        if rules is None or roll.check not in rules:
            return [f"it names check {roll.check!r}, which the story's dice.json does not have"]
        check = rules[roll.check or ""]
        edge, wrong = expected_notation(roll, check)
        if wrong is not None:
            return [wrong]
    hit = check.hit_read if check is not None else None
    again = dice.replay(expression, roll.faces, hit=hit)
    report.recomputed += 1
    found = []
    if again.total != roll.total:
        found.append(f"its faces add up to {again.total}, but its total says {roll.total}")
    if str(again) != roll.dice:
        found.append(f"its dice line says {roll.dice!r}, but its faces read {str(again)!r}")
    if check is None:
        return found
    return found + check_mismatches(roll, check, edge, again, modifiers)


@dataclass(frozen=True, slots=True)
class _Seed:
    key: bytes | None  # None while the seed is secret
    first: int
    last: int | None


def _seed_keys(transcript: TranscriptPublic, report: AuditReport) -> dict[int, _Seed]:
    """Each seed epoch's key and rolls; mismatches for seeds that do not add up."""
    integrity = transcript.integrity
    assert integrity is not None
    keys: dict[int, _Seed] = {}
    expected_first = 1
    for place, seed in enumerate(integrity.seeds):
        where = f"seed {seed.epoch}"
        if seed.epoch != place or seed.first_roll != expected_first:
            report.mismatches.append(
                Mismatch(
                    where, f"it should be seed {place} from roll {expected_first}, not from roll {seed.first_roll}"
                )
            )
        keys[seed.epoch] = _Seed(None, seed.first_roll, seed.last_roll)
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
            keys[seed.epoch] = _Seed(key, seed.first_roll, seed.last_roll)
            expected_first = (seed.last_roll or 0) + 1
        elif place != len(integrity.seeds) - 1:
            report.mismatches.append(Mismatch(where, "a seed before the current one was never revealed"))
    return keys


def _derived(
    roll: RollPublic, story_id: str, is_fair: bool, keys: dict[int, _Seed], legacy: int, report: AuditReport
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
        return []  # notation that does not parse is a mismatch already (see _recompute)
    report.derived += 1
    if roll.faces != derived:
        return [f"its faces {roll.faces} are not those seed {roll.seed_epoch} derives for roll {roll.seq}"]
    return []


def _check_rounds(transcript: TranscriptPublic, report: AuditReport) -> None:
    integrity = transcript.integrity
    assert integrity is not None
    chained = {roll.id: roll for roll in integrity.rolls}
    used_by: dict[int, int] = {}
    for place, round_ in enumerate(transcript.rounds, 1):
        where = f"round {round_.number}"
        if round_.number != place:
            report.mismatches.append(Mismatch(where, f"it comes {place}, so a round before it is missing or added"))
        for copy in round_.rolls:
            roll = chained.get(copy.id)
            if roll is None:
                report.mismatches.append(
                    Mismatch(where, f"it has roll id {copy.id}, which is not in the story's chain")
                )
                continue
            differs = [name for name in COPIED if getattr(copy, name) != getattr(roll, name)]
            if differs:
                report.mismatches.append(
                    Mismatch(where, f"its copy of roll {roll.seq} differs from the roll in {', '.join(differs)}")
                )
            if roll.round != round_.number:
                report.mismatches.append(Mismatch(where, f"roll {roll.seq} was rolled for round {roll.round}"))
            if copy.id in used_by:
                report.mismatches.append(Mismatch(where, f"roll {roll.seq} already served round {used_by[copy.id]}"))
            used_by[copy.id] = round_.number
        _check_outcomes(round_, chained, where, report)
    if len(transcript.rounds) != transcript.story.rounds:
        said = counted(transcript.story.rounds, "round")
        report.mismatches.append(Mismatch("story", f"it says {said}, but there are {len(transcript.rounds)}"))


def _check_outcomes(round_: RoundPublic, chained: dict[int, RollPublic], where: str, report: AuditReport) -> None:
    # A sealed secret roll has no copy in the player's round, but its outcome may name it.
    mine = {copy.id for copy in round_.rolls} | {
        r.id for r in chained.values() if r.sealed and r.round == round_.number
    }
    named = Counter(outcome.roll for outcome in round_.outcomes if outcome.roll is not None)
    for outcome in round_.outcomes:
        report.outcomes += 1
        if outcome.roll is None:
            continue
        roll = chained.get(outcome.roll)
        if roll is None or outcome.roll not in mine:
            report.mismatches.append(
                Mismatch(where, f"{outcome.character}'s outcome names a roll the round does not have")
            )
        elif roll.sealed:
            continue  # its band is sealed: the outcome is checked against it once it is revealed
        elif roll.kind != "check" or roll.void:
            report.mismatches.append(
                Mismatch(where, f"{outcome.character}'s outcome names roll {roll.seq}, which settles nothing")
            )
        elif roll.character != outcome.character:
            report.mismatches.append(
                Mismatch(where, f"{outcome.character}'s outcome names roll {roll.seq}, rolled for {roll.character}")
            )
        elif roll.result != outcome.result:
            report.mismatches.append(
                Mismatch(
                    where,
                    f"{outcome.character}'s outcome says {outcome.result}, but roll {roll.seq} fell in "
                    f"{roll.band!r}: {roll.result}",
                )
            )
    for copy in round_.rolls:
        roll = chained.get(copy.id)
        if roll is not None and roll.kind == "check" and not roll.void and named[copy.id] != 1:
            report.mismatches.append(
                Mismatch(where, f"check roll {roll.seq} serves {named[copy.id]} outcomes, not exactly one")
            )


def _check_retries(rolls: list[RollPublic], legacy: int, report: AuditReport) -> None:
    first: dict[tuple[int | None, str | None, str | None], RollPublic] = {}
    for roll in rolls:
        if roll.kind != "check" or (roll.seq or 0) <= legacy:
            continue
        key = (roll.round, roll.check, roll.character)
        if key in first:
            report.mismatches.append(
                Mismatch(
                    f"roll {roll.seq} (id {roll.id})",
                    f"check {roll.check!r} was already rolled for {roll.character} in round {roll.round} "
                    f"(roll {first[key].seq}): a round's roll was rolled again",
                )
            )
        else:
            first[key] = roll


def since(earlier: TranscriptPublic, later: TranscriptPublic) -> list[Mismatch]:
    """Where `later` rewrites what `earlier` (a copy of the same story saved before) already held."""
    if earlier.story.id != later.story.id:
        return [Mismatch("story", f"the earlier transcript is of story {earlier.story.id}, not {later.story.id}")]
    if earlier.integrity is None or later.integrity is None:
        return [Mismatch("transcript", "both transcripts need their integrity section (gm show STORY --json)")]
    found = []
    now = {roll.seq: roll for roll in later.integrity.rolls}
    for roll in earlier.integrity.rolls:
        kept = now.get(roll.seq)
        if kept is None:
            found.append(Mismatch(f"roll {roll.seq}", "it was in the earlier transcript and is gone"))
        elif _hash_of(kept) != _hash_of(roll):  # a roll sealed then is the roll revealed now, hash for hash
            found.append(Mismatch(f"roll {roll.seq}", "it is not the roll the earlier transcript had"))
    commitments = {seed.epoch: seed.commitment for seed in later.integrity.seeds}
    for seed in earlier.integrity.seeds:
        if commitments.get(seed.epoch) != seed.commitment:
            found.append(Mismatch(f"seed {seed.epoch}", "its commitment is not the one the earlier transcript had"))
    return found
