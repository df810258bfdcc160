"""Exact odds: checked by hand, by brute-force enumeration, against icepool, and against a large seeded sample."""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction
from math import comb

import icepool
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gm.dice import (
    Constant,
    DiceSource,
    Expression,
    Odds,
    estimate_cost,
    odds,
    parse,
    random_source,
    roll,
    seeded_source,
)
from tests.support.strategies import ConstSpec, DiceSpec, Spec, brute_force, notations

# Values worked out by hand.


def test_two_d6() -> None:
    two = odds("2d6")
    assert two.exact and two.samples is None and two.hit is None
    assert two.probability(7) == Fraction(1, 6)  # 6 of 36
    assert two.probability(2) == two.probability(12) == Fraction(1, 36)
    assert two.probability(8) == Fraction(5, 36)
    assert two.probability(1) == two.probability(13) == 0
    assert (two.lowest, two.highest) == (2, 12)
    assert two.denominator == 36
    assert two.counts == (1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1)
    assert two.mean == 7


def test_chance_of_a_range() -> None:
    two = odds("2d6")
    assert two.chance(10) == Fraction(6, 36)  # 10, 11, 12: 3 + 2 + 1 ways
    assert two.chance(high=4) == Fraction(6, 36)  # 2, 3, 4: 1 + 2 + 3 ways
    assert two.chance(3, 4) == Fraction(5, 36)
    assert two.chance(13) == 0
    assert two.chance(high=1) == 0
    assert two.chance(8, 6) == 0
    assert two.chance() == 1
    assert two.chance(-100, 100) == 1


@pytest.mark.parametrize(
    ("notation", "value", "chance"),
    [
        ("1d20", 20, Fraction(1, 20)),
        ("1d20", 1, Fraction(1, 20)),
        ("3d6", 10, Fraction(27, 216)),
        ("3d6", 3, Fraction(1, 216)),
        ("d%", 100, Fraction(1, 100)),
        ("2d20kh1", 20, 1 - Fraction(19, 20) ** 2),  # advantage: not both below 20
        ("2d20kh1", 1, Fraction(1, 400)),
        ("2d20kl1", 1, 1 - Fraction(19, 20) ** 2),  # disadvantage
        ("2d20kl1", 20, Fraction(1, 400)),
        ("2d20dl1", 20, 1 - Fraction(19, 20) ** 2),  # dropping the lowest of two is keeping the highest
        ("2d20dh1", 1, 1 - Fraction(19, 20) ** 2),
        ("4d6kh3", 18, Fraction(4 * 5 + 1, 1296)),  # three sixes and one other, or four sixes
        ("4d6kh3", 3, Fraction(1, 1296)),  # four ones
        ("4d6kh3", 4, Fraction(4, 1296)),  # one two and three ones, the two anywhere
        ("4d6dl1", 18, Fraction(21, 1296)),
        ("4d6kl3", 3, Fraction(4 * 5 + 1, 1296)),  # three ones and one other, or four ones
        ("1d6-1d6", 0, Fraction(1, 6)),
        ("1d6-1d6", -5, Fraction(1, 36)),
        ("2d6+3", 10, Fraction(1, 6)),
        ("2d6+3", 4, Fraction(0)),
        ("10-1d4", 6, Fraction(1, 4)),
        ("5", 5, Fraction(1)),
        ("1d1+1d1", 2, Fraction(1)),
        ("3d1kh2", 2, Fraction(1)),
    ],
)
def test_odds_by_hand(notation: str, value: int, chance: Fraction) -> None:
    assert odds(notation).probability(value) == chance


@pytest.mark.parametrize(
    ("notation", "mean"),
    [
        ("1d20", Fraction(21, 2)),
        ("2d6+3", Fraction(10)),
        ("1d6-1d6", Fraction(0)),
        ("d%-2", Fraction(101, 2) - 2),
        ("2d20kh1", Fraction(2 * 20 * 21 * 41 // 6 - 20 * 21 // 2, 400)),  # sum over v of v * (2v - 1) / 400
        ("4d6kh3", Fraction(15869, 1296)),  # the well-known 12.24 for ability scores
    ],
)
def test_mean(notation: str, mean: Fraction) -> None:
    assert odds(notation).mean == mean


def test_successes_by_hand() -> None:
    five = odds("5d6", hit=5)  # each die hits with 2/6 = 1/3
    assert five.hit == 5 and five.exact
    for k in range(6):
        assert five.probability(k) == comb(5, k) * Fraction(1, 3) ** k * Fraction(2, 3) ** (5 - k)
    assert (five.lowest, five.highest) == (0, 5)
    assert five.mean == Fraction(5, 3)


def test_successes_of_kept_dice_by_hand() -> None:
    # 4d6kh2, hit 6: the kept dice hold min(sixes, 2) of the sixes.
    high = odds("4d6kh2", hit=6)
    assert high.probability(0) == Fraction(5**4, 1296)
    assert high.probability(1) == Fraction(4 * 5**3, 1296)
    assert high.probability(2) == Fraction(1296 - 5**4 - 4 * 5**3, 1296)
    # 4d6kl2, hit 6: a six is kept only when three or four dice show six.
    low = odds("4d6kl2", hit=6)
    assert low.probability(1) == Fraction(4 * 5, 1296)
    assert low.probability(2) == Fraction(1, 1296)
    assert low.probability(0) == Fraction(1296 - 21, 1296)
    # 1d4+1d6, hit 5: only the d6 can hit.
    mixed = odds("1d4+1d6", hit=5)
    assert dict(mixed.items()) == {0: Fraction(2, 3), 1: Fraction(1, 3)}


def test_odds_to_json_exact() -> None:
    assert odds("1d4").to_json(exact=True) == {
        "min": 1,
        "max": 4,
        "mean": "5/2",
        "exact": True,
        "distribution": {"1": "1/4", "2": "1/4", "3": "1/4", "4": "1/4"},
    }
    data = odds("2d6-1").to_json(exact=True)
    assert (data["min"], data["max"], data["mean"]) == (1, 11, "6")
    assert data["distribution"]["6"] == "1/6"
    assert data["distribution"]["1"] == "1/36"
    assert len(data["distribution"]) == 11
    assert odds("5").to_json(exact=True) == {"min": 5, "max": 5, "mean": "5", "exact": True, "distribution": {"5": "1"}}
    hits = odds("2d6", hit=6).to_json(exact=True)
    assert hits["hit"] == 6
    assert hits["distribution"] == {"0": "25/36", "1": "5/18", "2": "1/36"}


def test_odds_to_json_in_decimals_leaves_out_the_unlikely_and_counts_them() -> None:
    assert odds("2d6").to_json() == {
        "min": 2,
        "max": 12,
        "mean": 7.0,
        "exact": True,
        "distribution": {
            "2": 0.0277778,
            "3": 0.0555556,
            "4": 0.0833333,
            "5": 0.111111,
            "6": 0.138889,
            "7": 0.166667,
            "8": 0.138889,
            "9": 0.111111,
            "10": 0.0833333,
            "11": 0.0555556,
            "12": 0.0277778,
        },
    }
    wide = odds("10d100")  # 10 ** 20 ways: the extremes are one in 10 ** 20
    data = wide.to_json()
    shown = {int(value): chance for value, chance in data["distribution"].items()}
    least = min(shown.values())
    assert least >= 1e-9 and 10 not in shown and 1000 not in shown
    hidden = [value for value, chance in wide.items() if value not in shown]
    assert data["omitted"]["values"] == len(hidden) > 0
    exact_hidden = sum(wide.probability(value) for value in hidden)
    assert data["omitted"]["probability"] == pytest.approx(float(exact_hidden), rel=1e-5)
    assert all(float(wide.probability(value)) < 1e-9 for value in hidden)
    assert sum(shown.values()) + data["omitted"]["probability"] == pytest.approx(1, abs=1e-5)


def test_text_and_expression_give_the_same_odds() -> None:
    assert odds("4d6kh3+2") == odds(parse("4d6kh3+2"))
    assert odds("2d6").shifted(3) == odds("2d6+3")


def test_items_skip_impossible_values() -> None:
    # 2d1-1d1 is always 1; 3d2kh1 is 1 only when all three dice show 1.
    assert list(odds("2d1-1d1").items()) == [(1, Fraction(1))]
    assert dict(odds("3d2kh1").items()) == {1: Fraction(1, 8), 2: Fraction(7, 8)}


# Estimates when exact odds would cost too much.


def assert_close(estimate: Odds, exact: Odds) -> None:
    """Every probability within five standard errors of the exact one (plus one sample)."""
    n = estimate.denominator
    assert n == estimate.samples == sum(estimate.counts)
    exact_values = dict(exact.items())
    assert {value for value, _ in estimate.items()} <= set(exact_values)
    for value, p in exact_values.items():
        error = abs(float(estimate.probability(value)) - float(p))
        assert error <= 5 * math.sqrt(float(p * (1 - p)) / n) + 1 / n, (value, error)


@pytest.mark.parametrize("notation", ["3d6", "4d6kh3", "2d20kl1+1d4-2", "6d10dl2-1d6"])
def test_estimate_over_budget(notation: str) -> None:
    expression = parse(notation)
    cost = estimate_cost(expression)
    assert cost > 0
    assert odds(expression, budget=cost).exact
    estimate = odds(expression, budget=cost - 1, samples=20_000)
    assert estimate.exact is False
    assert estimate.samples == 20_000
    assert_close(estimate, odds(expression))
    data = estimate.to_json(exact=True)
    assert data["exact"] is False and data["samples"] == 20_000
    assert sum(Fraction(chance) for chance in data["distribution"].values()) == 1
    # Seeded: the same question gets the same answer.
    assert odds(expression, budget=cost - 1, samples=20_000) == estimate


def test_estimate_of_successes() -> None:
    expression = parse("8d6kh5")
    cost = estimate_cost(expression, 5)
    assert odds(expression, 5, budget=cost).exact
    estimate = odds(expression, 5, budget=cost - 1, samples=20_000)
    assert (estimate.exact, estimate.samples, estimate.hit) == (False, 20_000, 5)
    assert_close(estimate, odds(expression, 5))


@pytest.mark.slow
def test_huge_keep_is_exact_within_the_default_budget() -> None:
    # 100d1000kh50 is the hardest keep within the limits; icepool and dyce cannot finish it, so its mean is
    # checked against an independent formula: the top k of n dice add up to the sum over faces v of
    # min(k, N_v), N_v being how many dice show v or more (binomial), here in integers over 1000 ** 100.
    result = odds("100d1000kh50")
    assert result.exact and result.denominator == 1000**100
    assert sum(result.counts) == result.denominator
    assert (result.lowest, result.highest) == (50, 50_000)
    n, k, m = 100, 50, 1000
    ways_at_least = 0
    for v in range(1, m + 1):
        up, down = m - v + 1, v - 1
        ways_at_least += sum(min(k, j) * math.comb(n, j) * up**j * down ** (n - j) for j in range(n + 1))
    assert result.mean == Fraction(ways_at_least, m**n)


# Properties: exact odds are a distribution over exactly the reachable totals.


def denominator_of(specs: list[Spec]) -> int:
    return math.prod(spec.sides**spec.count for spec in specs if isinstance(spec, DiceSpec))


@settings(max_examples=150, deadline=None)
@given(notations(max_terms=6, max_dice=16, max_sides=40))
def test_odds_are_a_distribution(drawn: tuple[str, list[Spec]]) -> None:
    text, specs = drawn
    expression = parse(text)
    result = odds(expression)
    assert result.exact
    assert result.denominator == denominator_of(specs)
    assert sum(result.counts) == result.denominator
    assert sum(chance for _, chance in result.items()) == 1
    assert all(count >= 0 for count in result.counts)
    assert result.counts[0] > 0 and result.counts[-1] > 0
    values = [value for value, _ in result.items()]
    assert min(values) == result.lowest == expression.minimum
    assert max(values) == result.highest == expression.maximum
    assert result.mean == sum(value * chance for value, chance in result.items())
    assert expression.minimum <= result.mean <= expression.maximum


@settings(max_examples=100, deadline=None)
@given(notations(max_terms=4, max_dice=12, max_sides=20, constants=False, negatives=False), st.data())
def test_success_odds_are_a_distribution(drawn: tuple[str, list[Spec]], data: st.DataObject) -> None:
    text, specs = drawn
    expression = parse(text)
    hit = data.draw(st.integers(1, max(term.sides for term in expression.dice)))
    result = odds(expression, hit)
    assert result.exact and result.hit == hit
    assert sum(result.counts) == result.denominator == denominator_of(specs)
    assert sum(chance for _, chance in result.items()) == 1
    assert 0 <= result.lowest <= result.highest <= expression.kept_dice
    if hit == 1:  # every kept die hits
        assert dict(result.items()) == {expression.kept_dice: 1}


# Properties: agreement with brute force.

SMALL = {"max_terms": 3, "max_dice": 5, "max_sides": 8, "max_constant": 20, "max_outcomes": 4096}


@settings(max_examples=200, deadline=None)
@given(notations(**SMALL))
def test_odds_match_brute_force(drawn: tuple[str, list[Spec]]) -> None:
    text, specs = drawn
    assert dict(odds(text).items()) == brute_force(specs)


@settings(max_examples=150, deadline=None)
@given(notations(**SMALL, constants=False, negatives=False), st.data())
@pytest.mark.slow
def test_success_odds_match_brute_force(drawn: tuple[str, list[Spec]], data: st.DataObject) -> None:
    text, specs = drawn
    hit = data.draw(st.integers(1, max(spec.sides for spec in specs if isinstance(spec, DiceSpec))))
    assert dict(odds(text, hit).items()) == brute_force(specs, hit)


@pytest.mark.parametrize(
    "notation", ["4d6kh3", "4d6kl3", "4d6dh1", "4d6dl1", "5d4kh2-2d3", "3d8kl1+2d2dh1-4", "1d2-5d3dl3+1", "6d2kh3"]
)
def test_keep_odds_match_brute_force(notation: str) -> None:
    expression = parse(notation)
    specs: list[Spec] = []
    for term in expression.terms:
        if isinstance(term, Constant):
            specs.append(ConstSpec(term.value, term.negative))
        else:
            mode, how_many = (term.keep.mode, term.keep.count) if term.keep else (None, None)
            specs.append(DiceSpec(term.count, term.sides, mode, how_many, term.negative))
    assert dict(odds(expression).items()) == brute_force(specs)


# Properties: agreement with icepool.


def icepool_die(expression: Expression, hit: int | None = None) -> icepool.Die:
    """The same notation built in icepool, read from the parsed terms."""
    total = icepool.Die([0])
    for term in expression.terms:
        if isinstance(term, Constant):
            total = total + (-term.value if term.negative else term.value)
            continue
        die = icepool.d(term.sides)
        if hit is not None:
            die = die.map(lambda face: 1 if face >= hit else 0)
        if term.keep is None:
            part = term.count @ die
        else:
            pool = die.pool(term.count)
            mode, n = term.keep.mode, term.keep.count
            if mode == "kh":
                part = pool.highest(n).sum()
            elif mode == "kl":
                part = pool.lowest(n).sum()
            elif mode == "dh":
                part = pool.lowest(term.count - n).sum()
            else:
                assert mode == "dl"
                part = pool.highest(term.count - n).sum()
        total = total + (-part if term.negative else part)
    return total


def icepool_odds(die: icepool.Die) -> dict[int, Fraction]:
    denominator = die.denominator()
    return {outcome: Fraction(quantity, denominator) for outcome, quantity in die.items() if quantity}


@settings(max_examples=150, deadline=None)
@given(notations(max_terms=4, max_dice=12, max_sides=20, max_constant=1000))
@pytest.mark.slow
def test_odds_match_icepool(drawn: tuple[str, list[Spec]]) -> None:
    expression = parse(drawn[0])
    assert dict(odds(expression).items()) == icepool_odds(icepool_die(expression))


@settings(max_examples=40, deadline=None)
@given(notations(max_terms=2, max_dice=4, max_sides=200, max_constant=10))
def test_odds_match_icepool_with_large_dice(drawn: tuple[str, list[Spec]]) -> None:
    expression = parse(drawn[0])
    assert dict(odds(expression).items()) == icepool_odds(icepool_die(expression))


@settings(max_examples=100, deadline=None)
@given(notations(max_terms=4, max_dice=12, max_sides=20, constants=False, negatives=False), st.data())
def test_success_odds_match_icepool(drawn: tuple[str, list[Spec]], data: st.DataObject) -> None:
    expression = parse(drawn[0])
    hit = data.draw(st.integers(1, max(term.sides for term in expression.dice)))
    assert dict(odds(expression, hit).items()) == icepool_odds(icepool_die(expression, hit))


@pytest.mark.parametrize("notation", ["20d6kh10", "12d20dl4-3d12kl2+7", "d%+d%-d%", "8d10dh3+8d10dl3"])
def test_larger_keeps_match_icepool(notation: str) -> None:
    expression = parse(notation)
    assert dict(odds(expression).items()) == icepool_odds(icepool_die(expression))


# A large seeded sample agrees with the exact odds.

ROLLS = 200_000


def sample(expression: Expression, source: DiceSource, rolls: int, hit: int | None = None) -> Counter[int]:
    if hit is None:
        return Counter(roll(expression, source).total for _ in range(rolls))
    return Counter(roll(expression, source, hit=hit).successes for _ in range(rolls))  # type: ignore[misc]


def chi_square(tally: Counter[int], exact: Odds) -> tuple[float, float]:
    """Pearson's statistic over bins of consecutive values (each expecting 5 or more), and a generous
    critical value: the Wilson-Hilferty approximation at z = 5, a false alarm about once in 3.5 million."""
    rolls = sum(tally.values())
    reachable = dict(exact.items())
    assert set(tally) <= set(reachable), "a value the odds call impossible was rolled"
    bins: list[list[float]] = []
    observed = expected = 0.0
    for value, chance in reachable.items():
        observed += tally.get(value, 0)
        expected += rolls * float(chance)
        if expected >= 5:
            bins.append([observed, expected])
            observed = expected = 0.0
    if expected:
        bins[-1][0] += observed
        bins[-1][1] += expected
    statistic = sum((o - e) ** 2 / e for o, e in bins)
    df = len(bins) - 1
    assert df >= 1
    critical = df * (1 - 2 / (9 * df) + 5 * math.sqrt(2 / (9 * df))) ** 3
    return statistic, critical


def assert_within_standard_errors(tally: Counter[int], exact: Odds, errors: float = 6) -> None:
    rolls = sum(tally.values())
    for value, chance in exact.items():
        p = float(chance)
        assert abs(tally.get(value, 0) - rolls * p) <= errors * math.sqrt(rolls * p * (1 - p)) + 1, value


@pytest.mark.parametrize(("notation", "seed"), [("4d6kh3+1d8-1d4", 20240611), ("2d20kl1-3", 7)])
def test_large_seeded_sample_matches_exact_odds(notation: str, seed: int) -> None:
    expression = parse(notation)
    tally = sample(expression, seeded_source(seed), ROLLS)
    exact = odds(expression)
    statistic, critical = chi_square(tally, exact)
    assert statistic < critical
    assert_within_standard_errors(tally, exact)


def test_seed_argument_sample_matches_exact_odds() -> None:
    # roll(seed=N) for each roll: the same seed gives the same faces, and seeds 0..N-1 spread fairly.
    expression = parse("3d6")
    tally = Counter(roll(expression, seed=seed).total for seed in range(50_000))
    statistic, critical = chi_square(tally, odds(expression))
    assert statistic < critical


def test_large_seeded_sample_of_successes() -> None:
    expression = parse("6d6kh4")
    tally = sample(expression, seeded_source(31337), 100_000, hit=5)
    exact = odds(expression, 5)
    statistic, critical = chi_square(tally, exact)
    assert statistic < critical
    assert_within_standard_errors(tally, exact)


def biased_source(seed: int, nudge: float) -> DiceSource:
    """A loaded die: a face of 1 becomes the highest face `nudge` of the time."""
    fair = random_source(random.Random(seed))
    rng = random.Random(seed + 1)

    def faces(count: int, sides: int) -> list[int]:
        return [sides if face == 1 and rng.random() < nudge else face for face in fair(count, sides)]

    return faces


@pytest.mark.slow
def test_the_sample_check_catches_a_loaded_die() -> None:
    # The same check as above, on rolls from a die that turns one in twenty of its ones into a top face.
    expression = parse("4d6kh3+1d8-1d4")
    exact = odds(expression)
    tally = sample(expression, biased_source(20240611, 0.05), ROLLS)
    statistic, critical = chi_square(tally, exact)
    assert statistic > critical
    # Value by value, six standard errors is a coarser net: it needs a heavier load to trip.
    tally = sample(expression, biased_source(20240611, 0.2), ROLLS // 2)
    with pytest.raises(AssertionError):
        assert_within_standard_errors(tally, exact)


def test_the_sample_check_catches_a_die_that_never_shows_its_top_face() -> None:
    expression = parse("2d20kl1-3")
    rng = random.Random(5)

    def short(count: int, sides: int) -> list[int]:
        return [rng.randint(1, max(1, sides - 1)) for _ in range(count)]

    tally = sample(expression, short, 20_000)
    statistic, critical = chi_square(tally, odds(expression))
    assert statistic > critical
