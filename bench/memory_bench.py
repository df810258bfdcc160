"""Memory of one long-running Game that sees many stories: does it grow with every story it has ever played?

What it measures
----------------
One `gm.engine.game.Game` in a process of its own, on a SQLite file in a temporary folder, starts 10,000
stories one after another and plays one round in each (a lockwork roll, then the narration),
awaiting `game.settle()` after every round so that the memory keeper's work is done too. This is
what a `gm serve` process that stays up for months does with its per-story state.

The game master and memory keeper are, with `--model rehearsal` (the default, a few minutes), the
offline `gm.rehearsal.model.RehearsalModel` in process, playing the repository's `worlds/harbour-heist`;
with `--model http`, the real `ModelClient` (the openai client) over loopback HTTP against
bench/fake_server.py (`round` script) in its own process, playing the tests' harbour world, with the
judge on: every cache of the model client's path is exercised too (slower: about 40 ms a story).

Reported at 0 stories and after every 1,000: the process's resident set size (VmRSS from
/proc/self/status, after `gc.collect()`), and every cache the process holds that is bounded by gm:
each `gm._lru.LRU` (the Game's built worlds, `CACHED_WORLDS`, and any other) and each
`functools.lru_cache` of a gm module, found by looking, not by name, so a cache added later is
listed too: its entries now and its cap. The Game's per-story memory-keeper locks are counted too
(they are kept only while a task holds or waits for one).

`--unbounded` sets the world cache's cap to a billion, which is how the Game behaved before the
cache was bounded (every story's World kept forever); compare the two runs' RSS slopes.
`--baseline /work/base` runs the same with that tree's Python after this one's (memory is not
noisy as time is, so the two run one after the other), using only the API both trees have.

How to run
----------
From the project root, with the virtualenv active::

    python bench/memory_bench.py                          # 10,000 stories, a few minutes
    python bench/memory_bench.py --baseline /work/base    # and the same before issue 15
    python bench/memory_bench.py --model http --stories 3000 --every 500
    python bench/memory_bench.py --unbounded

The database goes to /dev/shm where there is one (memory is measured here, not time; fsync would
only stretch the run), else to the system's temporary folder; setting TMPDIR chooses that folder.
The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORLD = ROOT / "worlds" / "harbour-heist"
PLAYER_TEXT = "Odile works the strongroom lock with her picks, slow and careful."
HTTP_TEXT = "Round 1: I try to pick the lock of the harbour office. It is risky, so let the dice decide."
UNBOUNDED = 1_000_000_000
# Memory is measured, not time: the database goes to memory (/dev/shm) where there is one, so fsync does not
# stretch the run (10,000 stories in a few minutes rather than twenty). TMPDIR chooses another place.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() and "TMPDIR" not in os.environ else None


def rss_kib() -> int:
    """This process's resident set size in KiB, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status (this bench needs Linux)")


def caches() -> dict[str, tuple[int, int | None]]:
    """Every gm._lru.LRU and every functools.lru_cache of a gm module in this process: entries and cap."""
    from gm._lru import LRU

    found: dict[str, tuple[int, int | None]] = {}
    for index, cache in enumerate(o for o in gc.get_objects() if isinstance(o, LRU)):
        found[f"LRU #{index + 1}"] = (len(cache), cache.size)
    for name, module in list(sys.modules.items()):
        if not name.startswith("gm"):
            continue
        for attribute, value in list(vars(module).items()):
            info = getattr(value, "cache_info", None)
            if callable(info) and isinstance(value, functools._lru_cache_wrapper):
                hits = info()
                found[f"{name}.{attribute}"] = (hits.currsize, hits.maxsize)
    return found


async def run(stories: int, every: int, cap: int, folder: Path, model_kind: str, base_url: str) -> None:
    """Play one round in each of `stories` new stories; print a JSON row per `every` stories."""
    from gm.engine.game import Game
    from gm.store import Store
    from gm.world.loading import load_world

    store = Store(f"sqlite:///{folder / 'gm.db'}")
    closing: Any = None
    if model_kind == "rehearsal":
        from gm.rehearsal.model import RehearsalModel

        world = load_world(WORLD)
        game = Game(RehearsalModel(world), store, cached_worlds=cap)
        text = PLAYER_TEXT
    else:
        from gm.models.client import ModelClient, ModelSettings

        sys.path.insert(0, str(ROOT / "tests" / "support"))
        from worlds import write_world

        world = load_world(write_world(folder / "harbor"))
        closing = ModelClient(ModelSettings(base_url, "bench-key", "fake-model"))
        game = Game(closing, store, cached_worlds=cap)
        text = HTTP_TEXT
    started = time.perf_counter()

    def measure(played: int) -> None:
        gc.collect()
        locks = getattr(game, "_memory_locks", ())
        row = {
            "stories": played,
            "rss": rss_kib(),
            "locks": len(locks) if hasattr(locks, "__len__") else -1,
            "caches": caches(),
            "seconds": time.perf_counter() - started,
        }
        print(json.dumps(row), flush=True)

    # One story played before the first measure, so that imports, the database and lazy caches are warm.
    await game.play(game.begin(world), text)
    await game.settle()
    measure(0)
    for played in range(1, stories + 1):
        result = await game.play(game.begin(world), text)
        if not getattr(result, "rolls", None):
            raise RuntimeError(f"story {played}: nothing was rolled: {getattr(result, 'narration', result)!r}")
        await game.settle()
        if played % every == 0:
            measure(played)
    if closing is not None:
        await closing.aclose()
    store.engine.dispose()


def variant(python: str, arguments: argparse.Namespace, base_url: str) -> list[dict[str, Any]]:
    """Run the measuring child under `python`; its rows."""
    cap = UNBOUNDED if arguments.unbounded else 0
    command = [python, str(HERE / "memory_bench.py"), "--child", str(arguments.stories), str(arguments.every)]
    command += [str(cap), arguments.model, base_url]
    rows = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=str(ROOT)) as process:
        assert process.stdout is not None
        for line in process.stdout:
            row = json.loads(line)
            rows.append(row)
            total = sum(size for size, _ in row["caches"].values())
            shown = f"{row['stories']:,} stories, RSS {row['rss'] / 1024:.1f} MiB, {total:,} cached"
            print(f"  {python}: {shown}", file=sys.stderr, flush=True)
    if process.returncode:
        raise RuntimeError(f"the bench under {python} failed (exit code {process.returncode})")
    return rows


def report(name: str, rows: list[dict[str, Any]]) -> None:
    print(f"## {name}\n")
    print("| stories | RSS (MiB) | RSS growth (MiB) | entries in gm's caches | memory locks | seconds |")
    print("|---:|---:|---:|---:|---:|---:|")
    base = rows[0]["rss"]
    for row in rows:
        cached = sum(size for size, _ in row["caches"].values())
        growth = (row["rss"] - base) / 1024
        print(
            f"| {row['stories']:,} | {row['rss'] / 1024:.1f} | {growth:+.1f} | {cached:,} | {row['locks']:,} "
            f"| {row['seconds']:.0f} |"
        )
    print("\nThe caches at the end (entries / cap):\n")
    for cache, (size, cap) in sorted(rows[-1]["caches"].items()):
        print(f"- {cache}: {size:,} / {'unbounded' if cap is None else f'{cap:,}'}")
    print()


def main(argv: Sequence[str] | None = None) -> None:
    if sys.argv[1:2] == ["--child"]:
        stories, every, cap, model_kind, base_url = sys.argv[2:7]
        if int(cap) == 0:
            from gm.engine.game import CACHED_WORLDS

            cap = str(CACHED_WORLDS)
        with tempfile.TemporaryDirectory(prefix="gm-memory-bench-", dir=SCRATCH) as name:
            asyncio.run(run(int(stories), int(every), int(cap), Path(name), model_kind, base_url))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--stories", type=int, default=10_000, help="stories to start, one round each")
    parser.add_argument("--every", type=int, default=1_000, help="measure after this many stories")
    parser.add_argument("--unbounded", action="store_true", help="lift the world cache's cap (as before it had one)")
    parser.add_argument("--model", choices=("rehearsal", "http"), default="rehearsal", help="see the docstring")
    parser.add_argument("--baseline", type=Path, help="also run under this tree's .venv/bin/python")
    arguments = parser.parse_args(argv)
    if arguments.stories < 1 or not 1 <= arguments.every <= arguments.stories:
        parser.error("--stories must be at least 1, and --every from 1 to --stories")
    pythons = {"after": sys.executable}
    if arguments.baseline is not None:
        pythons["before"] = str(arguments.baseline / ".venv" / "bin" / "python")
    results = {}
    fake: subprocess.Popen[str] | None = None
    base_url = "-"
    try:
        if arguments.model == "http":
            fake = subprocess.Popen(
                [sys.executable, str(HERE / "fake_server.py"), "--script", "round"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert fake.stdout is not None
            base_url = f"http://127.0.0.1:{fake.stdout.readline().split()[1]}/v1"
        for name, python in pythons.items():
            results[name] = variant(python, arguments, base_url)
    finally:
        if fake is not None and fake.stdin is not None:
            fake.stdin.close()
            fake.wait(timeout=30)
    cap = "unbounded" if arguments.unbounded else "the default caps"
    print(f"# gm memory benchmark ({cap}, {arguments.model})\n")
    print(f"One Game, SQLite; {arguments.stories:,} stories of one round each; Python {sys.version.split()[0]}.\n")
    for name, rows in results.items():
        report(f"{name} (`{pythons[name]}`)", rows)


if __name__ == "__main__":
    main()
