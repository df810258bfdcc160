"""The dice engine: notation -> parse -> roll (itemised) -> exact odds. Pure: no I/O, no models.

>>> from gm import dice
>>> expression = dice.parse("4d6kh3+2")
>>> str(dice.roll(expression, dice.GivenFaces([6, 5, 4, 1])))
'4d6kh3 (6, 5, 4, [1]) + 2 = 17'
>>> dice.odds("2d6").probability(7)
Fraction(1, 6)
"""

from gm.dice.bounds import bounds, spans
from gm.dice.odds import Odds, estimate_cost, odds
from gm.dice.parser import parse
from gm.dice.result import DiceRoll, Roll
from gm.dice.roller import (
    DiceSource,
    GivenFaces,
    PerRollSource,
    check_successes,
    for_one_roll,
    random_source,
    replay,
    require_dice,
    roll,
    seeded_source,
    system_source,
)
from gm.dice.tree import Constant, Dice, Explode, Expression, FaceSet, Keep, Reroll, Successes
from gm.errors import DiceError, DiceLimitError, DiceSyntaxError

__all__ = [
    "Constant",
    "Dice",
    "DiceError",
    "DiceLimitError",
    "DiceRoll",
    "DiceSource",
    "DiceSyntaxError",
    "Explode",
    "Expression",
    "FaceSet",
    "GivenFaces",
    "Keep",
    "Odds",
    "PerRollSource",
    "Reroll",
    "Roll",
    "Successes",
    "bounds",
    "check_successes",
    "estimate_cost",
    "for_one_roll",
    "odds",
    "parse",
    "random_source",
    "replay",
    "require_dice",
    "roll",
    "seeded_source",
    "spans",
    "system_source",
]
