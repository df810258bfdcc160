"""The result of one roll, and how it is shown: a plain line for people, a dict for programs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from gm.dice.tree import Constant, Dice, Expression


@dataclass(frozen=True, slots=True)
class DiceRoll:
    """One dice term as rolled: every face in the order rolled, and which of them were kept."""

    term: Dice
    faces: tuple[int, ...]
    kept: tuple[bool, ...]
    subtotal: int  # signed: negative for a subtracted term


Part = DiceRoll | Constant


class Roll(NamedTuple):
    """One roll of an expression: the faces of each dice term as rolled, and the total.

    It is a tuple so that it cannot be changed once rolled, and is cheap to make; the itemised
    `parts` (kept flags, subtotals) follow from the faces. With `hit`, the roll is read as
    successes: `successes` counts kept dice showing `hit` or more.
    """

    expression: Expression
    faces: tuple[tuple[int, ...], ...]  # one tuple per dice term, in the order of expression.dice
    total: int
    hit: int | None = None
    successes: int | None = None

    @property
    def parts(self) -> tuple[Part, ...]:
        """Every term in order: dice as `DiceRoll` (faces, kept flags, subtotal), constants as they are."""
        rolled = iter(zip(self.expression.dice, self.faces))
        parts: list[Part] = []
        for term in self.expression.terms:
            if isinstance(term, Constant):
                parts.append(term)
                continue
            dice, faces = next(rolled)
            kept = kept_flags(dice, faces)
            subtotal = sum(face for face, keep in zip(faces, kept) if keep)
            parts.append(DiceRoll(dice, faces, kept, -subtotal if dice.negative else subtotal))
        return tuple(parts)

    def __str__(self) -> str:
        return render_line(self)

    def to_json(self) -> dict[str, Any]:
        return roll_to_json(self)


def kept_flags(term: Dice, faces: tuple[int, ...]) -> tuple[bool, ...]:
    """Which faces count; among equal faces the first rolled is kept, which changes no total."""
    if term.keep is None:
        return (True,) * len(faces)
    # Stable, also in reverse: ties stay in rolled order, so the first rolled of equal faces is kept.
    order = sorted(range(len(faces)), key=faces.__getitem__, reverse=term.keep.highest)
    chosen = set(order[: term.kept])
    return tuple(index in chosen for index in range(len(faces)))


def render_line(result: Roll) -> str:
    """One line such as `4d6kh3 (6, 5, 4, [1]) + 2 = 17`; dropped dice are in brackets."""
    pieces: list[str] = []
    for index, part in enumerate(result.parts):
        if index:  # the grammar never lets the first term carry a sign
            pieces.append(_sign(part))
        if isinstance(part, DiceRoll):
            faces = ", ".join(str(face) if kept else f"[{face}]" for face, kept in zip(part.faces, part.kept))
            pieces.append(f"{part.term.text} ({faces})")
        else:
            pieces.append(str(part.value))
    line = " ".join(pieces)
    if result.successes is None:
        return f"{line} = {result.total}"
    noun = "success" if result.successes == 1 else "successes"
    return f"{line} = {result.successes} {noun} (hit {result.hit}+)"


def sum_line(result: Roll) -> str:
    """The total as a sum of what counted, such as `9 = 4 + 4 + 1` (dropped dice left out)."""
    pieces: list[str] = []
    for part in result.parts:
        if isinstance(part, DiceRoll):
            negative = part.term.negative
            pieces += [f"{'-' if negative else '+'} {face}" for face, kept in zip(part.faces, part.kept) if kept]
        else:
            pieces.append(f"{'-' if part.negative else '+'} {part.value}")
    joined = " ".join(pieces)
    return f"{result.total} = {joined[2:] if joined.startswith('+ ') else joined}"


def roll_to_json(result: Roll) -> dict[str, Any]:
    """The roll as plain data: notation, each term with faces and kept flags, total, and successes if read so."""
    terms: list[dict[str, Any]] = []
    for part in result.parts:
        if isinstance(part, DiceRoll):
            terms.append(
                {
                    "dice": part.term.text,
                    "sign": _sign(part),
                    "faces": list(part.faces),
                    "kept": list(part.kept),
                    "subtotal": part.subtotal,
                }
            )
        else:
            terms.append({"constant": part.value, "sign": _sign(part)})
    data: dict[str, Any] = {
        "notation": result.expression.text,
        "terms": terms,
        "total": result.total,
        "text": render_line(result),
    }
    if result.successes is not None:
        data["hit"] = result.hit
        data["successes"] = result.successes
    return data


def _sign(part: Part) -> str:
    negative = part.term.negative if isinstance(part, DiceRoll) else part.negative
    return "-" if negative else "+"
