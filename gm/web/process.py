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

Memory after a load. The C allocator (glibc's malloc) keeps the memory a load's objects freed, for
the next load, and gives little of it back: at 1,000 stories a server grew from about 130 to 210 MiB
and stayed there once they ended (bench/serve_bench.py's RSS columns). So the collector's thread also
watches the process: once it has been quiet for `QUIET_SECONDS` (its CPU time under `QUIET_SHARE` of
a core meanwhile) after it grew more than `TRIM_GROWTH_BYTES` since its last trim, it asks glibc for
it back (`malloc_trim(0)`, through ctypes; elsewhere nothing is done). A trim under load would only
give back what the next round takes again, so none is made while the process works.

A library user's process is left as it is: a developer embedding `Game` in a long-lived server calls
`tune_server_process()` at start-up, once the app is built.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys
import threading
import time
from collections.abc import Callable

YOUNG_SECONDS = 0.05  # between collections of the young generation
FULL_SECONDS = 600.0  # between collections of every generation
SWITCH_SECONDS = 0.0005  # how long a thread runs before one waiting for the GIL gets it (CPython's default: 0.005)
QUIET_SECONDS = 2.0  # quiet this long after a load, the process gives its allocator's free memory back
QUIET_SHARE = 0.1  # quiet: CPU time under this share of one core
TRIM_GROWTH_BYTES = 16 << 20  # grown this much since the last trim (resident memory)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def resident_bytes() -> int:
    """The process's resident memory now (0 where /proc cannot tell)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class Trimmer:
    """Gives the allocator's free memory back once the process is quiet after a load (see the module)."""

    def __init__(self, quiet_seconds: float = QUIET_SECONDS, growth: int = TRIM_GROWTH_BYTES) -> None:
        self.quiet_seconds, self.growth = quiet_seconds, growth
        self.trim = _malloc_trim()
        self.trims = 0
        self._low = resident_bytes()  # resident memory after the last trim (or at the start)
        self._since, self._cpu = time.monotonic(), time.process_time()

    def check(self) -> bool:
        """Trim if the process has been quiet `quiet_seconds` and grew meanwhile; whether it trimmed."""
        now = time.monotonic()
        if self.trim is None or now - self._since < self.quiet_seconds:
            return False
        cpu = time.process_time()
        busy = cpu - self._cpu > QUIET_SHARE * (now - self._since)
        self._since, self._cpu = now, cpu
        if busy or resident_bytes() < self._low + self.growth:
            return False
        gc.collect()  # what only the collector frees first (a full collection: the process is quiet)
        self.trim(0)
        self.trims += 1
        self._low = resident_bytes()
        return True


class Collector:
    """The garbage collections of a tuned process, by the clock, in a thread of their own."""

    def __init__(self, young_seconds: float = YOUNG_SECONDS, full_seconds: float = FULL_SECONDS) -> None:
        self.young_seconds, self.full_seconds = young_seconds, full_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._collect, name="gm-collector", daemon=True)
        self.young = self.full = 0  # collections made so far
        self.trimmer = Trimmer()

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
            self.trimmer.check()


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
