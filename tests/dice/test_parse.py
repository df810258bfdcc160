"""Parsing dice notation: what is accepted, what it means, and how everything else is refused."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gm.dice import Constant, Dice, DiceError, DiceLimitError, DiceSyntaxError, Expression, Keep, odds, parse
from tests.support.strategies import NOTATION_ALPHABET as ALPHABET
from tests.support.strategies import ConstSpec, DiceSpec, Spec, notations, spec_bounds


def test_unexpected_character_message_is_exact() -> None:
    with pytest.raises(DiceSyntaxError) as caught:
        parse("2d6+x")
    assert str(caught.value) == "2d6+x: unexpected 'x' at column 5, expected a number or dice"
    assert caught.value.column == 5
    assert caught.value.notation == "2d6+x"


def test_keep_too_many_message_is_exact() -> None:
    # As docs/dice-notation.md shows it.
    with pytest.raises(DiceLimitError) as caught:
        parse("4d6kh5")
    assert str(caught.value) == "4d6kh5: 'kh5' at column 4 would keep 5 of 4 dice, expected a count from 1 to 4"


@pytest.mark.parametrize(
    ("notation", "error", "column"),
    [
        ("2d6++1", DiceSyntaxError, 5),  # a sign where a term belongs
        ("4d6kh5", DiceLimitError, 4),  # keeps more dice than rolled
        ("4d6kh0", DiceLimitError, 4),  # keeps none
        ("4d6dl4", DiceLimitError, 4),  # drops every die
        ("4d6dl0", DiceLimitError, 4),  # drops none: write 4d6
        ("4d6dh0", DiceLimitError, 4),
        ("1d6dl1", DiceLimitError, 4),  # drops the only die
        ("4d6kh3kh1", DiceSyntaxError, 7),  # a second keep
        ("1d6*2", DiceSyntaxError, 4),
        ("1_000d6", DiceSyntaxError, 2),
        ("\uff12d6", DiceSyntaxError, 1),  # full-width 2
        ("2d\uff16", DiceSyntaxError, 3),  # full-width 6
        ("2d6+\u0661", DiceSyntaxError, 5),  # Arabic-Indic 1: a digit to str.isdigit(), not to the grammar
        ("-1d6", DiceSyntaxError, 1),  # a leading sign is refused
        ("+3", DiceSyntaxError, 1),
        ("2d6+", DiceSyntaxError, 5),  # ends where a term belongs
        ("d", DiceSyntaxError, 2),
        ("2d", DiceSyntaxError, 3),
        ("kh3", DiceSyntaxError, 1),
        ("2d6 3", DiceSyntaxError, 5),
        ("0d6", DiceLimitError, 1),
        ("2d0", DiceLimitError, 3),
        ("101d6", DiceLimitError, 1),
        ("d1001", DiceLimitError, 2),
        ("1d6+1000001", DiceLimitError, 5),
        ("1+1+1+1+1+1+1+1+1", DiceLimitError, 17),  # the ninth term
    ],
)
def test_bad_notation_names_the_column(notation: str, error: type[DiceError], column: int) -> None:
    with pytest.raises(error) as caught:
        parse(notation)
    assert caught.value.column == column
    message = str(caught.value)
    assert f"column {column}" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("notation", "error"),
    [
        ("", DiceError),
        (" ", DiceError),
        (" \t  ", DiceError),
        ("+".join(["1d6"] * 500), DiceLimitError),  # too long, before the terms are even counted
        ("60d6+41d4", DiceLimitError),  # 101 dice in all: no single column is to blame
        ("x" * 101, DiceLimitError),
    ],
)
def test_bad_notation_as_a_whole(notation: str, error: type[DiceError]) -> None:
    with pytest.raises(error) as caught:
        parse(notation)
    assert caught.value.column is None
    assert "\n" not in str(caught.value)


def test_too_long_notation_is_shortened_in_the_message() -> None:
    with pytest.raises(DiceLimitError) as caught:
        parse("+".join(["1d6"] * 500))
    assert "1999 characters" in str(caught.value)  # 500 * 3 + 499 signs
    assert len(str(caught.value)) < 200


@pytest.mark.parametrize("value", [None, 26, 2.0, b"2d6", ["2d6"], {"2d6"}])
def test_non_text_is_refused(value: object) -> None:
    with pytest.raises(DiceError):
        parse(value)  # type: ignore[arg-type]


# Limits: each boundary from both sides.


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ("100d6", "101d6"),
        ("50d6+50d4", "50d6+51d4"),
        ("40d6-30d8+30d4", "40d6-30d8+31d4"),
        ("d1000", "d1001"),
        ("3d1000kh1", "3d1001kh1"),
        ("1+1+1+1+1+1+1+1", "1+1+1+1+1+1+1+1+1"),
        ("d4+d4+d4+d4+d4+d4+d4+d4", "d4+d4+d4+d4+d4+d4+d4+d4-d4"),
        ("1000000", "1000001"),
        ("1d20-1000000", "1d20-1000001"),
        ("100d6kh100", "100d6kh101"),
        ("100d6dl99", "100d6dl100"),
        ("1d6+" + " " * 95 + "1", "1d6+" + " " * 96 + "1"),  # 100 characters, then 101
    ],
)
def test_limits_on_both_sides(good: str, bad: str) -> None:
    parse(good)
    with pytest.raises(DiceLimitError):
        parse(bad)


def test_limit_lengths_are_as_meant() -> None:
    assert len("1d6+" + " " * 95 + "1") == 100
    assert parse("1d6+" + " " * 95 + "1").text == "1d6+1"


def test_hundred_dice_and_largest_die() -> None:
    expression = parse("100d1000")
    assert (expression.minimum, expression.maximum) == (100, 100_000)


def test_leading_zeros_are_still_numbers() -> None:
    assert parse("0000000001d6").dice[0].count == 1  # ten digits, value 1
    assert parse("0001000000").constant == 1_000_000
    assert parse("2d06").dice[0].sides == 6


# What notation means.


def test_terms_of_a_mixed_notation() -> None:
    expression = parse("4d6kh3 - 1d8 + 2")
    assert expression.text == "4d6kh3-1d8+2"
    four, eight, two = expression.terms
    assert isinstance(four, Dice) and isinstance(eight, Dice) and isinstance(two, Constant)
    assert (four.count, four.sides, four.keep, four.negative, four.kept) == (4, 6, Keep("kh", 3), False, 3)
    assert (eight.count, eight.sides, eight.keep, eight.negative, eight.kept) == (1, 8, None, True, 1)
    assert (two.value, two.negative) == (2, False)
    assert expression.constant == 2
    # 4d6kh3 gives 3..18, -1d8 gives -8..-1, and 2 is 2.
    assert (expression.minimum, expression.maximum) == (3 - 8 + 2, 18 - 1 + 2)
    assert expression.kept_dice == 4
    assert str(expression) == "4d6kh3-1d8+2"


@pytest.mark.parametrize(
    ("notation", "kept", "low", "high"),
    [
        ("4d6kh3", 3, 3, 18),
        ("4d6kl3", 3, 3, 18),
        ("4d6dh1", 3, 3, 18),
        ("4d6dl1", 3, 3, 18),
        ("5d10dl2", 3, 3, 30),
        ("2d20kh", 1, 1, 20),  # a keep without a count keeps one
        ("2d20dl", 1, 1, 20),
        ("3d8kl2", 2, 2, 16),
        ("1d6kh1", 1, 1, 6),
    ],
)
def test_keep_and_drop_counts(notation: str, kept: int, low: int, high: int) -> None:
    expression = parse(notation)
    assert expression.dice[0].kept == kept
    assert (expression.minimum, expression.maximum) == (low, high)


def test_keep_without_count_is_keep_one() -> None:
    assert parse("2d20kh").dice[0].keep == Keep("kh", 1)
    assert parse("3d6DL").dice[0].keep == Keep("dl", 1)


@pytest.mark.parametrize(
    ("upper", "lower"),
    [("4D6KH3", "4d6kh3"), ("2D20Kl1", "2d20kl1"), ("D%", "d%"), ("3d6Dh1-D4+1", "3d6dh1-d4+1")],
)
def test_case_does_not_matter(upper: str, lower: str) -> None:
    assert parse(upper) == parse(lower)
    assert parse(upper).text == lower


def test_percent_is_a_hundred_sides() -> None:
    percent, hundred = parse("d%"), parse("1d100")
    (die,) = percent.dice
    assert (die.count, die.sides, die.keep) == (1, 100, None)
    assert (percent.minimum, percent.maximum) == (hundred.minimum, hundred.maximum) == (1, 100)
    assert odds(percent) == odds(hundred)
    assert parse("3d%kh2").dice[0].sides == 100


@pytest.mark.parametrize("sides", [1, 4, 6, 20, 1000])
def test_a_die_without_count_is_one_die(sides: int) -> None:
    bare, counted = parse(f"d{sides}"), parse(f"1d{sides}")
    (die,) = bare.dice
    assert (die.count, die.sides, die.keep, die.negative) == (1, sides, None, False)
    assert (bare.minimum, bare.maximum) == (counted.minimum, counted.maximum) == (1, sides)
    assert parse(f"2d6-d{sides}").dice[1].count == 1


@pytest.mark.parametrize("spaced", ["2d6 + 1", "2d6+ 1", "2d6 +1", "2d6\t+\t1", "  2d6  +  1  "])
def test_spaces_around_signs_are_allowed(spaced: str) -> None:
    assert parse(spaced) == parse("2d6+1")
    assert parse(spaced).text == "2d6+1"


def test_spaces_around_minus_are_allowed() -> None:
    assert parse("4d6kh3 - d4 - 2") == parse("4d6kh3-d4-2")


@pytest.mark.parametrize(
    ("notation", "column"),
    [("2 d6", 3), ("2d 6", 4), ("4d6 kh3", 5), ("4d6kh 3", 7), ("1 0d6", 3), ("2d6+1 d4", 7), ("d 20", 3)],
)
def test_spaces_inside_a_term_are_refused(notation: str, column: int) -> None:
    with pytest.raises(DiceSyntaxError) as caught:
        parse(notation)
    assert caught.value.column == column


def test_space_inside_dice_term_gets_a_hint() -> None:
    with pytest.raises(DiceSyntaxError) as caught:
        parse("4d6 kh3")
    assert "without spaces" in str(caught.value)


# Properties.


def assert_matches(expression: Expression, specs: list[Spec]) -> None:
    """The parsed terms are the ones the text was written from."""
    assert len(expression.terms) == len(specs)
    for term, spec in zip(expression.terms, specs):
        if isinstance(spec, ConstSpec):
            assert isinstance(term, Constant)
            assert (term.value, term.negative) == (spec.value, spec.negative)
        else:
            assert isinstance(spec, DiceSpec) and isinstance(term, Dice)
            assert (term.count, term.sides, term.negative) == (spec.count, spec.sides, spec.negative)
            if spec.mode is None:
                assert term.keep is None
            else:
                assert term.keep is not None
                assert (term.keep.mode, term.keep.count) == (spec.mode, spec.how_many)
            assert term.kept == spec.kept
    assert (expression.minimum, expression.maximum) == spec_bounds(specs)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(notations())
@example(("4D6KH3", [DiceSpec(4, 6, "kh", 3, False)]))
@example(
    ("d% - 01d4 +\t7", [DiceSpec(1, 100, None, None, False), DiceSpec(1, 4, None, None, True), ConstSpec(7, False)])
)
def test_valid_notation_parses_and_normalised_text_reparses(drawn: tuple[str, list[Spec]]) -> None:
    text, specs = drawn
    expression = parse(text)
    assert_matches(expression, specs)
    normal = expression.text
    assert normal == normal.lower()
    assert " " not in normal and "\t" not in normal
    again = parse(normal)
    assert again == expression
    assert again.text == normal
    assert_matches(again, specs)


def check_only_dice_errors(text: str) -> None:
    try:
        expression = parse(text)
    except DiceError as error:
        assert "\n" not in str(error) or "\n" in text[:40]
        if error.column is not None:
            assert 1 <= error.column <= len(text) + 1
            assert f"column {error.column}" in str(error)
        if isinstance(error, DiceSyntaxError):
            assert error.column is not None
    else:
        assert isinstance(expression, Expression)
        assert expression.minimum <= expression.maximum
        assert parse(expression.text) == expression


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_any_text_raises_only_dice_errors(text: str) -> None:
    check_only_dice_errors(text)


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=120))
@example("1" * 100)
@example("9" * 101)
@example("d" * 50)
@example("1d6" + "kh" * 10)
@pytest.mark.slow
def test_notation_like_text_raises_only_dice_errors(text: str) -> None:
    check_only_dice_errors(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["1d6", "d%", "3d8kh2", "7", "1000000", "100d6", "d1000"]), min_size=1, max_size=12))
def test_joined_terms_obey_limits(terms: list[str]) -> None:
    text = "+".join(terms)
    dice = sum(100 if term == "100d6" else 3 if term == "3d8kh2" else 1 for term in terms if "d" in term)
    fits = len(terms) <= 8 and dice <= 100 and len(text) <= 100
    if fits:
        assert len(parse(text).terms) == len(terms)
    else:
        with pytest.raises(DiceLimitError):
            parse(text)
