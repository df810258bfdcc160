"""How a `gm serve` process runs: its garbage collector, and how often its threads take turns.

The garbage collector. CPython's cyclic collector stops every thread while it runs, and each
collection walks every tracked object of the generations it collects, at about 100 ns an object and
reference on a large heap (cache misses). In `gm serve` under 1,000 players (bench/serve_bench.py) the
rounds in flight are some 50,000 to 90,000 live objects that outlive a young collection and die a few
seconds later by reference counting; CPython's trigger (allocations less deallocations) rarely fires
while their number holds steady, so a young collection, when it came, walked all of them: 25-100 ms,
and a collection of the older generations 60-220 ms, every few seconds. The rounds in flight waited
through each: that was most of a round's p99. What is done once the app is built:

- `gc.freeze()` moves every object alive then (the imported modules, openai's and pydantic's types,
  compiled statements, the worlds) out of the collector's sight for good: they live as long as the
  process anyway, and no collection walks them again.
- Collections come by the clock, not by allocation counts (`gc.disable()`, and a thread of the
  collector's own): the young generation every `YOUNG_SECONDS`, which bounds it to what was allocated
  since and is still alive (a few thousand objects: a pause of a few ms), and every generation every
  `FULL_SECONDS`. What outlives a young collection is then freed by reference counting, never walked
  again before the full collection: a round's objects make no cycle (the tests hold that, e.g.
  tests/web/test_server_process.py), so the garbage the older generations keep meanwhile is small.

Taking turns. A server's database work runs in worker threads (gm.store._workers) while the event loop runs
HTTP and the model calls; they share the GIL. A worker lets the GIL go at every SQLite or PostgreSQL
call, and to take it back while the loop computes it waits until the loop lets go, which a busy loop
does only after the switch interval: 5 ms by default, several times per database call. A worker
then spent 4 to 5 times its CPU time in wall time, and the one SQLite thread became the server's
bottleneck. `SWITCH_SECONDS` (0.5 ms) makes the loop hand over sooner: in bench/serve_bench.py, 100
stories played back to back on SQLite made 1.5 times as many rounds a second (two runs of each,
alternating, on a loaded machine).

A library user's process is left as it is: a developer embedding `Game` in a long-lived server calls
`tune_server_process()` at start-up, once the app is built.
"""

from __future__ import annotations

import gc
import sys
import threading
import time

YOUNG_SECONDS = 0.05  # between collections of the young generation
FULL_SECONDS = 600.0  # between collections of every generation
SWITCH_SECONDS = 0.0005  # how long a thread runs before one waiting for the GIL gets it (CPython's default: 0.005)


class Collector:
    """The garbage collections of a tuned process, by the clock, in a thread of their own."""

    def __init__(self, young_seconds: float = YOUNG_SECONDS, full_seconds: float = FULL_SECONDS) -> None:
        self.young_seconds, self.full_seconds = young_seconds, full_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._collect, name="gm-collector", daemon=True)
        self.young = self.full = 0  # collections made so far

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _collect(self) -> None:
        full_at = time.monotonic() + self.full_seconds
        while not self._stop.wait(self.young_seconds):
            if time.monotonic() >= full_at:
                gc.collect()
                self.full += 1
                full_at = time.monotonic() + self.full_seconds
            else:
                gc.collect(0)
                self.young += 1


_collector: Collector | None = None
_lock = threading.Lock()


def tune_server_process() -> None:
    """Collect what start-up left, freeze what is alive now, collect by the clock from now on (`Collector`),
    and have threads take turns every `SWITCH_SECONDS`. Calling it again changes nothing more."""
    global _collector
    gc.collect()
    gc.freeze()
    gc.disable()
    sys.setswitchinterval(SWITCH_SECONDS)
    with _lock:
        if _collector is None:
            _collector = Collector()
            _collector.start()


def untune_server_process() -> None:
    """Undo `tune_server_process`: CPython's own collector again (for a test that tuned its process)."""
    global _collector
    with _lock:
        if _collector is not None:
            _collector.stop()
            _collector = None
    gc.unfreeze()
    gc.enable()
