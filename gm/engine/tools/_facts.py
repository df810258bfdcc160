"""A round's rolls in words: the facts the game master is given, and a check roll's answer (gm.engine.tools.running).

A check's answer and its fact carry the band and the result, never the number: the model learns only what the
band says."""

from __future__ import annotations

from typing import Any, cast

from gm import dice
from gm.dice.result import sum_line
from gm.engine.prompt import CheckFact, check_fact_text
from gm.engine.referee import Result, RollKind, RoundRoll
from gm.store import RollRecord
from gm.world.definition import World

CRITICAL_NOTE = "a critical band: the result stands as it is, but it deserves more in the telling"


def player_fact(record: RollRecord) -> str:
    """A player's roll in words, such as "Mara rolled 2d6+1 for 'pick the lock': 9 = 4 + 4 + 1"."""
    rolled = dice.replay(record.notation, record.faces)  # the same roll again, from its stored faces
    purpose = f" for '{record.reason}'" if record.reason else ""
    return f"{record.character} rolled {record.notation}{purpose}: {sum_line(rolled)}"


def check_fact(record: RollRecord, world: World) -> str:
    """An earlier check roll of this round in words, with its band but never its number."""
    key = str(record.check_key)
    name = world.rules[key].name if world.rules is not None and key in world.rules else key
    assert record.id is not None
    rolled = CheckFact(record.id, name, str(record.character), str(record.band), str(record.result), record.critical)
    return check_fact_text(rolled)


def round_roll(record: RollRecord, seen: bool = True) -> RoundRoll:
    """What the referee may know of a stored roll, and whether the model had read its result."""
    assert record.id is not None
    kind = cast(RollKind, record.kind if record.kind in ("check", "dice", "player") else "dice")
    result = cast(Result | None, record.result)
    return RoundRoll(
        record.id,
        kind,
        record.character,
        record.check_key,
        record.band,
        result,
        record.void,
        opponent=record.opponent,
        seen=seen,
    )


def check_content(record: RollRecord, repeated: bool) -> dict[str, Any]:
    """A check roll's answer to the game master: its band, result and notes, never its number."""
    if record.void:
        return {
            "roll": record.id,
            "check": record.check_key,
            "character": record.character,
            "void": True,
            "message": f"check '{record.check_key}' has no band for the value {record.value}, so roll {record.id} "
            f"for {record.character} is void; narrate without an outcome roll for it, or roll another check",
        }
    content: dict[str, Any] = {
        "roll": record.id,
        "check": record.check_key,
        "character": record.character,
        "band": record.band,
        "result": record.result,
        "critical": record.critical,
    }
    if record.edge:
        content["edge"] = record.edge
    if record.opponent:
        content["opponent"] = record.opponent
        content["serves"] = f"{record.character}'s outcome only; {record.opponent}'s outcome, if any, names no roll"
    if record.natural_text:
        content["natural"] = record.natural_text
    if record.critical:
        content["note"] = CRITICAL_NOTE
    if repeated:
        content["repeated"] = "this check was already rolled for this character this round; this is that roll"
    return content
