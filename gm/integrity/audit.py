"""The audit of a story's dice: everything that can be checked from its transcript alone.

`audit(transcript)` takes the transcript's public shape (`gm show STORY --json`, the API's story, or
what `gm.engine.transcript.transcript` reads from the database) and checks, in this order:

1. each roll, in chain order: its faces fit its notation, and its total, successes, dice line,
   modifier, value, band, result, critical and void are what the dice and the dice.json copied into
   the story make of them (with its edge's dice, its opponent's modifier and its naturals:
   `gm.integrity._audit_checks`); in a fair story, its faces are those its revealed seed derives (gm.integrity.fair);
   and its `prev_hash` is the hash of the roll before it (gm.transcript.chain), so an edited, deleted or
   inserted roll breaks the chain. The last hash must be the story's chain head.
2. a fair story's seeds: each revealed seed hashes to its commitment, and the seeds cover the rolls
   one after another.
3. each accepted round: its copy of each roll is the roll in the chain; every outcome agrees with
   the roll it names (character and result); every check roll that fell in a band serves exactly one
   outcome; and no roll serves two rounds.
4. retries: no check was rolled twice for one character in one round (a round's rolls outlive its
   attempts), for the rolls made since gm kept that rule (`legacy_rolls` are older).
5. sheets: every sheet recomputed from the world's start values and the rounds' changes, each change in the
   story's sheet chain, and a check whose modifier is a bounded number rolled with a value it held then
   (gm.integrity._audit_sheets).
6. a shared table's messages: their chain, and each seated round's actions against it (gm.integrity._audit_table).

`since(earlier, later)` checks that a later transcript of a story keeps an earlier one's history:
the same rolls under the same hashes, and the same commitments (`gm audit --since`).

Pure: no I/O. What it cannot see is in docs/integrity.md.
"""

from __future__ import annotations

from typing import Any

from gm import dice
from gm._text import counted
from gm.errors import ProblemsError
from gm.integrity._audit_checks import check_mismatches, expected_notation
from gm.integrity._audit_report import AuditReport, Mismatch
from gm.integrity._audit_rounds import check_retries, check_rounds
from gm.integrity._audit_seeds import derived_mismatches, seed_keys
from gm.integrity._audit_sheets import SheetValues, check_sheets
from gm.integrity._audit_table import check_messages
from gm.rules.checks import Rules
from gm.rules.validation import parse_rules
from gm.transcript.chain import genesis, roll_hash
from gm.transcript.shapes import RollPublic, TranscriptPublic

__all__ = ["AuditReport", "Mismatch", "audit", "since"]


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
    sheets = check_sheets(transcript, report)
    keys = seed_keys(transcript, report)
    previous = genesis(story.id)
    forked = integrity.forked_from
    if forked is not None:  # a fork's chain goes on from its parent's rolls, which come first (gm.store._forks)
        report.forked_from = (
            f"story {forked.get('story')} at round {forked.get('round')} "
            f"(its first {counted(int(forked.get('rolls') or 0), 'roll')})"
        )
        if forked.get("rolls"):
            previous = genesis(str(forked.get("origin")))
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
            modifiers = _modifiers(roll, rules, integrity.modifiers, sheets, found)
            found += _recompute(roll, rules, modifiers, report)
            found += derived_mismatches(roll, story.id, integrity.fair, keys, integrity.legacy_rolls, report)
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
    check_rounds(transcript, report)
    check_retries(integrity.rolls, integrity.legacy_rolls, report)
    check_messages(transcript, report)  # a shared table's messages: who sent what (gm.integrity._audit_table)
    return report


def _hash_of(roll: RollPublic) -> str:
    """A roll's chain hash: from its contents, or, for a sealed secret roll, the hash its stub carries."""
    return (roll.hash or "") if roll.sealed else roll_hash(roll.model_dump(mode="json"))


def _modifiers(
    roll: RollPublic, rules: Rules | None, modifiers: dict[str, dict[str, int]], sheets: SheetValues, found: list[str]
) -> dict[str, dict[str, int]]:
    """The modifiers a check roll is recomputed with: the world's fixed ones, and, for a bounded number on a sheet,
    the value the roll used, once it is found to be one the number held in its round (else a mismatch)."""
    check = rules[roll.check or ""] if roll.kind == "check" and rules is not None and roll.check in rules else None
    if check is None or check.modifier is None:
        return modifiers
    used = {roll.character: roll.modifier, roll.opponent: roll.opponent_modifier}
    patched = modifiers
    for who, value in used.items():
        if who is None or sheets.number(who, check.modifier) is None:
            continue
        if not sheets.allows(roll, who, check.modifier, value):
            found.append(f"{who}'s {check.modifier} was never {value} in round {roll.round}, yet the roll added it")
        patched = {**patched, who: {**patched.get(who, {}), check.modifier: value or 0}}
    return patched


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
