"""One die as rolled: its chain of rolls (rerolls and explosions), its value, and which dice a term keeps.

Shared by the roller (`gm.dice.roller`) and the itemised result (`gm.dice.result`), which works the
chains out again from the faces a roll keeps, in the order they were rolled. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

from gm.dice.tree import Dice
from gm.errors import DiceError

DiceSource = Callable[[int, int], list[int]]


Chain = list[list[int]]  # one die: its rolls in order, each roll its faces (rerolled ones first, the last stands)
MAX_REROLLS = 1000  # a die whose faces keep asking for rerolls this long comes from a broken source


def roll_term(term: Dice, source: DiceSource) -> tuple[tuple[int, ...], list[Chain]]:
    """One dice term's faces in the order rolled, and each die's chain of rolls.

    The order rolled, which is also how typed faces and fair dice are read: one roll for every die;
    then, for a reroll, one more for each die whose face asks for it, in die order (again, for `r`,
    until none does); then, for an explosion, one roll for each die whose last roll exploded, rerolled
    in turn, and so on up to the cap."""
    if term.plain:
        faces = tuple(source(term.count, term.sides))
        return faces, [[[face]] for face in faces]
    flat: list[int] = []
    chains: list[Chain] = [[] for _ in range(term.count)]
    pending = list(range(term.count))
    reroll, explode = term.reroll, term.explode
    depth = 0
    while pending:
        drawn = source(len(pending), term.sides)
        flat += drawn
        rolls = [[face] for face in drawn]
        if reroll is not None:
            asking = [index for index, face in enumerate(drawn) if face in reroll.faces]
            times = 0
            while asking:
                again = source(len(asking), term.sides)
                flat += again
                for index, face in zip(asking, again):
                    rolls[index].append(face)
                times += 1
                if reroll.once:
                    break
                if times > MAX_REROLLS:
                    raise DiceError(term.text, f"a die was rerolled {times} times; the dice source is not random")
                asking = [index for index in asking if rolls[index][-1] in reroll.faces]
        for die, roll_faces in zip(pending, rolls):
            chains[die].append(roll_faces)
        if explode is None or depth == explode.cap:
            break
        pending = [die for die, roll_faces in zip(pending, rolls) if roll_faces[-1] in explode.faces]
        depth += 1
    return tuple(flat), chains


def die_total(term: Dice, chain: Chain) -> int:
    """One die's value to add and rank by: its standing face, or the sum of its chain of rolls."""
    if term.fudge:
        return sum(roll_faces[-1] - 2 for roll_faces in chain)
    return sum(roll_faces[-1] for roll_faces in chain)


def term_value(term: Dice, chain: Chain) -> int:
    """What one kept die adds to its term: its total, or its count of successes less failures."""
    counting = term.successes
    if counting is None:
        return die_total(term, chain)
    if term.counts_each_roll:
        return sum(counting.value(roll_faces[-1]) for roll_faces in chain)
    return counting.value(die_total(term, chain))


def kept_dice(term: Dice, chains: list[Chain]) -> tuple[bool, ...]:
    """Which dice count: ranked by value, and among equal values the first rolled is kept."""
    if term.keep is None:
        return (True,) * len(chains)
    values = [die_total(term, chain) for chain in chains]
    order = sorted(range(len(values)), key=values.__getitem__, reverse=term.keep.highest)
    chosen = set(order[: term.kept])
    return tuple(index in chosen for index in range(len(values)))
