"""Benchmark of the tool calls' own work: a rolled round's roll_check and narrate, and a roll's public card.

What it measures
----------------
The CPU (`time.process_time`) of the work `gm.engine.tools.running.RoundTools` does on the database thread for a
rolled round, without the database: `roll_check` (its arguments read and validated, the check
rolled and read, the roll's record built) and `narrate` (its arguments, the referee), with a
`write_roll` that only numbers the record, so what is measured is the tools' work, not the
store's. And `RollPublic.from_stored` of that roll with its world (names, chances), which a rolled
round builds three times (the roll's hash, its card in the event stream, the round's result).
Medians over repetitions of a few thousand calls each.

Side by side: with `--baseline TREE`, each repetition runs this file in a fresh process under
TREE's virtualenv (TREE/.venv/bin/python, importing TREE's gm) and under this tree's, alternating;
the ratio is this / baseline. Only API present in both is used (RoundTools, RollPublic).

How to run
----------
From the project root, with the virtualenv active::

    python bench/tools_bench.py                          # this tree
    python bench/tools_bench.py --baseline /work/base    # the baseline tree and this one, alternated

The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
NARRATION = ("Rain needles across the harbour office, and the gutters run black with tar and old salt. " * 8).strip()
CHECK = json.dumps({"check": "attempt", "character": "Mara", "target": 12, "reason": "a risky attempt"})


def _measure(calls: int) -> dict[str, float]:
    """The medians of one process (this tree's gm or a baseline's, whichever is imported)."""
    try:
        sys.path.insert(0, str(Path.cwd() / "tests" / "support"))
        from worlds import write_world
    except ImportError:  # a tree from before tests/support/ (a baseline): the helpers were in tests/conftest.py
        sys.path.insert(0, str(Path.cwd() / "tests"))
        from conftest import write_world

    from gm import dice

    try:  # this tree's paths; a tree from before the package tree has its modules flat in gm/
        from gm.engine.tools.running import RoundTools
        from gm.transcript.shapes import RollPublic
        from gm.world.loading import load_world
    except ImportError:
        from gm.public import RollPublic
        from gm.tools import RoundTools
        from gm.world import load_world

    world = load_world(write_world(Path(tempfile.mkdtemp(prefix="gm-tools-bench-")) / "harbor"))
    numbers = iter(range(1, 10**9))

    def write_roll(record: Any) -> Any:
        record.id = next(numbers)
        return record

    class Ledger:  # a round's rolls, numbered and kept in memory: the tools' own work is what is measured
        write = staticmethod(write_roll)

        def find(self, roll_id: int) -> Any:
            return None

        def reveal(self, roll_id: int) -> None:
            pass

    def new_tools() -> Any:
        if "ledger" in RoundTools.__dataclass_fields__:  # the tools bound to a ledger
            return RoundTools(world, Ledger(), "story", "attempt", 1, source=dice.seeded_source(7))
        return RoundTools(world, "story", "attempt", 1, write_roll, source=dice.seeded_source(7))  # a tree before it

    def round_of_tools() -> Any:
        tools = new_tools()
        rolled = tools.call("roll_check", CHECK).content
        tools.next_message()
        outcome = {"character": "Mara", "result": rolled["result"], "roll": rolled["roll"]}
        narrated = tools.call("narrate", json.dumps({"narration": NARRATION, "outcomes": [outcome]}))
        if getattr(narrated, "proposed", None) is not None:  # narrate proposes; the referee rules on it
            assert not tools.refusals(narrated.proposed)
        return tools.rolls[0]

    roll = round_of_tools()
    measures: dict[str, Callable[[], Any]] = {
        "roll_check + narrate": round_of_tools,
        "RollPublic.from_stored": lambda: RollPublic.from_stored(roll, world),
    }
    figures = {}
    for name, work in measures.items():
        for _ in range(calls // 10):  # warm up: caches, imports
            work()
        runs = []
        for _ in range(5):
            started = time.process_time()
            for _ in range(calls):
                work()
            runs.append((time.process_time() - started) * 1000 / calls)
        figures[name] = statistics.median(runs)
    return figures


def _child(python: str, tree: Path, calls: int) -> dict[str, float]:
    command = [python, str(HERE), "--measure", "--calls", str(calls)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the measurement failed in {tree}:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--baseline", type=Path, help="a tree (with its .venv) to measure side by side")
    parser.add_argument("--reps", type=int, default=5, help="fresh processes per variant (default 5)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed run (default 2000)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.measure:
        print(json.dumps(_measure(arguments.calls)))
        return
    variants = {"this": (sys.executable, HERE.parent.parent)}
    if arguments.baseline:
        base = arguments.baseline.resolve()
        variants["baseline"] = (str(base / ".venv" / "bin" / "python"), base)
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    for rep in range(arguments.reps):
        for name in list(variants) if rep % 2 == 0 else list(reversed(variants)):
            python, tree = variants[name]
            figures[name].append(_child(python, tree, arguments.calls))
        print(f"  repetition {rep + 1}/{arguments.reps} done", file=sys.stderr, flush=True)
    print("# gm tool calls benchmark\n")
    print(
        "| measure | "
        + " | ".join(f"{name} CPU ms" for name in variants)
        + (" | ratio |" if len(variants) > 1 else " |")
    )
    print("|---|" + "---:|" * (len(variants) + (len(variants) > 1)))
    for measure in figures["this"][0]:
        medians = {name: statistics.median(run[measure] for run in runs) for name, runs in figures.items()}
        cells = [f"{medians[name]:.4f}" for name in variants]
        if "baseline" in medians:
            cells.append(f"{medians['this'] / medians['baseline']:.2f}")
        print(f"| {measure} | " + " | ".join(cells) + " |")
    print(
        f"\nMedians over {arguments.reps} processes per variant (each the median of 5 runs of {arguments.calls} "
        "calls), variants alternating; CPU = `time.process_time` per call, the database left out."
    )


if __name__ == "__main__":
    main()
