"""Dice rolled at the table: the question a check asks the player, and reading the faces typed in answer.

A story started with `dice_from: "player"` (`gm play --dice-from player`, the API's story start, the
play page) rolls no check itself: when the game master calls roll_check, the round pauses and asks
"Roll 1d20 for Lockwork and fine hands, Odile: type the faces". The faces typed are checked here, one
sentence for a wrong answer (the question stands), and the round then goes on exactly as if the
engine had rolled them (`gm.engine._resume`). Plain dice (`roll_dice`) and `/roll` are rolled as before, and
so are secret checks (gm.integrity.secret): the player cannot roll a die they must not see.

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
    """The question a check puts to the player, naming its dice, what they are for, and who rolls."""
    count = sum(term.count for term in expression.dice)
    shapes = [f"d{term.sides}" for term in expression.dice for _ in range(term.count)]
    hint = "" if count == 1 else f" ({count} faces, in order: {', '.join(shapes)})"
    return QuestionPublic(
        round=number,
        check=check_key,
        check_name=check_name,
        character=character,
        notation=expression.text,
        dice=shapes,
        text=f"Roll {expression.text} for {check_name}, {character}: type the faces{hint}",
    )


def read_faces(text: str, question: QuestionPublic) -> list[int]:
    """The faces typed for `question`, each on its die, in order; `WrongFaces` with one sentence otherwise."""
    if len(text) > MAX_FACES_TEXT:
        raise WrongFaces(f"that answer is {len(text)} characters long; type just the faces, such as 14")
    words = [word for word in _SEPARATORS.split(text.strip()) if word]
    wanted = len(question.dice)
    if not words:
        raise WrongFaces(f"type the faces of {question.notation}, such as {_example(question)}")
    faces: list[int] = []
    for place, word in enumerate(words, 1):
        if not word.isascii() or not word.isdigit():
            shown = word if len(word) <= 20 else word[:20] + "..."
            raise WrongFaces(
                f"'{shown}' (word {place}) is not a face; type whole numbers, such as {_example(question)}"
            )
        faces.append(int(word))
    if len(faces) != wanted:
        needed = "1 face" if wanted == 1 else f"{wanted} faces"
        raise WrongFaces(f"{question.notation} needs {needed}, and {len(faces)} were typed")
    for place, (face, shape) in enumerate(zip(faces, question.dice), 1):
        sides = int(shape[1:])
        if not 1 <= face <= sides:
            raise WrongFaces(f"face {place} ({face}) is not on a {shape}, which shows 1 to {sides}")
    return faces


def _example(question: QuestionPublic) -> str:
    return " ".join(str(min(int(shape[1:]), 14 - place)) for place, shape in enumerate(question.dice[:3]))
