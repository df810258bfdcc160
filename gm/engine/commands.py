"""Player commands typed in chat: `/roll`, `/dice`, `/open`, `/sheet`, `/regenerate`, `/abandon`, `/end`, `/help`,
`/quit`.

Anything not starting with `/` is a message for the game master. An unknown `/command` is an error,
never a message to the model, and so is bad notation in `/roll`: nothing is rolled, stored or sent.
So is a line a story cannot store (a NUL character or half a surrogate pair, see `gm._text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gm import dice
from gm._text import unstorable
from gm.engine.results import PlayerRoll
from gm.errors import CommandError

HELP = """\
Type what your character does, and the game master answers.
  /roll NOTATION [what for]  roll your own dice, e.g. /roll 2d6+1 pick the lock
  /dice shown | hidden       show the dice under the narration, or not
  /open                      show the last round's dice in full
  /sheet                     show the characters' sheets as they are now
  /regenerate                a new telling of the last round, with the same dice
  /abandon                   drop the round waiting for your dice (its rolls stay)
  /end                       end the story: its secret rolls are shown, and it plays no more rounds
  /help                      this help
  /quit                      leave (the story is saved; continue with gm play --story ID)"""


MAX_LINE = 4000  # characters in one player's turn, in the terminal and on the play page alike (its text box says so)


@dataclass(frozen=True, slots=True)
class Say:
    """Words for the game master."""

    text: str


@dataclass(frozen=True, slots=True)
class RollDice:
    """`/roll`: the player's own dice, rolled when the round starts."""

    text: str
    roll: PlayerRoll


@dataclass(frozen=True, slots=True)
class SetDice:
    """`/dice shown` or `/dice hidden`."""

    setting: Literal["shown", "hidden"]


@dataclass(frozen=True, slots=True)
class Simple:
    """A command without arguments."""

    name: Literal["open", "sheet", "regenerate", "abandon", "end", "help", "quit"]


Command = Say | RollDice | SetDice | Simple


def parse_command(line: str) -> Command | None:
    """What a chat line asks for; None for a blank line. Raises `CommandError` for bad commands."""
    text = line.strip()
    if not text:
        return None
    if len(text) > MAX_LINE:
        raise CommandError(
            f"that is {len(text):,} characters long; at most {MAX_LINE:,} fit in one turn, so nothing was sent"
        )
    problem = unstorable(text)
    if problem is not None:
        raise CommandError(f"the line {problem}, which a story cannot store; type it again without it")
    if not text.startswith("/"):
        return Say(text)
    # Any whitespace ends the command's name: "/roll" then a tab is /roll, not a command "roll\t2d6".
    name, _, rest = text[1:].replace("\t", " ").partition(" ")
    name, rest = name.lower(), rest.strip()
    if name == "roll":
        return RollDice(text, _player_roll(rest))
    if name == "dice":
        if rest.lower() not in ("shown", "hidden"):
            raise CommandError("say /dice shown or /dice hidden")
        return SetDice("shown" if rest.lower() == "shown" else "hidden")
    if name in ("open", "sheet", "regenerate", "abandon", "end", "help", "quit"):
        if rest:
            raise CommandError(f"/{name} takes nothing after it")
        return Simple(name)  # type: ignore[arg-type]  # checked against the names just above
    if name in ("exit", "q"):
        return Simple("quit")
    raise CommandError(f"there is no command /{name}; type /help for the commands")


def _player_roll(rest: str) -> PlayerRoll:
    """The notation is the longest run of leading words that parses ("2d6 + 1 pick the lock"), read as
    `gm roll` reads notation, and it must roll dice.

    Two readings are refused rather than guessed at: a next word that would continue the notation's last
    term if the space were not there (`2 d6` is "2d6" written with a space inside the term, as `gm roll
    2 d6` says, not the constant 2 "for d6"), and notation without a dice term (`/roll 7`), which would
    hand the game master a number nobody rolled. A next word starting with digits after digits (`1d20 1
    more try`) is words: joining them would make another number, not finish a term.
    """
    if not rest:
        raise CommandError("say what to roll, such as /roll 2d6+1 pick the lock")
    words = rest.split()
    for count in range(len(words), 0, -1):
        notation = " ".join(words[:count])
        try:
            expression = dice.parse(notation)
        except dice.DiceError:
            continue
        if count < len(words):
            _refuse_a_split_term(notation, words[count])
        try:
            dice.require_dice(expression)
        except dice.DiceError as error:
            raise CommandError(str(error)) from None
        return PlayerRoll(expression, " ".join(words[count:]))
    try:
        dice.parse(words[0])
    except dice.DiceError as error:
        raise CommandError(str(error)) from None
    raise AssertionError("unreachable: a word that parses would have been found above")


def _refuse_a_split_term(notation: str, word: str) -> None:
    """Refuse, as `gm roll` would, notation followed by a word that would have continued its last term."""
    if notation[-1].isdigit() and word[0].isdigit():
        return  # "1d20 1 more try": glued, the digits would only make a different number
    try:
        dice.parse(notation + word)
    except dice.DiceError:
        return  # glued on, the word still is not notation: it is the start of what the roll is for
    try:
        dice.parse(f"{notation} {word}")
    except dice.DiceError as error:
        raise CommandError(str(error)) from None
