"""The audit of a story's accepted rounds: each copy of a roll is the roll in the chain, every outcome agrees
with the roll it names, every check roll that fell in a band serves exactly one outcome, and no check was
rolled twice for one character in one round (see gm.integrity.audit)."""

from __future__ import annotations

from collections import Counter

from gm._text import counted
from gm.integrity._audit_report import AuditReport, Mismatch
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


def check_rounds(transcript: TranscriptPublic, report: AuditReport) -> None:
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
        _check_bound(round_, integrity.rolls, integrity.legacy_rolls, where, report)
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


def _check_bound(round_: RoundPublic, rolls: list[RollPublic], legacy: int, where: str, report: AuditReport) -> None:
    """Every check roll made for the round, by whichever attempt, is in it and told: a failed attempt's rolls bind
    the next attempt (gm.engine._earlier_rolls), so a retry cannot get fresh dice by asking for another check."""
    mine = {copy.id for copy in round_.rolls}
    for roll in rolls:
        if roll.round != round_.number or roll.kind != "check" or roll.void or roll.sealed:
            continue
        if (roll.seq or 0) > legacy and roll.id not in mine:
            report.mismatches.append(
                Mismatch(
                    where,
                    f"check roll {roll.seq} ({roll.check!r} for {roll.character}) was rolled for this round but the"
                    " round leaves it untold: a round's rolls stand, whichever attempt made them",
                )
            )


def check_retries(rolls: list[RollPublic], legacy: int, report: AuditReport) -> None:
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
