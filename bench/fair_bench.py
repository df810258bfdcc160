"""Benchmark: the cost of a fair roll (gm.integrity.fair) against a plain one, side by side in one process.

What it measures
----------------
For each notation, `gm.dice.roll(expression, source)` on a parsed expression with:

- plain: the default source, `secrets.SystemRandom` (what a story without `--fair` rolls with);
- fair: `gm.integrity.fair.FairDice` (one HMAC-SHA256 per die, rejection sampling), started for each roll with
  `gm.dice.for_one_roll` and given the next roll number with `take_number`, exactly as a round does;
  the key has a player's seed mixed in.

Batches of rolls are timed with `time.perf_counter`, the two sources alternating which goes first,
the garbage collector paused inside timed regions (as `timeit` does). Reported: the median time per
roll over the batches, for each source, and their ratio. The database write that follows every roll
(and its hash-chain link, the same for both) is not part of this; bench/round_bench.py times rounds.

How to run
----------
From the project root, with the virtualenv active::

    python bench/fair_bench.py           # about a minute
    python bench/fair_bench.py --quick   # smoke run

The output is Markdown, ready to paste into docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import platform
import statistics
import time
from collections.abc import Callable

from gm import dice
from gm.integrity import fair

NOTATIONS = ("1d20", "4d6kh3+1d8-2", "2d20kh1+5", "10d10", "100d1000kh3")
STORY = "0123456789abcdef0123456789abcdef"


def timed_batch(roll_once: Callable[[], object], count: int) -> float:
    """Seconds per roll over `count` rolls."""
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(count):
            roll_once()
        return (time.perf_counter() - start) / count
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer and shorter batches")
    arguments = parser.parse_args()
    repeats, batch_seconds = (5, 0.05) if arguments.quick else (21, 0.25)

    seed = fair.new_seed()
    source = fair.FairDice(fair.key_for(seed, "a player's seed"), STORY, 1, 0)

    def fair_roll(expression: dice.Expression) -> None:
        dice.roll(expression, dice.for_one_roll(source))
        source.take_number()

    print(f"# Fair dice against plain dice ({datetime.date.today()}, Python {platform.python_version()})\n")
    print(f"Median of {repeats} batches of about {batch_seconds} s each, sources interleaved.\n")
    print("| Notation | dice | plain (SystemRandom) | fair (HMAC-SHA256) | fair / plain |")
    print("|---|---:|---:|---:|---:|")
    for text in NOTATIONS:
        expression = dice.parse(text)
        contenders: dict[str, Callable[[], object]] = {
            "plain": lambda expression=expression: dice.roll(expression),  # type: ignore[misc]
            "fair": lambda expression=expression: fair_roll(expression),  # type: ignore[misc]
        }
        # Calibrate a batch to about batch_seconds for each contender.
        counts = {}
        for name, roll_once in contenders.items():
            probe = timed_batch(roll_once, 200)
            counts[name] = max(50, int(batch_seconds / probe))
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for repeat in range(repeats):
            order = list(contenders) if repeat % 2 == 0 else list(reversed(contenders))
            for name in order:
                times[name].append(timed_batch(contenders[name], counts[name]))
        plain, fairly = statistics.median(times["plain"]), statistics.median(times["fair"])
        count = sum(term.count for term in expression.dice)
        print(f"| `{text}` | {count} | {plain * 1e6:,.2f} µs | {fairly * 1e6:,.2f} µs | {fairly / plain:.2f}x |")


if __name__ == "__main__":
    main()
