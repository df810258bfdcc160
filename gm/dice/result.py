"""The result of one roll, and how it is shown: a plain line for people, a dict for programs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from gm.dice._chains import Chain, kept_dice, roll_term, term_value
from gm.dice.tree import Constant, Dice, Expression


@dataclass(frozen=True, slots=True)
class DiceRoll:
    """One dice term as rolled: every face in the order rolled, and which dice were kept.

    For plain dice a die is one face, so `kept` has a flag per face. Rerolled and exploding dice make
    chains (`chains`: a die's rolls, each its faces, the last one standing), and `kept` has a flag per
    die; `chains` is empty for plain dice."""

    term: Dice
    faces: tuple[int, ...]
    kept: tuple[bool, ...]
    subtotal: int  # signed: negative for a subtracted term
    chains: tuple[tuple[tuple[int, ...], ...], ...] = ()


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
            if dice.plain:
                kept = kept_flags(dice, faces)
                subtotal = sum(face for face, keep in zip(faces, kept) if keep)
                parts.append(DiceRoll(dice, faces, kept, -subtotal if dice.negative else subtotal))
                continue
            chains = chains_of(dice, faces)
            kept = kept_dice(dice, chains)
            subtotal = sum(term_value(dice, chain) for chain, keep in zip(chains, kept) if keep)
            frozen = tuple(tuple(tuple(roll) for roll in chain) for chain in chains)
            parts.append(DiceRoll(dice, faces, kept, -subtotal if dice.negative else subtotal, frozen))
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


def chains_of(term: Dice, faces: tuple[int, ...]) -> list[Chain]:
    """The chains of rolls that `faces`, rolled in that order, make for `term` (as `roll_term` rolled them)."""
    given = iter(faces)

    def again(count: int, sides: int) -> list[int]:
        return [next(given) for _ in range(count)]

    return roll_term(term, again)[1]


def render_line(result: Roll) -> str:
    """One line such as `4d6kh3 (6, 5, 4, [1]) + 2 = 17`; dropped dice are in brackets."""
    pieces: list[str] = []
    for index, part in enumerate(result.parts):
        if index:  # the grammar never lets the first term carry a sign
            pieces.append(_sign(part))
        if isinstance(part, DiceRoll):
            if part.chains:
                shown = [_chain_text(part.term, chain) for chain in part.chains]
            else:
                shown = [str(face) for face in part.faces]
            faces = ", ".join(text if kept else f"[{text}]" for text, kept in zip(shown, part.kept))
            pieces.append(f"{part.term.text} ({faces})")
        else:
            pieces.append(str(part.value))
    line = " ".join(pieces)
    caps = sorted({term.explode.cap for term in result.expression.dice if term.explode is not None})
    if caps:
        line += f" = {result.total}" if result.successes is None else ""
        capped = f"(a die explodes at most {caps[0]} times)"
        if result.successes is None:
            return f"{line} {capped}"
        noun = "success" if result.successes == 1 else "successes"
        return f"{line} = {result.successes} {noun} (hit {result.hit}+) {capped}"
    if result.successes is None:
        return f"{line} = {result.total}"
    noun = "success" if result.successes == 1 else "successes"
    return f"{line} = {result.successes} {noun} (hit {result.hit}+)"


def _chain_text(term: Dice, chain: tuple[tuple[int, ...], ...]) -> str:
    """One die as the line shows it: rerolled faces then the one that stood (`1→4`), exploded rolls
    joined by `+` (`6+6+2`), Fudge faces as `+`, `0` and `-`."""
    return "+".join("→".join(_face_text(term, face) for face in roll) for roll in chain)


def _face_text(term: Dice, face: int) -> str:
    return ("-", "0", "+")[face - 1] if term.fudge else str(face)


def _counted_pieces(part: DiceRoll) -> list[tuple[bool, int]]:
    """What a kept part adds, piece by piece, as (negative, amount): faces, or successes and failures."""
    term = part.term
    signs: list[tuple[bool, int]] = []
    if not part.chains:
        return [(term.negative, face) for face, kept in zip(part.faces, part.kept) if kept]
    kept_chains = [chain for chain, kept in zip(part.chains, part.kept) if kept]
    if term.successes is not None:
        values = [term_value(term, [list(roll) for roll in chain]) for chain in kept_chains]
        hits, misses = sum(v for v in values if v > 0), -sum(v for v in values if v < 0)
        return [(term.negative, hits), (not term.negative, misses)] if misses else [(term.negative, hits)]
    for chain in kept_chains:
        for roll in chain:
            value = term.face_value(roll[-1])
            signs.append((term.negative != (value < 0), abs(value)))
    return signs


def sum_line(result: Roll) -> str:
    """The total as a sum of what counted, such as `9 = 4 + 4 + 1` (dropped dice left out)."""
    pieces: list[str] = []
    for part in result.parts:
        if isinstance(part, DiceRoll):
            pieces += [f"{'-' if negative else '+'} {amount}" for negative, amount in _counted_pieces(part)]
        else:
            pieces.append(f"{'-' if part.negative else '+'} {part.value}")
    joined = " ".join(pieces)
    return f"{result.total} = {joined[2:] if joined.startswith('+ ') else joined}"


def roll_to_json(result: Roll) -> dict[str, Any]:
    """The roll as plain data: notation, each term with faces and kept flags, total, and successes if read so."""
    terms: list[dict[str, Any]] = []
    for part in result.parts:
        if isinstance(part, DiceRoll):
            term: dict[str, Any] = {
                "dice": part.term.text,
                "sign": _sign(part),
                "faces": list(part.faces),
                "kept": list(part.kept),
                "subtotal": part.subtotal,
            }
            if part.chains:
                term["rolls"] = [[list(roll) for roll in chain] for chain in part.chains]
            if part.term.explode is not None:
                term["cap"] = part.term.explode.cap
            terms.append(term)
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
