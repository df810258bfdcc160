"""Memory of one long-running Game that sees many stories: does it grow with every story it has ever played?

What it measures
----------------
One `gm.game.Game` in this process, with the offline `gm.rehearsal.RehearsalModel` as game master
and memory keeper (no network, no HTTP), on a SQLite file in a temporary folder, playing the
repository's `worlds/harbour-heist`. It starts 10,000 stories one after another and plays one round
in each (a lockwork roll, then the narration), awaiting `game.settle()` after every round so that
the memory keeper's work is done too. This is what a `gm serve` process that stays up for months
does with its per-story state.

Reported at 0 stories and after every 1,000: the process's resident set size (VmRSS from
/proc/self/status, after `gc.collect()`), the number of built worlds the Game keeps
(`Game._worlds`), and the number of per-story memory-keeper locks (`Game._memory_locks`).

`--unbounded` sets the world cache's cap to a billion, which is how the Game behaved before the
cache was bounded (every story's World kept forever); compare the two runs' RSS slopes. Memory
locks are dropped when their task is done in both runs; before that change they grew by one per
story as well.

How to run
----------
From the project root, with the virtualenv active::

    python bench/memory_bench.py                 # 10,000 stories, several minutes
    python bench/memory_bench.py --unbounded     # the same with the world cache unbounded
    python bench/memory_bench.py --stories 2000 --every 500

The database goes to the system's temporary folder; `TMPDIR=/dev/shm` keeps fsync out of the timing.

The output is Markdown; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from gm import dice
from gm.game import CACHED_WORLDS, Game
from gm.rehearsal import RehearsalModel
from gm.store import Store
from gm.world import load_world

WORLD = Path(__file__).resolve().parent.parent / "worlds" / "harbour-heist"
PLAYER_TEXT = "Odile works the strongroom lock with her picks, slow and careful."
UNBOUNDED = 1_000_000_000


def rss_kib() -> int:
    """This process's resident set size in KiB, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status (this bench needs Linux)")


async def run(stories: int, every: int, cap: int, folder: Path) -> list[tuple[int, int, int, int, float]]:
    """Play one round in each of `stories` new stories; a row (stories, RSS KiB, worlds, locks, seconds) per `every`."""
    world = load_world(WORLD)
    store = Store(f"sqlite:///{folder / 'gm.db'}")
    game = Game(RehearsalModel(world), store, source=dice.seeded_source(2026), cached_worlds=cap)
    rows: list[tuple[int, int, int, int, float]] = []
    started = time.perf_counter()

    def measure(played: int) -> None:
        gc.collect()
        row = (played, rss_kib(), len(game._worlds), len(game._memory_locks), time.perf_counter() - started)
        rows.append(row)
        shown = f"RSS {row[1] / 1024:.1f} MiB, {row[2]:,} worlds, {row[3]:,} locks"
        print(f"  {played:,} stories: {shown}", file=sys.stderr, flush=True)

    # One story played before the first measure, so that imports, the database and lazy caches are warm.
    await game.play(game.begin(world), PLAYER_TEXT)
    await game.settle()
    measure(0)
    for played in range(1, stories + 1):
        story_id = game.begin(world)
        result = await game.play(story_id, PLAYER_TEXT)
        if not result.rolls:
            raise RuntimeError(f"story {played}: the rehearsal rolled nothing: {result.narration!r}")
        await game.settle()
        if played % every == 0:
            measure(played)
    store.engine.dispose()
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--stories", type=int, default=10_000, help="stories to start, one round each")
    parser.add_argument("--every", type=int, default=1_000, help="measure after this many stories")
    parser.add_argument("--unbounded", action="store_true", help="lift the world cache's cap (as before it had one)")
    arguments = parser.parse_args(argv)
    cap = UNBOUNDED if arguments.unbounded else CACHED_WORLDS
    with tempfile.TemporaryDirectory(prefix="gm-memory-bench-") as name:
        rows = asyncio.run(run(arguments.stories, arguments.every, cap, Path(name)))
    print(f"# gm memory benchmark ({'unbounded' if arguments.unbounded else f'world cache of {cap:,}'})\n")
    python = sys.version.split()[0]
    print(f"One Game, RehearsalModel, SQLite; {arguments.stories:,} stories of one round each; Python {python}.\n")
    print("| stories | RSS (MiB) | RSS growth (MiB) | worlds kept | memory locks | seconds |")
    print("|---:|---:|---:|---:|---:|---:|")
    base = rows[0][1]
    for played, rss, worlds, locks, seconds in rows:
        growth = (rss - base) / 1024
        print(f"| {played:,} | {rss / 1024:.1f} | {growth:+.1f} | {worlds:,} | {locks:,} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
