"""Benchmark: how long `gm check` takes on a world whose dice.json has 40 checks using every feature.

What it measures
----------------
A world is written to a temporary folder: four characters with number variables, and a dice.json of
40 checks (the most allowed) cycling through five shapes, so every feature of dice.json is used at
least eight times: `over` with advantage and disadvantage dice and natural steps (1d20); `under` on
d% with naturals that send the roll to named bands; `opposed` with advantage and a natural sending it
to a band (1d20 against 1d20, so 2d20kh1-1d20 with the edge); `successes` (5d10, hit 7) with
advantage dice and a natural step; and `absolute` 4d6kh3 with a natural on a named die and
open-ended bands. Every check has a modifier, so the world check tries each character's modifier too.

Timed, each `--repeats` times, the median reported (with the fastest and slowest):

- `gm check WORLD` as a user runs it: a new process (`python -m gm.cli check WORLD`), so Python's
  start-up and imports are included;
- `gm.world.loading.check_world(WORLD)` in this process, after one warm-up call: the checking itself.

How to run
----------
From the project root, with the virtualenv active::

    python bench/check_bench.py               # 7 runs of each
    python bench/check_bench.py --repeats 3

The output is Markdown, ready to paste into docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gm.world.loading import check_world

CHARACTERS = [
    {"name": "Ada", "role": "player", "variables": {"skill": 3, "wits": 60}},
    {"name": "Bram", "role": "npc", "variables": {"skill": 1, "wits": 45}},
    {"name": "Cass", "role": "npc", "variables": {"skill": -1, "wits": 30}},
    {"name": "Dov", "role": "npc", "variables": {"skill": 5, "wits": 75}},
]
LADDER = [
    {"label": "Critical failure", "max": -10, "result": "failed", "critical": True},
    {"label": "Failure", "min": -9, "max": -1, "result": "failed"},
    {"label": "Partial success", "min": 0, "max": 3, "result": "partial"},
    {"label": "Success", "min": 4, "max": 8, "result": "succeeded"},
    {"label": "Critical success", "min": 9, "result": "succeeded", "critical": True},
]


def shape(number: int) -> dict[str, Any]:
    """Check `number`, in one of five shapes that together use every feature of dice.json."""
    base = {"key": f"check_{number}", "name": f"Check {number}", "use": f"Benchmark check {number}."}
    kind = number % 5
    if kind == 0:
        return {
            **base,
            "dice": "1d20",
            "advantage": "2d20kh1",
            "disadvantage": "2d20kl1",
            "compare": "over",
            "modifier": "skill",
            "naturals": [{"face": 20, "step": 1}, {"face": 1, "step": -1}],
            "bands": LADDER,
        }
    if kind == 1:
        return {
            **base,
            "dice": "d%",
            "compare": "under",
            "modifier": "skill",
            "naturals": [
                {"face": 1, "sides": 100, "band": "Critical success"},
                {"face": 100, "sides": 100, "band": "Critical failure"},
            ],
            "bands": [
                {"label": "Critical failure", "max": -46, "result": "failed", "critical": True},
                {"label": "Failure", "min": -45, "max": -1, "result": "failed"},
                {"label": "Success", "min": 0, "max": 44, "result": "succeeded"},
                {"label": "Critical success", "min": 45, "result": "succeeded", "critical": True},
            ],
        }
    if kind == 2:
        return {
            **base,
            "dice": "1d20",
            "advantage": "2d20kh1",
            "compare": "opposed",
            "modifier": "skill",
            "naturals": [{"face": 20, "band": "Critical success"}],
            "bands": LADDER,
        }
    if kind == 3:
        return {
            **base,
            "dice": "5d10",
            "advantage": "6d10kh5",
            "reading": "successes",
            "hit": 7,
            "modifier": "skill",
            "naturals": [{"face": 10, "step": 1}],
            "bands": [
                {"label": "None", "max": 0, "result": "failed"},
                {"label": "Some", "min": 1, "max": 2, "result": "partial"},
                {"label": "Many", "min": 3, "result": "succeeded"},
            ],
        }
    return {
        **base,
        "dice": "4d6kh3",
        "modifier": "skill",
        "naturals": [{"face": 6, "sides": 6, "step": 1}],
        "bands": [
            {"label": "Low", "max": 9, "result": "failed"},
            {"label": "Middle", "min": 10, "max": 13, "result": "partial"},
            {"label": "High", "min": 14, "result": "succeeded"},
        ],
    }


def write_world(folder: Path) -> Path:
    folder.mkdir(parents=True)
    world = {"title": "Bench", "premise": "A world for timing gm check.", "characters": CHARACTERS}
    (folder / "world.json").write_text(json.dumps(world, indent=2))
    (folder / "dice.json").write_text(json.dumps({"checks": [shape(n) for n in range(40)]}, indent=2))
    return folder


def timed(run: Any, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        world = write_world(Path(temporary) / "bench-world")
        command = [sys.executable, "-m", "gm.cli", "check", str(world)]
        answer = subprocess.run(command, capture_output=True, text=True, check=False)
        if answer.returncode != 0:
            print(answer.stdout, answer.stderr, file=sys.stderr)
            return 1
        problems = check_world(world)  # warm-up, and the verdict to report
        process = timed(lambda: subprocess.run(command, capture_output=True, check=True), arguments.repeats)
        inside = timed(lambda: check_world(world), arguments.repeats)
    print(f"# gm check on 40 checks using every feature ({platform.python_version()}, {platform.machine()})\n")
    print(f"Verdict: {answer.stdout.splitlines()[0]}")
    print(f"({len(problems)} problems)\n")
    print("| what | median | fastest | slowest | runs |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, times in (("`gm check WORLD` (new process)", process), ("`check_world` in process", inside)):
        print(
            f"| {name} | {statistics.median(times) * 1000:.0f} ms | {min(times) * 1000:.0f} ms | "
            f"{max(times) * 1000:.0f} ms | {len(times)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
