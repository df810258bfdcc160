"""The garbage collector's settings for a long-running gm server process.

CPython's cyclic collector stops every thread while it runs, and a full collection walks every tracked
object of the process. In `gm serve` with 1,000 players (bench/serve_bench.py) a full collection walked
about 500,000 objects and held the event loop for 150-740 ms, every 2 to 7 seconds: that, not the
rounds' own work, was most of a probe request's p99. Two settings, applied once the app is built:

- `gc.freeze()` moves every object alive then (the imported modules, openai's and pydantic's types,
  compiled statements, the worlds) out of the collector's sight for good: they live as long as the
  process anyway, and no collection walks them again.
- A first generation of `YOUNG_OBJECTS` instead of 700: a round allocates several thousand container
  objects, nearly all freed by reference counting within the round, so with 700 the collector ran a few
  times a round and promoted a round's live objects to older generations, where they make the full
  collections bigger and more frequent. Few of a round's objects are in cycles (about 135 a round,
  mostly tenacity's retry state), so the garbage a larger first generation holds back is small.

A library user's process is left as it is: a developer embedding `Game` calls `tune_collector()` at
start-up if the process is long-lived.
"""

from __future__ import annotations

import gc

YOUNG_OBJECTS = 10_000  # the first generation's threshold (CPython's default: 700)
OLDER_RATIO = 10  # collections of a generation before the next one is collected too (CPython's default)


def tune_collector() -> None:
    """Collect what start-up left, freeze what is alive now, and let the young generation grow to `YOUNG_OBJECTS`."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, OLDER_RATIO, OLDER_RATIO)
