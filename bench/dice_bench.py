"""Benchmark of the gm dice engine against three reference packages, side by side in one process.

What it measures
----------------
1. Roll throughput: `gm.dice.roll(e, src)` on a compiled expression `e = gm.dice.parse(t)` with
   `src = gm.dice.seeded_source(1)` (a seeded `random.Random`, Mersenne Twister), against the `d20`
   package on the same notation in d20's own words (`3d6!` is d20's `3d6e6`, `4d6r1` its `4d6rr1`;
   d20 has no Fudge dice and no count of successes less failures, so those forms are timed for gm
   alone). d20 draws from the module-level `random` (also Mersenne Twister), seeded with
   `random.seed(1)`, and is called on a pre-parsed AST (`ast = d20.Roller().parse(t)`, then
   `roller.roll(ast)`), its fastest path. Both results are lazy about their text, so neither side
   pays for formatting. Reported: median rolls per second over the repeats, and the ratio.
2. Exact odds: `gm.dice.odds(t)` against the equivalent `icepool` Die (bench/icepool_dice.py, built
   from fresh dice) and, where dyce has the form (sums, keep, explosions on the highest face, Fudge
   dice), the equivalent `dyce` histogram. icepool memoises heavily (`icepool.d`, pool construction,
   every evaluator's per-state caches), so all of its caches are cleared before each call (and gm's
   parse cache before each gm call), outside the timed region. Each computation runs under a SIGALRM
   time limit; gm's distribution is compared, as `Fraction`s value by value, with icepool's where
   icepool finishes, else with dyce's. dyce is an optional `bench` extra (`pip install -e .[bench]`);
   without it its column says so.

The contenders are interleaved (alternating which goes first) so that a noisy, shared machine
affects both alike; medians and ratios come from the same run. The garbage collector is paused
inside timed regions, as `timeit` does.

How to run
----------
From the project root, with the virtualenv active (d20 and icepool installed, dyce for its column)::

    python bench/dice_bench.py            # full run, several minutes
    python bench/dice_bench.py --quick    # smoke run: fewer repeats, shorter batches and timeout

The output is Markdown (one table per part), ready to paste into docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import platform
import random
import signal
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from itertools import repeat
from types import FrameType
from typing import Any

import d20
import icepool
from icepool.generator.pool import PoolSource
from icepool_dice import expression_die

import gm.dice
from gm.dice import Expression

try:
    import dyce
except ImportError:  # the optional bench extra
    dyce = None

# gm's notation, and d20's words for the same roll (None: d20 has no such form).
ROLL_FORMS: tuple[tuple[str, str | None], ...] = (
    ("4d6kh3+1d8-2", "4d6kh3+1d8-2"),
    ("100d1000kh3", "100d1000kh3"),
    ("1d20+5", "1d20+5"),
    ("3d6!", "3d6e6"),
    ("10d10!>=8", "10d10e>7"),
    ("4d6r1", "4d6rr1"),
    ("2d20ro1kh1", "2d20ro1kh1"),
    ("4dF", None),
    ("5d10>=7f1", None),
)
ODDS_NOTATIONS = (
    "4d6kh3",
    "4d6kh3+1d8-2",
    "2d20kh1+5",
    "10d10",
    "100d1000kh3",
    "100d1000",
    "100d1000kh50",
    "100d1000dl1",
    "3d6!",
    "10d10!kh5",
    "10d1000!",
    "4d6r1kh3",
    "100d1000r<=500",
    "2d20ro1kh1",
    "100dF",
    "5d10>=7f1",
)
ROLL_TARGET_RATIO = 5.0
ODDS_TARGET_SECONDS = 2.0
# icepool's evaluator recurses once per face: a pool of d1000 needs more than the default 1000 frames.
RECURSION_LIMIT = 20_000
# An odds call at least this slow is timed on its own, and its first (warm-up) call counts as a run.
SLOW_CALL_SECONDS = 0.5


@dataclass(frozen=True)
class Settings:
    repeats: int
    roll_batch_seconds: float  # each roll batch is calibrated to take about this long
    odds_batch_seconds: float  # fast odds calls are repeated within a run to take about this long
    odds_budget_seconds: float  # stop repeating a slow odds computation once it has used this much
    icepool_timeout: float
    quick: bool = False
    seed: int = 1


# ---------------------------------------------------------------------------------------------
# Timing helpers


class TimeLimitExceeded(Exception):
    """Raised inside a computation by SIGALRM when its time limit has passed."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise TimeLimitExceeded


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `TimeLimitExceeded` in the block once `seconds` have passed (main thread, Unix only)."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken by one call, and its result; the collector is paused while it runs."""
    with gc_paused():
        start = time.perf_counter()
        result = call()
        elapsed = time.perf_counter() - start
    return elapsed, result


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:,.1f}x" if ratio < 100 else f"{ratio:,.0f}x"


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


# ---------------------------------------------------------------------------------------------
# Part 1: roll throughput, gm against d20

BatchRunner = Callable[[int], float]  # rolls n times, returns the seconds taken


def gm_batch(notation: str, seed: int) -> BatchRunner:
    expression = gm.dice.parse(notation)
    roll = gm.dice.roll

    def run(count: int) -> float:
        source = gm.dice.seeded_source(seed)
        with gc_paused():
            start = time.perf_counter()
            for _ in repeat(None, count):
                roll(expression, source)
            return time.perf_counter() - start

    return run


def d20_batch(notation: str, seed: int) -> BatchRunner:  # notation in d20's words
    roller = d20.Roller()
    tree = roller.parse(notation)
    roll = roller.roll

    def run(count: int) -> float:
        random.seed(seed)
        with gc_paused():
            start = time.perf_counter()
            for _ in repeat(None, count):
                roll(tree)
            return time.perf_counter() - start

    return run


def calibrate(run: BatchRunner, seconds: float) -> int:
    """A roll count whose batch takes about `seconds`."""
    count = 10
    while True:
        elapsed = run(count)
        if elapsed >= seconds / 4:
            return max(1, round(count * seconds / elapsed))
        count *= 4


def check_rolls(notation: str, theirs: str | None, seed: int) -> None:
    """A few rolls from each contender must land within the notation's range (a sanity check; d20's
    explosions have no cap, so its exploding rolls are not held to gm's range)."""
    expression = gm.dice.parse(notation)
    source = gm.dice.seeded_source(seed)
    roller = d20.Roller()
    tree = roller.parse(theirs) if theirs is not None else None
    capped = any(term.explode is not None for term in expression.dice)
    for _ in range(100):
        totals = [gm.dice.roll(expression, source).total]
        if tree is not None and not capped:
            totals.append(roller.roll(tree).total)
        for total in totals:
            if not expression.minimum <= total <= expression.maximum:
                raise AssertionError(f"{notation}: total {total} outside {expression.minimum}..{expression.maximum}")


@dataclass
class RollResult:
    notation: str
    theirs: str | None
    gm_rates: list[float] = field(default_factory=list)
    d20_rates: list[float] = field(default_factory=list)


def bench_rolls(settings: Settings) -> list[RollResult]:
    results: list[RollResult] = []
    contenders: list[tuple[RollResult, BatchRunner, int, BatchRunner | None, int]] = []
    for notation, theirs in ROLL_FORMS:
        check_rolls(notation, theirs, settings.seed)
        gm_run = gm_batch(notation, settings.seed)
        d20_run = d20_batch(theirs, settings.seed) if theirs is not None else None
        result = RollResult(notation, theirs)
        results.append(result)
        gm_count = calibrate(gm_run, settings.roll_batch_seconds)
        d20_count = calibrate(d20_run, settings.roll_batch_seconds) if d20_run is not None else 0
        contenders.append((result, gm_run, gm_count, d20_run, d20_count))
    for index in range(settings.repeats):
        for result, gm_run, gm_count, d20_run, d20_count in contenders:
            gm_first = index % 2 == 0
            if gm_first:
                result.gm_rates.append(gm_count / gm_run(gm_count))
            if d20_run is not None:
                result.d20_rates.append(d20_count / d20_run(d20_count))
            if not gm_first:
                result.gm_rates.append(gm_count / gm_run(gm_count))
        print(f"  rolls: repeat {index + 1}/{settings.repeats} done", file=sys.stderr, flush=True)
    return results


def roll_table(results: list[RollResult]) -> str:
    lines = [
        "| Notation | d20's words | gm rolls/s | d20 rolls/s | gm / d20 | per-repeat ratio (min to max) "
        "| target ≥ 5x |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for result in results:
        gm_median = statistics.median(result.gm_rates)
        if not result.d20_rates:
            lines.append(f"| `{result.notation}` | (none) | {gm_median:,.0f} | n/a | n/a | n/a | n/a |")
            continue
        d20_median = statistics.median(result.d20_rates)
        ratio = gm_median / d20_median
        paired = [g / d for g, d in zip(result.gm_rates, result.d20_rates)]
        met = "met" if ratio >= ROLL_TARGET_RATIO else "**missed**"
        lines.append(
            f"| `{result.notation}` | `{result.theirs}` | {gm_median:,.0f} | {d20_median:,.0f} | {fmt_ratio(ratio)} "
            f"| {fmt_ratio(min(paired))} to {fmt_ratio(max(paired))} | {met} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Part 2: exact odds, gm against icepool


def icepool_die(expression: Expression) -> icepool.Die[int]:
    """The icepool equivalent of a gm expression (bench/icepool_dice.py), with its full distribution computed."""
    total = expression_die(expression)
    total.quantities()  # force the full distribution (icepool computes eagerly; this is a no-op guard)
    return total


def dyce_has_form(expression: Expression) -> bool:
    """Whether dyce can say the same: no rerolls, no counts, explosions on the highest face only."""
    return dyce is not None and all(
        term.reroll is None
        and term.successes is None
        and (term.explode is None or term.explode.faces.low == term.sides)
        for term in expression.dice
    )


def dyce_histogram(expression: Expression) -> Any:
    """The dyce equivalent of a gm expression (see `dyce_has_form`). Keep and drop go through
    `P.rolls_with_counts`."""
    assert dyce is not None
    total: Any = dyce.H({expression.constant: 1})
    for term in expression.dice:
        one = dyce.H({-1: 1, 0: 1, 1: 1}) if term.fudge else dyce.H(term.sides)
        if term.explode is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # explode_n is marked experimental
                one = dyce.explode_n(one, n=term.explode.cap)
        if term.keep is None or term.kept == term.count:
            part = term.count @ one
        else:
            chosen = slice(-term.kept, None) if term.keep.highest else slice(None, term.kept)
            ways: Counter[int] = Counter()
            for rolled, count in dyce.P(*[one] * term.count).rolls_with_counts(chosen):
                ways[sum(rolled)] += count
            part = dyce.H(ways)
        total = total - part if term.negative else total + part
    return total


def clear_module_caches(package: str) -> int:
    """Clear every memoised function (`functools.cache`/`lru_cache`) and evaluator state cache found at
    module level in `package`; returns how many were found."""
    found = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == package or name.startswith(package + ".")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type):
                continue
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()
                found += 1
            # icepool's evaluator singletons (sum, keep, ...) keep their dungeons and per-state caches here.
            for attribute in ("_cache", "ascending_cache", "descending_cache"):
                if attribute in getattr(value, "__dict__", {}):
                    delattr(value, attribute)
                    found += 1
    return found


def clear_icepool_caches() -> None:
    """Forget everything icepool memoises, so that each timed call computes from scratch."""
    PoolSource._new_raw.cache_clear()  # a cached classmethod, not reachable at module level
    icepool.math.comb_row_cache.clear()
    clear_module_caches("icepool")  # icepool.d, icepool.z, wallenius weights, evaluator caches


def clear_gm_caches() -> None:
    """Forget gm's memoised parses (wherever the parser keeps them), so each odds call starts from text."""
    clear_module_caches("gm.dice")


def gm_distribution(odds: gm.dice.Odds) -> dict[int, Fraction]:
    return dict(odds.items())


def icepool_distribution(die: icepool.Die[int]) -> dict[int, Fraction]:
    denominator = die.denominator()
    return {outcome: Fraction(quantity, denominator) for outcome, quantity in die.items() if quantity}


def dyce_distribution(histogram: Any) -> dict[int, Fraction]:
    total = histogram.total
    return {outcome: Fraction(count, total) for outcome, count in histogram.items() if count}


def compare(gm_odds: gm.dice.Odds, theirs: dict[int, Fraction], name: str) -> str:
    if not gm_odds.exact:
        return f"gm gave an estimate ({gm_odds.samples:,} samples, error {gm_odds.error:.4f}), not compared"
    ours = gm_distribution(gm_odds)
    for value in sorted(ours.keys() | theirs.keys()):
        mine, other = ours.get(value, Fraction(0)), theirs.get(value, Fraction(0))
        if mine != other:
            return f"**differ** from {name} at {value}: gm {mine}, {name} {other}"
    return f"identical to {name} ({len(ours):,} values)"


def self_check(gm_odds: gm.dice.Odds, expression: Expression) -> str:
    """What can be checked of gm's distribution alone: it sums to 1 and spans the notation's range."""
    total = sum(gm_odds.counts) / Fraction(gm_odds.denominator)
    spans = (gm_odds.lowest, gm_odds.highest) == (expression.minimum, expression.maximum)
    return f"gm sums to {total}, spans {gm_odds.lowest}..{gm_odds.highest}" + ("" if spans else " (**wrong range**)")


@dataclass
class Contender:
    """One side of one odds comparison: its per-call times (one per run) and how it ended."""

    name: str
    call: Callable[[], Any]
    reset: Callable[[], None]
    timeout: float
    per_run: int = 1  # calls per run, so that fast calls are timed over a measurable batch
    times: list[float] = field(default_factory=list)
    spent: float = 0.0
    timed_out: bool = False
    result: Any = None

    def once(self) -> float | None:
        """One call from scratch, limited in time; None when it did not finish."""
        self.reset()
        try:
            with time_limit(self.timeout):
                elapsed, result = timed(self.call)
        except TimeLimitExceeded:
            self.timed_out = True
            self.reset()  # drop whatever the interrupted computation left in caches
            return None
        self.spent += elapsed
        if self.result is None:
            self.result = result
        return elapsed

    def warm_up(self, batch_seconds: float, slow: float) -> None:
        """A first call: keeps the result, sets the batch size; a slow call counts as the first run."""
        elapsed = self.once()
        if elapsed is None:
            return
        if elapsed >= slow:
            self.times.append(elapsed)
        self.per_run = max(1, min(1000, round(batch_seconds / max(elapsed, 1e-9))))

    def run(self, budget: float) -> None:
        """One more run (of `per_run` calls), unless it timed out or has used up its time budget."""
        if self.timed_out or (self.times and self.spent >= budget):
            return
        total = 0.0
        for _ in range(self.per_run):
            elapsed = self.once()
            if elapsed is None:
                return
            total += elapsed
        self.times.append(total / self.per_run)

    def cell(self) -> str:
        if self.timed_out and not self.times:
            return f"did not finish in {self.timeout:g} s"
        if not self.times:
            return "no result"
        text = fmt_seconds(statistics.median(self.times))
        return text + (f" (then timed out after {self.timeout:g} s)" if self.timed_out else "")

    def runs(self) -> str:
        if not self.times:
            return "0"
        return f"{len(self.times)} x {self.per_run}" if self.per_run > 1 else str(len(self.times))


@dataclass
class OddsResult:
    notation: str
    gm: Contender
    icepool: Contender
    dyce: Contender | None
    verdict: str


def bench_odds(settings: Settings) -> list[OddsResult]:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    slow = max(settings.odds_batch_seconds, SLOW_CALL_SECONDS)
    results: list[OddsResult] = []
    for notation in ODDS_NOTATIONS:
        expression = gm.dice.parse(notation)
        ours = Contender("gm", partial(gm.dice.odds, notation), clear_gm_caches, settings.icepool_timeout)
        theirs = Contender("icepool", partial(icepool_die, expression), clear_icepool_caches, settings.icepool_timeout)
        third = None
        if dyce_has_form(expression):
            third = Contender("dyce", partial(dyce_histogram, expression), no_caches, settings.icepool_timeout)
        contenders = [ours, theirs] + ([third] if third is not None else [])
        for contender in contenders:
            contender.warm_up(settings.odds_batch_seconds, slow)
        for index in range(settings.repeats):
            order = contenders if index % 2 == 0 else contenders[::-1]
            for contender in order:
                contender.run(settings.odds_budget_seconds)
        if ours.result is None:
            verdict = "not compared (gm did not finish)"
        elif theirs.result is not None:
            verdict = compare(ours.result, icepool_distribution(theirs.result), "icepool")
        elif third is not None and third.result is not None:
            verdict = compare(ours.result, dyce_distribution(third.result), "dyce")
        else:
            verdict = f"not compared (no other finished); {self_check(ours.result, expression)}"
        results.append(OddsResult(notation, ours, theirs, third, verdict))
        print(f"  odds: {notation} done", file=sys.stderr, flush=True)
    return results


def no_caches() -> None:
    """dyce keeps no caches between calls that the benchmark could clear."""


def ratio_cell(gm: Contender, other: Contender | None) -> str:
    if other is None:
        return "n/a"
    if gm.times and other.times:
        return fmt_ratio(statistics.median(other.times) / statistics.median(gm.times))
    if gm.times and other.timed_out:
        return f"> {fmt_ratio(other.timeout / statistics.median(gm.times))}"
    return "n/a"


def odds_table(results: list[OddsResult]) -> str:
    lines = [
        "| Notation | gm `odds()` | icepool | icepool / gm | dyce | dyce / gm | runs gm / icepool | Distributions |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for result in results:
        exact = "" if result.gm.result is None or result.gm.result.exact else " (estimate)"
        dyce_cell = result.dyce.cell() if result.dyce is not None else "no such form"
        lines.append(
            f"| `{result.notation}` | {result.gm.cell()}{exact} | {result.icepool.cell()} "
            f"| {ratio_cell(result.gm, result.icepool)} | {dyce_cell} | {ratio_cell(result.gm, result.dyce)} "
            f"| {result.gm.runs()} / {result.icepool.runs()} | {result.verdict} |"
        )
    return "\n".join(lines)


def odds_target(results: list[OddsResult]) -> str:
    """Whether every notation's exact odds took under the target, the slowest named."""
    timed = [(statistics.median(r.gm.times), r.notation) for r in results if r.gm.times and r.gm.result is not None]
    estimates = [r.notation for r in results if r.gm.result is not None and not r.gm.result.exact]
    if not timed:
        return "gm exact odds: not measured"
    slowest, notation = max(timed)
    met = "met" if slowest < ODDS_TARGET_SECONDS and not estimates else "**missed**"
    shown = f"; estimates: {', '.join(estimates)}" if estimates else ""
    return (
        f"gm exact odds: slowest `{notation}` at {fmt_seconds(slowest)} median; "
        f"target every one exact and under {ODDS_TARGET_SECONDS:g} s: {met}{shown}"
    )


# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 repeats, short batches, 10 s timeout")
    parser.add_argument("--repeats", type=int, help="repeats per contender (default 7, quick 3)")
    parser.add_argument(
        "--icepool-timeout",
        type=float,
        help="seconds allowed for one exact-odds computation before it is reported as not finished "
        "(default 60, quick 10)",
    )
    parser.add_argument(
        "--odds-budget",
        type=float,
        help="stop repeating a slow exact-odds computation once it has used this many seconds (default 30, quick 5)",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    return Settings(
        repeats=args.repeats or (3 if quick else 7),
        roll_batch_seconds=0.05 if quick else 0.3,
        odds_batch_seconds=0.02 if quick else 0.1,
        odds_budget_seconds=args.odds_budget or (5.0 if quick else 30.0),
        icepool_timeout=args.icepool_timeout or (10.0 if quick else 60.0),
        quick=quick,
    )


def main(argv: list[str] | None = None) -> None:
    settings = parse_args(argv)
    started = time.perf_counter()
    now = datetime.datetime.now().astimezone()
    print("# gm dice benchmark\n")
    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}) on {platform.system()} "
        f"{platform.machine()}, {now:%Y-%m-%d %H:%M %Z}; "
        f"d20 {package_version('d20')}, icepool {package_version('icepool')}, dyce {package_version('dyce')}; "
        f"{settings.repeats} repeats{' (--quick smoke run)' if settings.quick else ''}.\n"
    )

    print("## Roll throughput: gm vs d20\n")
    rolls = bench_rolls(settings)
    print(roll_table(rolls))
    print(
        f"\nMedian rolls per second over {settings.repeats} interleaved repeats, each a batch calibrated to about "
        f"{settings.roll_batch_seconds:g} s. gm: `roll(parse(t), seeded_source(1))`. d20: `Roller().roll(ast)` on an "
        "AST pre-parsed with `Roller().parse(t)` (d20's fastest path), module `random` seeded with `random.seed(1)`. "
        "Both draw from a Mersenne Twister; the garbage collector is paused while timing.\n"
    )

    print("## Exact odds: gm vs icepool and dyce\n")
    odds = bench_odds(settings)
    print(odds_table(odds))
    print(f"\n{odds_target(odds)}\n")
    print(
        "Median time per computation. icepool builds fresh dice (`icepool.Die(range(1, N + 1))`, since "
        "`icepool.d(N)` is memoised; bench/icepool_dice.py) and is forced with `.quantities()`; dyce builds "
        "`H(N)`, `explode_n` and `P(...).rolls_with_counts`; before every call all icepool caches "
        "(`icepool.d`, pool construction, comb rows, evaluator state caches) are cleared, and gm's memoised "
        "functions (its parse cache) likewise, outside the timed region. Fast computations are timed over "
        f"several calls per run (runs x calls); a first call of {SLOW_CALL_SECONDS:g} s or more counts as a run, "
        f"and slow ones are repeated until they have used {settings.odds_budget_seconds:g} s. Each computation "
        f"has a limit of {settings.icepool_timeout:g} s (SIGALRM). The recursion limit is raised to "
        f"{RECURSION_LIMIT:,} for icepool, whose evaluator recurses once per face. Distributions are compared "
        "as exact fractions, value by value."
    )
    print(f"\n_Total benchmark time {time.perf_counter() - started:.0f} s._")


if __name__ == "__main__":
    main()
