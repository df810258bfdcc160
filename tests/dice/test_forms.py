"""Rerolls, explosions, Fudge dice and success counting: their rolls, exact odds and reachable values.

Three independent references: icepool (its `reroll`, `explode` and pools, bench/icepool_dice.py), a brute
force that enumerates every sequence of faces the roller can draw (so the odds agree with what is rolled),
and the notation's meaning written out by hand for a few small cases. Caps are kept small with a filler
of d1s (`+94d1`), which leaves the exploding dice little of the 100 dice to explode into.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from gm import dice
from gm.dice.joint import joint, mask_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from icepool_dice import expression_die  # the bench's icepool equivalents, shared with the tests


def icepool_odds(expression: dice.Expression, hit: int | None = None) -> dict[int, Fraction]:
    die = expression_die(expression, hit)
    denominator = die.denominator()
    return {outcome: Fraction(quantity, denominator) for outcome, quantity in die.items() if quantity}


def outcomes(expression: dice.Expression, hit: int | None = None) -> Iterator[tuple[dice.Roll, Fraction]]:
    """Every complete roll the roller can make, with its chance: each face it draws is one of its die's faces.
    (Not for `r`, which may reroll without end: icepool checks it.)"""
    assert all(term.reroll is None or term.reroll.once for term in expression.dice)
    pending: list[list[list[int]]] = [[[] for _ in expression.dice]]
    while pending:
        faces = pending.pop()
        try:
            rolled = dice.replay(expression, faces, hit=hit)
        except dice.DiceError as error:
            if "faces were given but the roll needs more" not in error.problem:
                raise
            index = next(i for i, term in enumerate(expression.dice) if _short(term, faces[i]))
            for face in range(1, expression.dice[index].sides + 1):
                pending.append([*faces[:index], [*faces[index], face], *faces[index + 1 :]])
            continue
        chance = Fraction(1)
        for term, term_faces in zip(expression.dice, faces):
            chance /= term.sides ** len(term_faces)
        yield rolled, chance


def _short(term: dice.Dice, faces: list[int]) -> bool:
    source = dice.GivenFaces(faces)
    try:
        dice.roll(dice.Expression(term.text, (term,)), source)
    except dice.DiceError:
        return True
    return False


def _draws(expression: dice.Expression) -> int:
    """A bound on how many sequences of faces the roller can draw for `expression`."""
    bound = 1
    for term in expression.dice:
        rolls = term.count * (1 + (term.explode.cap if term.explode else 0)) * (2 if term.reroll else 1)
        bound *= term.sides**rolls
    return bound


def brute_force(expression: dice.Expression, hit: int | None = None) -> dict[int, Fraction]:
    found: dict[int, Fraction] = {}
    for rolled, chance in outcomes(expression, hit):
        value = rolled.total if hit is None else rolled.successes
        assert value is not None
        found[value] = found.get(value, Fraction(0)) + chance
    return found


# Small notations of every new form, as text: one term with its modifiers, maybe another, and a filler.

FACES = st.sampled_from(["", "1", "=2", "<3", "<=2", ">4", ">=5"])


@st.composite
def forms(draw: st.DrawFn) -> str:
    fudge = draw(st.booleans()) and draw(st.booleans())
    count = draw(st.integers(1, 4))
    sides = draw(st.integers(2, 8))
    term = f"{count}d{'F' if fudge else sides}"
    modifiers: list[str] = []
    if not fudge:
        if draw(st.booleans()):
            modifiers.append(draw(st.sampled_from(["r", "ro"])) + draw(FACES))
        if draw(st.booleans()):
            modifiers.append(draw(st.sampled_from(["!", "!!"])) + draw(FACES))
        if draw(st.booleans()):
            counted = draw(st.sampled_from([">=", "<=", ">", "="])) + str(draw(st.integers(1, sides)))
            if draw(st.booleans()):
                counted += "f" + draw(st.sampled_from(["1", "<2", "=1"]))
            modifiers.append(counted)
    if count > 1 and draw(st.booleans()):
        modifiers.append(draw(st.sampled_from(["kh", "kl", "dh", "dl"])) + str(draw(st.integers(1, count - 1))))
    modifiers = draw(st.permutations(modifiers))
    text = term + "".join(modifiers)
    if draw(st.booleans()):
        text += draw(st.sampled_from(["+1d4", "-1d3", "+2", "-1"]))
    return text + f"+{draw(st.integers(88, 95))}d1"


def parsed(text: str) -> dice.Expression:
    try:
        return dice.parse(text)
    except dice.DiceError:
        assume(False)
        raise


FORMS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


@FORMS
@given(forms())
def test_exact_odds_sum_to_one_and_match_icepool(text: str) -> None:
    expression = parsed(text)
    result = dice.odds(expression)
    assert result.exact
    assert sum(result.counts) == result.denominator
    assert dict(result.items()) == icepool_odds(expression)


@FORMS
@given(forms(), st.integers(0, 2**32))
@example("1d2!!=2=2+88d1", 0)  # a compounded d2 is never 2: no success is in reach, though a d2 can show 2
def test_rolls_stay_inside_the_exact_support(text: str, seed: int) -> None:
    expression = parsed(text)
    support = {value for value, _ in dice.odds(expression).items()}
    reach = {value for low, high in dice.spans(expression) for value in range(low, high + 1)}
    assert reach == support
    assert dice.bounds(expression) == (min(support), max(support))
    source = dice.seeded_source(seed)
    for _ in range(20):
        rolled = dice.roll(expression, source)
        assert rolled.total in support
        again = dice.replay(expression, rolled.faces)  # the faces kept are exactly the faces the roll drew
        assert (again.total, str(again)) == (rolled.total, str(rolled))
        # The itemised chains (built apart from the roll's quick path) add up to the same total.
        parts = rolled.parts
        assert sum(p.subtotal if isinstance(p, dice.DiceRoll) else p.signed for p in parts) == rolled.total


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(forms())
@pytest.mark.slow
def test_exact_odds_are_what_the_roller_rolls(text: str) -> None:
    expression = parsed(text)
    assume(all(term.reroll is None or term.reroll.once for term in expression.dice))
    assume(_draws(expression) <= 1500)
    assert dict(dice.odds(expression).items()) == brute_force(expression)


@pytest.mark.parametrize(
    ("text", "hit"),
    [("2d4!+96d1", 3), ("4d6!!+92d1", 8), ("3d6r1+90d1", 4), ("4d10!!>=9kh2+90d1", None), ("2d8ro<3kh1", 6)],
)
def test_successes_reading_matches_icepool_and_the_roller(text: str, hit: int | None) -> None:
    expression = dice.parse(text)
    reading = 3 if hit is None else hit
    result = dice.odds(expression, reading)
    assert dict(result.items()) == icepool_odds(expression, reading)
    first = expression.dice[0]
    if first.count <= 3 and (first.reroll is None or first.reroll.once):
        assert dict(result.items()) == brute_force(expression, reading)


@pytest.mark.parametrize(
    ("text", "watches"),
    [("2d4!+94d1", [(4, None), (1, None)]), ("3d4ro1+90d1", [(2, 4), (1, 4)]), ("2d6!!+94d1", [(6, None)])],
)
@pytest.mark.slow
def test_naturals_watch_the_first_standing_roll(text: str, watches: list[tuple[int, int | None]]) -> None:
    expression = dice.parse(text)
    exact = joint(expression, watches)
    assert exact.exact
    found: dict[tuple[int, int], Fraction] = {}
    for rolled, chance in outcomes(expression):
        key = (rolled.total, mask_of(expression, rolled.faces, watches, len(expression.dice)))
        found[key] = found.get(key, Fraction(0)) + chance
    ours = {
        (exact.lowest + index, mask): Fraction(count, exact.denominator)
        for mask, counts in exact.counts.items()
        for index, count in enumerate(counts)
        if count
    }
    assert ours == found


# The meaning of each form, by hand.


def test_an_exploding_d6_never_reads_a_six() -> None:
    result = dice.odds("1d6!+98d1")  # one die, up to one explosion: 1-5, then 6 + 1..6
    assert dict(result.items()) == {
        **{98 + face: Fraction(1, 6) for face in range(1, 6)},
        **{98 + 6 + face: Fraction(1, 36) for face in range(1, 7)},
    }
    assert dice.spans("1d6!+98d1") == ((99, 103), (105, 110))


def test_reroll_until_and_reroll_once() -> None:
    assert dict(dice.odds("1d4r1").items()) == {2: Fraction(1, 3), 3: Fraction(1, 3), 4: Fraction(1, 3)}
    # ro1 on a d4: a 1 is rolled once more and stands: P(1) = 1/16, P(other) = 1/4 + 1/16.
    assert dict(dice.odds("1d4ro1").items()) == {1: Fraction(1, 16), **dict.fromkeys((2, 3, 4), Fraction(5, 16))}


def test_fudge_dice_and_counting_with_failures() -> None:
    assert dict(dice.odds("1dF").items()) == dict.fromkeys((-1, 0, 1), Fraction(1, 3))
    assert dice.odds("4dF").mean == 0
    # 2d10>=7f1: +1 for 7-10 (4 faces), -1 for a 1, 0 otherwise (5 faces).
    assert dice.odds("2d10>=7f1").probability(-2) == Fraction(1, 100)
    assert dice.odds("2d10>=7f1").probability(2) == Fraction(16, 100)


@pytest.mark.slow
def test_the_hardest_notations_are_exact() -> None:
    for text in ("100d1000kh50", "100d1000", "10d1000!", "50d6!", "100d1000r<=500", "100dF"):
        result = dice.odds(text)
        assert result.exact, text
        assert sum(result.counts) == result.denominator


def test_the_cap_is_shared_and_shown() -> None:
    assert dice.parse("3d6!").dice[0].explode.cap == 32  # type: ignore[union-attr]
    assert dice.parse("10d10!").dice[0].explode.cap == 9  # type: ignore[union-attr]
    assert dice.parse("20d6!+2d4").dice[0].explode.cap == 3  # type: ignore[union-attr]
    line = str(dice.replay("3d6!", [[6, 2, 3, 4]]))
    assert line == "3d6! (6+4, 2, 3) = 15 (a die explodes at most 32 times)"
    with pytest.raises(dice.DiceLimitError, match="at most 50 dice can explode"):
        dice.parse("51d6!")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("4d6r<=4", "'r<=4' at column 4 rerolls 4 of a d6's 6 faces"),
        ("1d6!<=6", "explodes on every face it can end on"),
        ("1d6r7", "'7' at column 5 rerolls no face of a d6"),
        ("4dFr1", "Fudge dice take keep and drop only, so 'r' at column 4 has no place"),
        ("5d10!>=7kh3>=8", "cannot also keep or drop dice"),
        ("5d10>=7f>=6", "counts faces that '>=7' already counts as successes"),
        ("4d6f1", "expected a count of successes before it"),
        ("4d6r1r2", "a dice term takes one reroll"),
    ],
)
def test_new_forms_refuse_in_one_sentence(text: str, message: str) -> None:
    with pytest.raises(dice.DiceError) as caught:
        dice.parse(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_uniform_die_with_more_ways_each_keeps_its_weight() -> None:
    # No notation makes such a die today (an explosion's padding always leaves uneven ways), but a kept
    # uniform die whose faces have w ways each must count w ** dice for every sum the plain one counts.
    from gm.dice._model import DieOdds
    from gm.dice.odds import _kept_counts

    term = dice.parse("3d6kh2").dice[0]
    plain = _kept_counts(term, DieOdds(1, [1] * 6, 6), None)
    weighted = _kept_counts(term, DieOdds(1, [4] * 6, 24), None)
    assert weighted[0] == plain[0] and weighted[1] == [ways * 4**3 for ways in plain[1]]
