"""`gm serve`'s Prometheus metrics (prometheus-client): what the engine tells (gm.engine.observe) and database time.

Every name, with its labels, is listed in docs/operations.md#metrics. `/metrics` is served by
gm.web._health, to `Authorization: Bearer <GM_METRICS_TOKEN>` only.

With `gm serve --workers N` the worker processes count into files in one folder (prometheus-client's
multiprocess mode: the parent makes the folder, hands it down as `PROMETHEUS_MULTIPROC_DIR`, and removes it
as it stops), and whichever worker answers `/metrics` reads them all, so one scrape sees the whole server.
A worker that stops has its gauges' files dropped (`mark_process_dead`); its counters keep counting in the sums.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess as multi

from gm.engine.observe import Observer
from gm.store import Store

T = TypeVar("T")

MODEL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
DATABASE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics(Observer):
    """The server's metrics, counted as the engine tells them (install with `gm.engine.observe.observe`)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder  # prometheus-client's multiprocess folder, when workers share one
        self.registry = registry = CollectorRegistry()
        self.rounds = Counter(
            "gm_rounds", "Rounds ended, by outcome (accepted, paused, failed).", ["outcome"], registry=registry
        )
        self.failures = Counter(
            "gm_round_failures", "Failed rounds, by the error's class.", ["error"], registry=registry
        )
        self.refusals = Counter(
            "gm_refusals", "Refusals sent back to the game master, by kind.", ["kind"], registry=registry
        )
        self.model_seconds = Histogram(
            "gm_model_call_seconds",
            "Model call latency, by kind (game_master, judge, memory).",
            ["kind"],
            buckets=MODEL_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "gm_model_tokens",
            "Model tokens, by kind and direction (prompt, completion).",
            ["kind", "direction"],
            registry=registry,
        )
        self.verdicts = Counter(
            "gm_judge_verdicts",
            "Judge verdicts on rolled outcomes: how each was told, and whether that agrees with the roll.",
            ["told_as", "agrees"],
            registry=registry,
        )
        self.leases = Gauge(
            "gm_leases_held", "Story leases held by rounds running now.", registry=registry, multiprocess_mode="livesum"
        )
        self.database_seconds = Histogram(
            "gm_database_seconds",
            "Time of each piece of database work async code hands to the database threads, its wait included.",
            buckets=DATABASE_BUCKETS,
            registry=registry,
        )

    # gm.engine.observe.Observer

    def round_ended(self, outcome: str, error: BaseException | None = None) -> None:
        self.rounds.labels(outcome).inc()
        if error is not None:
            self.failures.labels(type(error).__name__).inc()

    def refused(self, kind: str) -> None:
        self.refusals.labels(kind).inc()

    def model_called(self, kind: str, seconds: float, prompt_tokens: int, completion_tokens: int) -> None:
        self.model_seconds.labels(kind).observe(seconds)
        self.tokens.labels(kind, "prompt").inc(prompt_tokens)
        self.tokens.labels(kind, "completion").inc(completion_tokens)

    def judged(self, told_as: str, agrees: bool) -> None:
        self.verdicts.labels(told_as, "true" if agrees else "false").inc()

    def lease_taken(self) -> None:
        self.leases.inc()

    def lease_let_go(self) -> None:
        self.leases.dec()

    # The database

    def time_database(self, store: Store) -> None:
        """Observe how long each `store.off_loop` takes: all of a server's database work from async code (a
        round's, the memory keeper's, the API's), from handing it over to its result, so a queue for the
        database threads shows too. Statements' own times are not taken: the store sends the busiest straight
        to the driver (gm.store._batch), past SQLAlchemy's events."""
        handed = store.off_loop
        observe = self.database_seconds.observe

        async def timed(work: Callable[..., T], *arguments: Any, durable: bool = True) -> T:
            started = time.perf_counter()
            try:
                return await handed(work, *arguments, durable=durable)
            finally:
                observe(time.perf_counter() - started)

        store.off_loop = timed  # type: ignore[method-assign]  # this store's, for this process's server only

    # The scrape

    def exposition(self) -> bytes:
        """The text Prometheus reads: this process's metrics, or every worker's in multiprocess mode."""
        if self.folder is None:
            return generate_latest(self.registry)
        gathered = CollectorRegistry()
        multi.MultiProcessCollector(gathered, path=str(self.folder))  # type: ignore[no-untyped-call]
        return generate_latest(gathered)

    def process_ended(self, pid: int) -> None:
        """Drop a stopped worker's gauges from the multiprocess folder (its counters stay in the sums)."""
        if self.folder is not None:
            multi.mark_process_dead(pid, str(self.folder))  # type: ignore[no-untyped-call]
