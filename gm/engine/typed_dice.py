"""Dice rolled at the table: the question a check asks the player, and reading the faces typed in answer.

A story started with `dice_from: "player"` (`gm play --dice-from player`, the API's story start, the
play page) rolls no check itself: when the game master calls roll_check, the round pauses and asks
"Roll 1d20 for Lockwork and fine hands, Odile: type the faces". The faces typed are checked here, one
sentence for a wrong answer (the question stands), and the round then goes on exactly as if the
engine had rolled them (`gm.engine.round.continue_round`). Plain dice (`roll_dice`) and `/roll` are rolled by
the engine in such a story too, and so are secret checks (gm.integrity.secret): the player cannot roll a die
they must not see.

Pure: no I/O. `FacesNeeded` is how the tools tell the round loop that a check waits for the player.
"""

from __future__ import annotations

import re
from typing import Literal

from gm import dice
from gm.errors import WrongFaces
from gm.transcript.shapes import QuestionPublic

DiceFrom = Literal["engine", "player"]
MAX_FACES_TEXT = 1000  # a hundred dice of three digits, with room for commas and spaces
_SEPARATORS = re.compile(r"[\s,;]+")


class FacesNeeded(Exception):
    """Raised by roll_check in a story whose dice the player rolls: the round pauses here for `question`.

    Not a `GmError`: it never reaches a player as an error. The round loop catches it, keeps the round
    as data (`gm.engine._resume`) and answers with the question.
    """

    def __init__(self, question: QuestionPublic) -> None:
        super().__init__(question.text)
        self.question = question


def question_for(
    number: int, check_key: str, check_name: str, character: str, expression: dice.Expression
) -> QuestionPublic:
    """The question a check puts to the player, naming its dice, what they are for, and who rolls; for
    rerolled and exploding dice, how many more faces each die may need and in which order to type them."""
    count = sum(term.count for term in expression.dice)
    shapes = [_shape(term) for term in expression.dice for _ in range(term.count)]
    if expression.plain:
        hint = "" if count == 1 else f" ({count} faces, in order: {', '.join(shapes)})"
    else:
        first = "1 face" if count == 1 else f"{count} faces, one a die: {', '.join(shapes)}"
        rules = [rule for term in expression.dice for rule in _rules(term)]
        more = "; ".join(rules)
        chained = any(term.reroll is not None or term.explode is not None for term in expression.dice)
        order = "; then the faces rolled again or added, in the order you roll them" if chained else ""
        hint = f" ({first}{'; ' + more if more else ''}{order})"
    return QuestionPublic(
        round=number,
        check=check_key,
        check_name=check_name,
        character=character,
        notation=expression.text,
        dice=shapes,
        text=f"Roll {expression.text} for {check_name}, {character}: type the faces{hint}",
    )


def _shape(term: dice.Dice) -> str:
    return "dF" if term.fudge else f"d{term.sides}"


def _faces_text(faces: dice.FaceSet, sides: int) -> str:
    """A set of faces in words: "6", "8 or more", "2 or less", "3 to 5"."""
    if faces.low == faces.high:
        return str(faces.low)
    if faces.high >= sides:
        return f"{faces.low} or more"
    if faces.low <= 1:
        return f"{faces.high} or less"
    return f"{faces.low} to {faces.high}"


def _rules(term: dice.Dice) -> list[str]:
    """What a term asks of the player beyond one face a die."""
    rules: list[str] = []
    shape = _shape(term)
    if term.fudge:
        rules.append("type a Fudge die as -, 0 or +")
    if term.reroll is not None:
        which = _faces_text(term.reroll.faces, term.sides)
        if term.reroll.once:
            rules.append(f"roll each {which} on a {shape} once more, and that face stands")
        else:
            rules.append(f"roll each {which} on a {shape} again until it shows another face")
    if term.explode is not None:
        which = _faces_text(term.explode.faces, term.sides)
        rules.append(f"each {which} on a {shape} adds one more {shape}, at most {term.explode.cap} more a die")
    return rules


FUDGE_FACES = {"-": 1, "-1": 1, "\u2212": 1, "0": 2, "+": 3, "+1": 3, "1": 3}


def read_faces(text: str, question: QuestionPublic) -> list[int]:
    """The faces typed for `question`, each on its die, in order; `WrongFaces` with one sentence otherwise."""
    if len(text) > MAX_FACES_TEXT:
        raise WrongFaces(f"that answer is {len(text)} characters long; type just the faces, such as 14")
    words = [word for word in _SEPARATORS.split(text.strip()) if word]
    wanted = len(question.dice)
    if not words:
        raise WrongFaces(f"type the faces of {question.notation}, such as {_example(question)}")
    try:
        expression = dice.parse(question.notation)
    except dice.DiceError as error:  # a question is only ever asked of notation that parses
        raise WrongFaces(str(error)) from None
    fudge_only = bool(expression.dice) and all(term.fudge for term in expression.dice)
    faces: list[int] = []
    for place, word in enumerate(words, 1):
        if fudge_only and word in FUDGE_FACES:
            faces.append(FUDGE_FACES[word])
            continue
        if not word.isascii() or not word.isdigit():
            shown = word if len(word) <= 20 else word[:20] + "..."
            raise WrongFaces(
                f"'{shown}' (word {place}) is not a face; type whole numbers, such as {_example(question)}"
            )
        faces.append(int(word))
    if expression.plain:
        if len(faces) != wanted:
            needed = "1 face" if wanted == 1 else f"{wanted} faces"
            raise WrongFaces(f"{question.notation} needs {needed}, and {len(faces)} were typed")
        for place, (face, shape) in enumerate(zip(faces, question.dice), 1):
            sides = int(shape[1:])
            if not 1 <= face <= sides:
                raise WrongFaces(f"face {place} ({face}) is not on a {shape}, which shows 1 to {sides}")
        return faces
    return _chained(expression, faces)


def _chained(expression: dice.Expression, faces: list[int]) -> list[int]:
    """Typed faces of rerolled or exploding dice: as many as the roll asks for, each on its die."""
    given = dice.GivenFaces(faces)
    try:
        dice.roll(expression, given)
    except dice.DiceError as error:
        if "faces were given but the roll needs more" in error.problem:
            raise WrongFaces(
                f"{expression.text} needs more faces than the {len(faces)} typed: type each reroll and each added "
                "die too, in the order rolled"
            ) from None
        raise WrongFaces(error.problem) from None
    if given.left_over:
        raise WrongFaces(
            f"{expression.text} used {given.used} of the {len(faces)} faces typed; type only the faces it rolled"
        )
    return faces


def _example(question: QuestionPublic) -> str:
    if question.dice and all(shape == "dF" for shape in question.dice):
        return "+ 0 -"[: 2 * min(3, len(question.dice)) - 1]
    return " ".join(str(min(int(shape[1:]), 14 - place)) for place, shape in enumerate(question.dice[:3]))
