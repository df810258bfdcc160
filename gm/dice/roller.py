"""Rolling an `Expression`: dice sources, and the itemised result of one roll.

A dice source is any function `(count, sides) -> list[int]` giving `count` faces from 1 to `sides`.
The default is the operating system's random source; `seed=N` gives a reproducible one; `GivenFaces`
hands out faces a player rolled on physical dice.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from typing import Protocol, cast, runtime_checkable

from gm.dice._chains import MAX_REROLLS
from gm.dice.parser import parse
from gm.dice.result import Roll
from gm.dice.tree import Constant, Dice, Expression
from gm.errors import DiceError

DiceSource = Callable[[int, int], list[int]]


@runtime_checkable
class PerRollSource(Protocol):
    """A dice source whose faces depend on which roll they belong to (such as `gm.integrity.fair.FairDice`).

    Whoever rolls calls `start_roll` before each roll and rolls with the source it returns.
    """

    def start_roll(self) -> DiceSource: ...


def for_one_roll(source: DiceSource | None) -> DiceSource | None:
    """The source to roll one roll with: a per-roll source is told a roll starts; any other is itself."""
    # getattr, not isinstance: a runtime-checkable Protocol's isinstance costs more than rolling a d20.
    start = getattr(source, "start_roll", None)
    return cast(DiceSource, start()) if start is not None else source


def random_source(rng: random.Random) -> DiceSource:
    """A dice source drawing from `rng`.

    A face is `floor(rng.random() * sides) + 1`, as `random.choices` draws: with 53-bit floats each
    face's chance is within 2**-53 of 1/sides, far below anything a table could ever notice, and it
    is the fastest fair draw the standard library offers.
    """
    draw = rng.random

    def roll_faces(count: int, sides: int) -> list[int]:
        if count == 1:  # the common single die, without building a loop
            return [int(draw() * sides) + 1]
        return [int(draw() * sides) + 1 for _ in repeat(None, count)]

    return roll_faces


def system_source() -> DiceSource:
    """The default source: the operating system's random numbers, which nobody can seed or predict."""
    return random_source(secrets.SystemRandom())


def seeded_source(seed: int) -> DiceSource:
    """A reproducible source: the same seed rolls the same faces (for tests and replays, not for play)."""
    return random_source(random.Random(seed))


class GivenFaces:
    """A dice source that hands out faces rolled elsewhere (physical dice typed in by a player), in order."""

    def __init__(self, faces: Iterable[int]) -> None:
        self.faces = list(faces)
        self.used = 0

    def __call__(self, count: int, sides: int) -> list[int]:
        taken = self.faces[self.used : self.used + count]
        if len(taken) < count:
            raise DiceError("", f"{len(self.faces)} faces were given but the roll needs more")
        for face in taken:
            if not isinstance(face, int) or isinstance(face, bool) or not 1 <= face <= sides:
                raise DiceError("", f"a d{sides} shows 1 to {sides}, but {face!r} was given")
        self.used += count
        return taken

    @property
    def left_over(self) -> int:
        """Faces given but not used by the rolls so far."""
        return len(self.faces) - self.used


def roll(
    notation: str | Expression,
    source: DiceSource | None = None,
    *,
    seed: int | None = None,
    hit: int | None = None,
) -> Roll:
    """Roll dice notation (text or parsed) once.

    `source` decides the faces; without it, `seed` gives a reproducible source, and otherwise the
    system random source is used. `hit` reads the roll as a count of successes.
    """
    expression = notation if isinstance(notation, Expression) else parse(notation)
    if source is None:
        source = _SYSTEM if seed is None else seeded_source(seed)
    if hit is not None:
        check_successes(expression, hit)
    if not expression.plain:
        return _roll_terms(expression, [source] * len(expression.dice), hit)
    total = expression.constant
    successes = 0
    rolled: list[tuple[int, ...]] = []
    for term in expression.dice:
        faces = tuple(source(term.count, term.sides))
        rolled.append(faces)
        if term.keep is None:
            kept: Sequence[int] = faces
        else:
            kept = sorted(faces)[term.kept_slice]
        subtotal = sum(kept)
        total += -subtotal if term.negative else subtotal
        if hit is not None:
            successes += sum(1 for face in kept if face >= hit)
    if hit is None:
        return Roll(expression, tuple(rolled), total)
    return Roll(expression, tuple(rolled), total, hit, successes)


def replay(notation: str | Expression, faces: Sequence[Sequence[int]], *, hit: int | None = None) -> Roll:
    """The roll that `faces` (one list a dice term, in the order rolled, as a `Roll` keeps them) make of
    `notation`; a `DiceError` in one sentence when they are not what it rolls."""
    expression = notation if isinstance(notation, Expression) else parse(notation)
    if hit is not None:
        check_successes(expression, hit)
    if len(faces) != len(expression.dice):
        wanted = len(expression.dice)
        raise DiceError(expression.text, f"{len(faces)} lists of faces were given, expected one for each of {wanted}")
    sources = [GivenFaces(given) for given in faces]
    result = _roll_terms(expression, list(sources), hit)
    for term, source in zip(expression.dice, sources):
        if source.left_over:
            raise DiceError(
                expression.text,
                f"{term.text} at column {term.column} rolled {source.used} faces, but {len(source.faces)} were given",
            )
    return result


def _roll_terms(expression: Expression, sources: list[DiceSource], hit: int | None) -> Roll:
    """A roll of any notation, each dice term with its own source (the same one, when rolling).

    Rerolled and exploding dice are rolled without building their chains (`roll_term` does that when a
    roll is itemised), in exactly the order `roll_term` draws, so that the stored faces read back alike."""
    total = expression.constant
    successes = 0
    rolled: list[tuple[int, ...]] = []
    for term, source in zip(expression.dice, sources):
        if term.plain:
            faces = tuple(source(term.count, term.sides))
            rolled.append(faces)
            kept: Sequence[int] = faces if term.keep is None else sorted(faces)[term.kept_slice]
            subtotal = sum(kept)
            if hit is not None:
                successes += sum(1 for face in kept if face >= hit)
        else:
            flat, totals, standing = _quick_term(term, source)
            rolled.append(tuple(flat))
            kept = totals if term.keep is None else sorted(totals)[term.kept_slice]
            counting = term.successes
            if counting is None:
                subtotal = sum(kept)
            elif term.counts_each_roll:  # every roll counts; keep is refused with `!` counts
                subtotal = sum(map(counting.value, standing))
            else:
                subtotal = sum(map(counting.value, kept))
            if hit is not None:
                counted_faces = standing if term.counts_each_roll else kept
                successes += sum(1 for face in counted_faces if face >= hit)
        total += -subtotal if term.negative else subtotal
    if hit is None:
        return Roll(expression, tuple(rolled), total)
    return Roll(expression, tuple(rolled), total, hit, successes)


def _quick_term(term: Dice, source: DiceSource) -> tuple[list[int], list[int], list[int]]:
    """One rerolled, exploding, counted or Fudge term: its faces in the order rolled (as `roll_term` draws
    them), each die's value, and the standing face of every roll."""
    sides = term.sides
    flat = source(term.count, sides)
    drawn = _rerolled(term, flat, flat, source) if term.reroll is not None else flat
    explode = term.explode
    if explode is None:
        return flat, ([face - 2 for face in drawn] if term.fudge else drawn), drawn
    low, high = explode.faces.low, explode.faces.high
    pending = [die for die, face in enumerate(drawn) if low <= face <= high]
    if not pending:  # the common roll: nothing exploded
        return flat, drawn, drawn
    flat = list(flat)
    totals = list(drawn)
    standing = list(drawn)
    for _ in range(explode.cap):
        again = source(len(pending), sides)
        flat += again
        if term.reroll is not None:
            again = _rerolled(term, again, flat, source)
        for die, face in zip(pending, again):
            totals[die] += face
        standing += again
        pending = [die for die, face in zip(pending, again) if low <= face <= high]
        if not pending:
            break
    return flat, totals, standing


def _rerolled(term: Dice, drawn: list[int], flat: list[int], source: DiceSource) -> list[int]:
    """The faces that stand once the reroll is done with `drawn`; the faces rolled again join `flat`."""
    reroll = term.reroll
    assert reroll is not None
    low, high = reroll.faces.low, reroll.faces.high
    asking = [index for index, face in enumerate(drawn) if low <= face <= high]
    if not asking:
        return drawn
    standing = list(drawn)
    times = 0
    while asking:
        again = source(len(asking), term.sides)
        flat += again
        for index, face in zip(asking, again):
            standing[index] = face
        times += 1
        if reroll.once:
            break
        if times > MAX_REROLLS:
            raise DiceError(term.text, f"a die was rerolled {times} times; the dice source is not random")
        asking = [index for index in asking if low <= standing[index] <= high]
    return standing


def check_successes(expression: Expression, hit: int) -> None:
    """Refuse notation that cannot be read as successes: constants, subtracted dice, an unreachable hit."""
    for term in expression.terms:
        if isinstance(term, Constant):
            raise DiceError(
                expression.text,
                f"a successes reading counts dice, so the constant at column {term.column} has no place",
            )
        if term.negative:
            raise DiceError(
                expression.text,
                f"a successes reading counts dice, so the subtracted dice at column {term.column} have no place",
            )
        if term.successes is not None:
            raise DiceError(
                expression.text,
                f"{term.text} at column {term.column} counts its own successes, so a successes reading with a "
                "hit has no place; read its total instead",
            )
        if term.fudge:
            raise DiceError(
                expression.text,
                f"Fudge dice are read as their total, so the successes reading of {term.text} at column "
                f"{term.column} has no place",
            )
        if term.counts_each_roll and term.keep is not None:
            raise DiceError(
                expression.text,
                f"{term.text} at column {term.column} counts every exploding roll, so it cannot also keep or drop "
                "dice; compound the explosions with '!!' to count one value a die",
            )
    largest = max(_highest_face(term) for term in expression.dice)
    if isinstance(hit, bool) or not isinstance(hit, int) or not 1 <= hit <= largest:
        raise DiceError(expression.text, f"hit {hit} can never be rolled, expected a face from 1 to {largest}")


def _highest_face(term: Dice) -> int:
    """The highest face a successes reading can compare: a compounded die's highest sum, else its sides."""
    if term.explode is not None and term.explode.compound:
        return term.die_high
    return max(term.settled_faces())


def require_dice(expression: Expression) -> None:
    """Refuse notation that rolls nothing: a roll someone is told of as a fact must come from dice."""
    if not expression.dice:
        raise DiceError(
            expression.text,
            "there are no dice to roll here, only a number; a roll needs dice, such as 1d20 or 2d6+1",
        )


_SYSTEM = system_source()
