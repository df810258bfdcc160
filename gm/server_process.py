"""How a `gm serve` process runs: its garbage collector, and how often its threads take turns.

The garbage collector. CPython's cyclic collector stops every thread while it runs, and a full
collection walks every tracked object of the process. In `gm serve` with 1,000 players
(bench/serve_bench.py) a full collection walked about 500,000 objects and held the event loop for
150-740 ms, every 2 to 7 seconds: that, not the rounds' own work, was most of a probe request's p99.
Two settings, applied once the app is built:

- `gc.freeze()` moves every object alive then (the imported modules, openai's and pydantic's types,
  compiled statements, the worlds) out of the collector's sight for good: they live as long as the
  process anyway, and no collection walks them again.
- A first generation of `YOUNG_OBJECTS` instead of 700: a round allocates several thousand container
  objects, nearly all freed by reference counting within the round, so with 700 the collector ran a few
  times a round and promoted a round's live objects to older generations, where they make the full
  collections bigger and more frequent. Few of a round's objects are in cycles (about 135 a round,
  mostly tenacity's retry state), so the garbage a larger first generation holds back is small.

Taking turns. A server's database work runs in worker threads (gm.workers) while the event loop runs
HTTP and the model calls; they share the GIL. A worker lets the GIL go at every SQLite or PostgreSQL
call, and to take it back while the loop computes it waits until the loop lets go, which a busy loop
does only after the switch interval: 5 ms by default, several times per database call. A worker
then spent 4 to 5 times its CPU time in wall time, and the one SQLite thread became the server's
bottleneck. `SWITCH_SECONDS` (0.5 ms) makes the loop hand over sooner: in bench/serve_bench.py, 100
stories played back to back on SQLite made 1.5 times as many rounds a second (two runs of each,
alternating, on a loaded machine; the README's Performance section has the figures on a quiet one).

A library user's process is left as it is: a developer embedding `Game` in a long-lived server calls
`tune_server_process()` at start-up, once the app is built.
"""

from __future__ import annotations

import gc
import sys

YOUNG_OBJECTS = 10_000  # the first generation's threshold (CPython's default: 700)
OLDER_RATIO = 10  # collections of a generation before the next one is collected too (CPython's default)
SWITCH_SECONDS = 0.0005  # how long a thread runs before one waiting for the GIL gets it (CPython's default: 0.005)


def tune_server_process() -> None:
    """Collect what start-up left, freeze what is alive now, let the young generation grow to `YOUNG_OBJECTS`,
    and have threads take turns every `SWITCH_SECONDS`."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, OLDER_RATIO, OLDER_RATIO)
    sys.setswitchinterval(SWITCH_SECONDS)
