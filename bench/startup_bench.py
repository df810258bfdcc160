"""Benchmark: how long the quick commands take to answer, beside `python -c pass` on the same machine.

What it measures
----------------
Five commands a player or a world author runs from the shell, each as a new process through the
installed `gm` console script, exactly as typed:

    gm --version        gm --help        gm roll 1d20        gm odds 2d6        gm check worlds/harbour-heist

and, interleaved with them, `python -c pass` run by the same virtual environment's interpreter: the
floor no Python command can go under (the interpreter starting, `site`, the editable install's
finder). Each round runs every command once (and the floor once before each), in a shuffled order,
so a machine that changes speed during the run slows every column alike. For each command it
reports the median wall time, the median CPU time (user + system of the child process, from
`os.wait4`), and the ratio of each to the floor's median. The goal (issue 36) is a wall ratio of at
most 4.

Every process runs with Python's bytecode caches on, written to a temporary folder of the bench's own
(`PYTHONPYCACHEPREFIX`; `PYTHONDONTWRITEBYTECODE` is dropped), as a user's Python caches them after
the first run: the first round, which fills the caches, is not counted.

`--baseline DIR` runs the same commands with `DIR/.venv/bin/gm` (and `DIR/.venv/bin/python -c pass`
as its floor) in the same rounds, with `DIR` as the working folder: each cell then reads "before -> after".

How to run
----------
From the project root, with the virtualenv active::

    python bench/startup_bench.py                              # 21 rounds
    python bench/startup_bench.py --rounds 31 --baseline /work/base

The output is a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS: list[tuple[str, list[str]]] = [
    ("gm --version", ["--version"]),
    ("gm --help", ["--help"]),
    ("gm roll 1d20", ["roll", "1d20"]),
    ("gm odds 2d6", ["odds", "2d6"]),
    ("gm check worlds/harbour-heist", ["check", "worlds/harbour-heist"]),
]
FLOOR = "python -c pass"


@dataclass
class Samples:
    """The wall and CPU times of one command in one tree, in seconds."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def run_once(command: list[str], folder: Path, environment: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command` in `folder`; a failing command stops the bench."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=folder, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    assert process.stderr is not None
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} in {folder} exited {process.returncode}: {error.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(trees: dict[str, Path], rounds: int, seed: int) -> dict[str, dict[str, Samples]]:
    """Samples per tree and command (the floor included), the runs of all trees interleaved."""
    samples = {name: {label: Samples() for label in [FLOOR, *(label for label, _ in COMMANDS)]} for name in trees}
    jobs = [(name, label, arguments) for name in trees for label, arguments in COMMANDS]
    shuffle = random.Random(seed)
    caches = tempfile.mkdtemp(prefix="gm-startup-pycache-")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = caches  # caches as a user's Python keeps them, outside both trees
    for index in range(1 + rounds):  # the first round warms the disk cache and is not counted
        shuffle.shuffle(jobs)
        for name, label, arguments in jobs:
            venv = trees[name] / ".venv" / "bin"
            floor = [str(venv / "python"), "-c", "pass"]
            for measured, command in ((FLOOR, floor), (label, [str(venv / "gm"), *arguments])):
                wall, cpu = run_once(command, trees[name], environment)
                if index > 0:
                    samples[name][measured].wall.append(wall)
                    samples[name][measured].cpu.append(cpu)
    shutil.rmtree(caches, ignore_errors=True)
    return samples


def table(samples: dict[str, dict[str, Samples]]) -> str:
    """One row per command: median wall and CPU in ms, and their ratios to the same tree's floor; with a
    baseline, each cell reads "before -> after"."""
    lines = ["| command | wall | CPU | wall / floor | CPU / floor |", "|---|---:|---:|---:|---:|"]
    for label in [FLOOR, *(label for label, _ in COMMANDS)]:
        walls, cpus, wall_ratios, cpu_ratios = [], [], [], []
        for tree in samples.values():
            floor, this = tree[FLOOR], tree[label]
            wall, cpu = statistics.median(this.wall), statistics.median(this.cpu)
            walls.append(f"{wall * 1000:.0f}")
            cpus.append(f"{cpu * 1000:.0f}")
            wall_ratios.append(f"{wall / statistics.median(floor.wall):.1f}x")
            cpu_ratios.append(f"{cpu / statistics.median(floor.cpu):.1f}x")
        cells = [
            " -> ".join(walls) + " ms",
            " -> ".join(cpus) + " ms",
            " -> ".join(wall_ratios),
            " -> ".join(cpu_ratios),
        ]
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=21, help="runs of each command (default 21)")
    parser.add_argument("--baseline", type=Path, help="a tree with its own .venv whose gm gives the 'before' column")
    parser.add_argument("--seed", type=int, default=36, help="the seed of the shuffled order")
    arguments = parser.parse_args()
    trees = {"after": ROOT}
    if arguments.baseline is not None:
        if not (arguments.baseline / ".venv" / "bin" / "gm").is_file():
            parser.error(f"--baseline {arguments.baseline} has no .venv/bin/gm")
        trees = {"before": arguments.baseline.resolve(), **trees}
    samples = measure(trees, arguments.rounds, arguments.seed)
    print(
        f"{arguments.rounds} rounds, medians; Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end; {sys.platform}"
    )
    print()
    print(table(samples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
